//! A small client of the EC2 Query API, signed with AWS Signature Version 4 (HMAC-SHA256
//! from ring, already in the build for rustls): the calls `aws:ec2` makes, behind the
//! [`Ec2Api`] trait. Chosen over the AWS SDK for Rust, whose EC2 crate alone is tens of
//! megabytes of generated code and minutes of build for five calls.
//!
//! Credentials come from the environment (`AWS_ACCESS_KEY_ID`, `AWS_SECRET_ACCESS_KEY`,
//! `AWS_SESSION_TOKEN`) or the shared credentials file (`AWS_SHARED_CREDENTIALS_FILE`, else
//! `~/.aws/credentials`, profile `AWS_PROFILE` or `default`), read at each use; the secret
//! key only ever enters the signature.

use std::time::{Duration, SystemTime, UNIX_EPOCH};

use async_trait::async_trait;
use bytes::Bytes;
use hyper::Method;
use hyper::header::{AUTHORIZATION, CONTENT_TYPE, HeaderName};
use sha2::{Digest, Sha256};

use crate::util::http_client::{self, Url, percent_encode};

const API_VERSION: &str = "2016-11-15";
const REQUEST_TIMEOUT: Duration = Duration::from_secs(60);

/// An instance as DescribeInstances reports it.
#[derive(Clone, Debug, PartialEq, Eq, Default)]
pub struct Instance {
    pub id: String,
    /// `pending`, `running`, `stopping`, `stopped`, `shutting-down`, `terminated`.
    pub state: String,
    pub instance_type: String,
    pub image: String,
    pub private_ip: String,
    pub public_ip: String,
}

/// What `aws:ec2` asks of EC2.
#[async_trait]
pub trait Ec2Api: Send + Sync {
    /// The instances whose `Name` tag is `name`, terminated ones included.
    async fn by_name(&self, name: &str) -> Result<Vec<Instance>, String>;
    async fn by_id(&self, id: &str) -> Result<Option<Instance>, String>;
    /// Runs one instance tagged `Name=name`; its id.
    async fn run(&self, name: &str, image: &str, instance_type: &str, user_data: &str) -> Result<String, String>;
    /// `StartInstances`, `StopInstances` or `TerminateInstances` of one instance.
    async fn act(&self, action: &str, id: &str) -> Result<(), String>;
}

/// An access key.
#[derive(Clone)]
pub struct Credentials {
    pub access_key: String,
    pub secret_key: String,
    pub session_token: Option<String>,
}

impl Credentials {
    /// From `file` when given, else the environment, else the shared credentials file.
    pub fn find(file: Option<&std::path::Path>) -> Result<Credentials, String> {
        let env = |k: &str| std::env::var(k).ok().filter(|v| !v.is_empty());
        if file.is_none()
            && let (Some(access_key), Some(secret_key)) = (env("AWS_ACCESS_KEY_ID"), env("AWS_SECRET_ACCESS_KEY"))
        {
            return Ok(Credentials { access_key, secret_key, session_token: env("AWS_SESSION_TOKEN") });
        }
        let file = file
            .map(|f| f.display().to_string())
            .or_else(|| env("AWS_SHARED_CREDENTIALS_FILE"))
            .or_else(|| env("HOME").map(|h| format!("{h}/.aws/credentials")))
            .ok_or(
                "no AWS credentials: set AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY, or write ~/.aws/credentials",
            )?;
        let profile = env("AWS_PROFILE").unwrap_or_else(|| "default".into());
        let text = std::fs::read_to_string(&file)
            .map_err(|e| format!("no AWS credentials in the environment, and {file}: {e}"))?;
        let mut section = String::new();
        let (mut access_key, mut secret_key, mut session_token) = (None, None, None);
        for line in text.lines().map(str::trim) {
            if let Some(name) = line.strip_prefix('[').and_then(|l| l.strip_suffix(']')) {
                section = name.trim().to_string();
            } else if section == profile
                && let Some((k, v)) = line.split_once('=')
            {
                let v = Some(v.trim().to_string());
                match k.trim() {
                    "aws_access_key_id" => access_key = v,
                    "aws_secret_access_key" => secret_key = v,
                    "aws_session_token" => session_token = v,
                    _ => {}
                }
            }
        }
        match (access_key, secret_key) {
            (Some(access_key), Some(secret_key)) => Ok(Credentials { access_key, secret_key, session_token }),
            _ => Err(format!("{file} has no access key for profile `{profile}`")),
        }
    }
}

/// EC2 in one region.
pub struct Ec2 {
    endpoint: Url,
    region: String,
    /// The credentials file, when not the environment's choice.
    credentials: Option<std::path::PathBuf>,
}

impl Ec2 {
    /// EC2 of `region`, at `endpoint` when given (`AWS_ENDPOINT_URL`), else AWS's own,
    /// signing with the key of `credentials` (a shared credentials file) when given.
    pub fn new(region: &str, endpoint: Option<&str>, credentials: Option<std::path::PathBuf>) -> Result<Ec2, String> {
        let url = match endpoint {
            Some(e) => e.to_string(),
            None if region.starts_with("cn-") => format!("https://ec2.{region}.amazonaws.com.cn/"),
            None => format!("https://ec2.{region}.amazonaws.com/"),
        };
        Ok(Ec2 { endpoint: Url::parse(&url)?, region: region.to_string(), credentials })
    }

