//! The kinds that manage machines in clouds: `hetzner:vm` (the Hetzner Cloud API) and
//! `aws:ec2` (EC2's Query API, [`aws`]). Where each cloud's API is reached is the host's
//! ([`Endpoints`]): the public one, or what the operator's environment names
//! (`HCLOUD_ENDPOINT` and `AWS_ENDPOINT_URL`, as the clouds' own tools read them), or a
//! test's local server.

pub mod aws;
pub mod aws_ec2;
pub mod hetzner;

/// The base URLs of the cloud APIs.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Endpoints {
    /// Hetzner Cloud, up to and with `/v1`.
    pub hetzner: String,
    /// EC2, when not AWS's own endpoint of the resource's region.
    pub aws: Option<String>,
    /// The AWS shared credentials file, when not the one the environment names (tests).
    pub aws_credentials: Option<std::path::PathBuf>,
}

impl Endpoints {
    /// The public APIs, or those the environment names.
    pub fn from_env() -> Endpoints {
        let var = |k: &str| std::env::var(k).ok().filter(|e| !e.is_empty());
        Endpoints {
            hetzner: var("HCLOUD_ENDPOINT").unwrap_or_else(|| hetzner::PUBLIC_API.to_string()),
            aws: var("AWS_ENDPOINT_URL_EC2").or_else(|| var("AWS_ENDPOINT_URL")),
            aws_credentials: None,
        }
    }
}

impl Default for Endpoints {
    fn default() -> Endpoints {
        Endpoints { hetzner: hetzner::PUBLIC_API.to_string(), aws: None, aws_credentials: None }
    }
}