    /// One Query API call; its XML answer.
    async fn call(&self, action: &str, params: &[(String, String)]) -> Result<String, String> {
        let creds = Credentials::find(self.credentials.as_deref())?;
        let mut form: Vec<(String, String)> =
            vec![("Action".into(), action.into()), ("Version".into(), API_VERSION.into())];
        form.extend(params.iter().cloned());
        let body: String = form
            .iter()
            .map(|(k, v)| format!("{}={}", percent_encode(k), percent_encode(v)))
            .collect::<Vec<_>>()
            .join("&");
        let now = SystemTime::now().duration_since(UNIX_EPOCH).unwrap_or_default().as_secs();
        let headers = sign(&self.endpoint, &self.region, &creds, &body, now);

        let body = Bytes::from(body);
        let sent = http_client::send(&self.endpoint, &Method::POST, &headers, &body);
        let reply = match tokio::time::timeout(REQUEST_TIMEOUT, sent).await {
            Err(_) => return Err(format!("EC2 at {} did not answer within {REQUEST_TIMEOUT:?}", self.endpoint)),
            Ok(Err(e)) => return Err(format!("cannot reach EC2 at {}: {e}", self.endpoint)),
            Ok(Ok(reply)) => reply,
        };
        let text = String::from_utf8_lossy(&reply.body).into_owned();
        if (200..300).contains(&reply.status) {
            return Ok(text);
        }
        let code = xml_text(&text, "Code").unwrap_or_else(|| reply.status_text());
        let message = xml_text(&text, "Message").unwrap_or_default();
        Err(format!("EC2 {action}: {code}: {message}"))
    }

    async fn describe(&self, params: &[(String, String)]) -> Result<Vec<Instance>, String> {
        Ok(instances(&self.call("DescribeInstances", params).await?))
    }
}

#[async_trait]
impl Ec2Api for Ec2 {
    async fn by_name(&self, name: &str) -> Result<Vec<Instance>, String> {
        self.describe(&[("Filter.1.Name".into(), "tag:Name".into()), ("Filter.1.Value.1".into(), name.into())]).await
    }

    async fn by_id(&self, id: &str) -> Result<Option<Instance>, String> {
        Ok(self.describe(&[("InstanceId.1".into(), id.into())]).await?.into_iter().next())
    }

    async fn run(&self, name: &str, image: &str, instance_type: &str, user_data: &str) -> Result<String, String> {
        use base64::Engine as _;
        let mut params: Vec<(String, String)> = vec![
            ("ImageId".into(), image.into()),
            ("InstanceType".into(), instance_type.into()),
            ("MinCount".into(), "1".into()),
            ("MaxCount".into(), "1".into()),
            ("TagSpecification.1.ResourceType".into(), "instance".into()),
            ("TagSpecification.1.Tag.1.Key".into(), "Name".into()),
            ("TagSpecification.1.Tag.1.Value".into(), name.into()),
        ];
        if !user_data.is_empty() {
            params.push(("UserData".into(), base64::engine::general_purpose::STANDARD.encode(user_data)));
        }
        let made = instances(&self.call("RunInstances", &params).await?);
        made.into_iter().next().map(|i| i.id).ok_or_else(|| "EC2 RunInstances answered without an instance".into())
    }

    async fn act(&self, action: &str, id: &str) -> Result<(), String> {
        self.call(action, &[("InstanceId.1".into(), id.into())]).await.map(|_| ())
    }
}

/// The headers of a request signed with Signature Version 4 at `now` (unix seconds).
fn sign(url: &Url, region: &str, creds: &Credentials, body: &str, now: u64) -> Vec<(HeaderName, String)> {
    let (date, stamp) = utc(now);
    let host = url.authority();
    let content_type = "application/x-www-form-urlencoded; charset=utf-8";
    let mut canonical_headers = format!("content-type:{content_type}\nhost:{host}\nx-amz-date:{stamp}\n");
    let mut signed = "content-type;host;x-amz-date".to_string();
    if let Some(token) = &creds.session_token {
        canonical_headers.push_str(&format!("x-amz-security-token:{token}\n"));
        signed.push_str(";x-amz-security-token");
    }
    let path = url.target.split('?').next().unwrap_or("/");
    let canonical = format!("POST\n{path}\n\n{canonical_headers}\n{signed}\n{}", hex(&Sha256::digest(body.as_bytes())));
    let scope = format!("{date}/{region}/ec2/aws4_request");
    let to_sign = format!("AWS4-HMAC-SHA256\n{stamp}\n{scope}\n{}", hex(&Sha256::digest(canonical.as_bytes())));
    let mut key = hmac(format!("AWS4{}", creds.secret_key).as_bytes(), date.as_bytes());
    for part in [region, "ec2", "aws4_request"] {
        key = hmac(&key, part.as_bytes());
    }
    let signature = hex(&hmac(&key, to_sign.as_bytes()));
    let mut headers = vec![
        (CONTENT_TYPE, content_type.to_string()),
        (HeaderName::from_static("x-amz-date"), stamp),
        (
            AUTHORIZATION,
            format!(
                "AWS4-HMAC-SHA256 Credential={}/{scope}, SignedHeaders={signed}, Signature={signature}",
                creds.access_key
            ),
        ),
    ];
    if let Some(token) = &creds.session_token {
        headers.push((HeaderName::from_static("x-amz-security-token"), token.clone()));
    }
    headers
}

fn hmac(key: &[u8], data: &[u8]) -> Vec<u8> {
    ring::hmac::sign(&ring::hmac::Key::new(ring::hmac::HMAC_SHA256, key), data).as_ref().to_vec()
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

/// `YYYYMMDD` and `YYYYMMDDTHHMMSSZ` of unix seconds `t`, in UTC.
fn utc(t: u64) -> (String, String) {
    let (days, secs) = ((t / 86_400) as i64, t % 86_400);
    // Civil date from days since 1970-01-01 (Howard Hinnant's algorithm).
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1_460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let day = doy - (153 * mp + 2) / 5 + 1;
    let month = if mp < 10 { mp + 3 } else { mp - 9 };
    let year = yoe + era * 400 + i64::from(month <= 2);
    let date = format!("{year:04}{month:02}{day:02}");
    let stamp = format!("{date}T{:02}{:02}{:02}Z", secs / 3600, secs / 60 % 60, secs % 60);
    (date, stamp)
}

/// The first element named `tag` in `xml`, as text.
fn xml_text(xml: &str, tag: &str) -> Option<String> {
    let doc = roxmltree::Document::parse(xml).ok()?;
    doc.descendants().find(|n| n.has_tag_name(tag)).and_then(|n| n.text()).map(str::to_string)
}

/// The instances of a DescribeInstances or RunInstances answer.
fn instances(xml: &str) -> Vec<Instance> {
    let Ok(doc) = roxmltree::Document::parse(xml) else { return Vec::new() };
    let child = |n: roxmltree::Node<'_, '_>, tag: &str| {
        n.children().find(|c| c.has_tag_name(tag)).and_then(|c| c.text()).unwrap_or_default().to_string()
    };
    doc.descendants()
        .filter(|n| n.has_tag_name("instancesSet"))
        .flat_map(|set| set.children().filter(|c| c.has_tag_name("item")).collect::<Vec<_>>())
        .map(|item| Instance {
            id: child(item, "instanceId"),
            state: item
                .children()
                .find(|c| c.has_tag_name("instanceState"))
                .map(|s| child(s, "name"))
                .unwrap_or_default(),
            instance_type: child(item, "instanceType"),
            image: child(item, "imageId"),
            private_ip: child(item, "privateIpAddress"),
            public_ip: child(item, "ipAddress"),
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn dates_are_utc() {
        assert_eq!(utc(0), ("19700101".to_string(), "19700101T000000Z".to_string()));
        assert_eq!(utc(1_440_938_160).1, "20150830T123600Z");
        assert_eq!(utc(951_782_400).0, "20000229");
    }

    /// AWS's documented example: GET of IAM ListUsers is another service, so this checks the
    /// key derivation against the "Deriving the signing key" example instead.
    #[test]
    fn the_signing_key_is_derived_as_documented() {
        let mut key = hmac(b"AWS4wJalrXUtnFEMI/K7MDENG+bPxRfiCYEXAMPLEKEY", b"20120215");
        for part in ["us-east-1", "iam", "aws4_request"] {
            key = hmac(&key, part.as_bytes());
        }
        assert_eq!(hex(&key), "f4780e2d9f65fa895f9c67b32ce1baf0b0d8a43505a000a1a9e090d414db404d");
    }

    #[test]
    fn answers_are_read() {
        let xml = r#"<DescribeInstancesResponse><reservationSet><item><instancesSet><item>
            <instanceId>i-1</instanceId><imageId>ami-1</imageId><instanceState><code>16</code><name>running</name></instanceState>
            <privateIpAddress>10.0.0.5</privateIpAddress><ipAddress>54.1.2.3</ipAddress><instanceType>t2.micro</instanceType>
            </item></instancesSet></item></reservationSet></DescribeInstancesResponse>"#;
        let got = instances(xml);
        assert_eq!(got.len(), 1);
        assert_eq!(
            (got[0].id.as_str(), got[0].state.as_str(), got[0].public_ip.as_str()),
            ("i-1", "running", "54.1.2.3")
        );
        let err = "<Response><Errors><Error><Code>InvalidAMIID.NotFound</Code><Message>no ami</Message></Error></Errors></Response>";
        assert_eq!(xml_text(err, "Code").as_deref(), Some("InvalidAMIID.NotFound"));
        assert_eq!(percent_encode("a b/+="), "a%20b%2F%2B%3D");
    }
}
