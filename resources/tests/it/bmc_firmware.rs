//! `bmc:firmware` against a local BMC that follows Redfish (DSP0266) for the calls a push
//! update makes: `GET /redfish/v1/Managers` and the manager's `FirmwareVersion`, the
//! UpdateService's `MultipartHttpPushUri` (parts `UpdateParameters` and `UpdateFile`) or
//! `HttpPushUri` (the raw image), a `202 Accepted` whose `Location` is a task monitor that
//! answers 202 while the task runs and the task once it ends, basic authentication, and a
//! restart after the update during which the BMC answers 503. OpenStack's emulator
//! (`sushy-emulator`, used for `bmc:power` and for the reading of the version in bmc.rs)
//! has no manager firmware to update; no other emulator does. This BMC is kept to those
//! calls. Its "image" is text naming the version it installs (`FWIMG VER=1.72`).

use crate::support;

use std::net::SocketAddr;
use std::sync::{Arc, Mutex};

use bytes::Bytes;
use engine::ApplyCtx;
use http_body_util::{BodyExt, Full};
use hyper::{Request, Response};
use lang::value::Value;
use resources::{Machine, build_with};
use serde_json::{Value as Json, json};
use support::{check, params, s};

const PASSWORD: &str = "Fw-Bmc-pa55";
const MANAGER: &str = "/redfish/v1/Managers/bmc";

#[derive(Default)]
struct Bmc {
    version: String,
    /// Offers `HttpPushUri` only, as an older BMC does.
    raw_push_only: bool,
    /// Every image received, and the `UpdateParameters` that came with it.
    uploads: Vec<(Vec<u8>, Json)>,
    /// Task monitor answers left before the running task ends.
    running: u32,
    /// The version the running task installs (`None`: it fails).
    installing: Option<Option<String>>,
    /// Answers left that the restarting BMC gives as 503.
    restarting: u32,
}

type Shared = Arc<Mutex<Bmc>>;

fn reply(status: u16, body: Json) -> Response<Full<Bytes>> {
    Response::builder()
        .status(status)
        .header("content-type", "application/json")
        .body(Full::new(Bytes::from(body.to_string())))
        .unwrap()
}

fn error(status: u16, message: &str) -> Response<Full<Bytes>> {
    reply(status, json!({"error": {"code": "Base.1.0.GeneralError", "message": message}}))
}

/// The version an image installs (`FWIMG VER=x`), if it is one.
fn version_in(image: &[u8]) -> Option<String> {
    let text = std::str::from_utf8(image).ok()?;
    text.strip_prefix("FWIMG VER=").map(|v| v.trim().to_string())
}

/// The parts of a `multipart/form-data` body, by name.
fn parts(content_type: &str, body: &[u8]) -> Vec<(String, Vec<u8>)> {
    let boundary = content_type.split("boundary=").nth(1).unwrap_or_default();
    let delimiter = format!("\r\n--{boundary}");
    // Led by a line break, the first delimiter looks like the others.
    let text = [b"\r\n".as_slice(), body].concat();
    let mut out = Vec::new();
    let mut rest: &[u8] = &text;
    while let Some(at) = find(rest, delimiter.as_bytes()) {
        rest = &rest[at + delimiter.len()..];
        if rest.starts_with(b"--") {
            break;
        }
        let Some(head_end) = find(rest, b"\r\n\r\n") else { break };
        let head = String::from_utf8_lossy(&rest[..head_end]).into_owned();
        let content = &rest[head_end + 4..];
        let end = find(content, delimiter.as_bytes()).unwrap_or(content.len());
        let name = head.split("name=\"").nth(1).and_then(|n| n.split('"').next()).unwrap_or_default();
        out.push((name.to_string(), content[..end].to_vec()));
    }
    out
}

fn find(hay: &[u8], needle: &[u8]) -> Option<usize> {
    hay.windows(needle.len()).position(|w| w == needle)
}

fn answer(bmc: &Shared, method: &str, path: &str, head: (Option<&str>, &str), body: &[u8]) -> Response<Full<Bytes>> {
    use base64::Engine as _;
    let (auth, content_type) = head;
    let mut b = bmc.lock().unwrap();
    let token = base64::engine::general_purpose::STANDARD.encode(format!("admin:{PASSWORD}"));
    if auth != Some(&format!("Basic {token}")) {
        return error(401, "authentication required");
    }
    if b.restarting > 0 {
        b.restarting -= 1;
        return error(503, "the BMC is restarting");
    }
    let accepted = |b: &mut Bmc, installs: Option<String>| {
        b.running = 1;
        b.installing = Some(installs);
        Response::builder()
            .status(202)
            .header("location", "/redfish/v1/TaskService/TaskMonitors/1")
            .header("content-type", "application/json")
            .body(Full::new(Bytes::from(
                json!({"@odata.id": "/redfish/v1/TaskService/Tasks/1", "TaskState": "Running"}).to_string(),
            )))
            .unwrap()
    };
    match (method, path) {
        ("GET", "/redfish/v1/Managers") => reply(200, json!({"Members": [{"@odata.id": MANAGER}]})),
        ("GET", MANAGER) => reply(200, json!({"@odata.id": MANAGER, "FirmwareVersion": b.version})),
        ("GET", "/redfish/v1/UpdateService") if b.raw_push_only => {
            reply(200, json!({"HttpPushUri": "/redfish/v1/UpdateService/push"}))
        }
        ("GET", "/redfish/v1/UpdateService") => {
            reply(200, json!({"MultipartHttpPushUri": "/redfish/v1/UpdateService/upload"}))
        }
        ("POST", "/redfish/v1/UpdateService/upload") if !b.raw_push_only => {
            let parts = parts(content_type, body);
            let get = |name: &str| parts.iter().find(|(n, _)| n == name).map(|(_, c)| c.clone());
            let (Some(parameters), Some(image)) = (get("UpdateParameters"), get("UpdateFile")) else {
                return error(400, "UpdateParameters and UpdateFile are required");
            };
            let parameters: Json = serde_json::from_slice(&parameters).unwrap_or(Json::Null);
            let installs = version_in(&image);
            b.uploads.push((image, parameters));
            accepted(&mut b, installs)
        }
        ("POST", "/redfish/v1/UpdateService/push") if b.raw_push_only => {
            let installs = version_in(body);
            b.uploads.push((body.to_vec(), Json::Null));
            accepted(&mut b, installs)
        }
        ("GET", "/redfish/v1/TaskService/TaskMonitors/1") => {
            if b.running > 0 {
                b.running -= 1;
                return reply(202, json!({"TaskState": "Running", "PercentComplete": 50}));
            }
            match b.installing.take() {
                Some(Some(version)) => {
                    b.version = version;
                    b.restarting = 2;
                    reply(200, json!({"TaskState": "Completed", "TaskStatus": "OK"}))
                }
                Some(None) => reply(
                    200,
                    json!({"TaskState": "Exception", "TaskStatus": "Critical",
                           "Messages": [{"Message": "The image is not firmware for this BMC"}]}),
                ),
                None => error(404, "no such task"),
            }
        }
        _ => error(404, "no such resource"),
    }
}

/// Serves the BMC over plain HTTP on a free port of 127.0.0.1 until the test ends.
async fn serve(bmc: Shared) -> SocketAddr {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(async move {
        loop {
            let Ok((tcp, _)) = listener.accept().await else { return };
            let bmc = bmc.clone();
            tokio::spawn(async move {
                let service = hyper::service::service_fn(move |req: Request<hyper::body::Incoming>| {
                    let bmc = bmc.clone();
                    async move {
                        let method = req.method().to_string();
                        let path = req.uri().path().to_string();
                        let header =
                            |name: &str| req.headers().get(name).and_then(|v| v.to_str().ok()).map(str::to_string);
                        let (auth, content_type) =
                            (header("authorization"), header("content-type").unwrap_or_default());
                        let body = req.into_body().collect().await.map(|b| b.to_bytes()).unwrap_or_default();
                        Ok::<_, std::convert::Infallible>(answer(
                            &bmc,
                            &method,
                            &path,
                            (auth.as_deref(), &content_type),
                            &body,
                        ))
                    }
                });
                let _ = hyper::server::conn::http1::Builder::new()
                    .serve_connection(hyper_util::rt::TokioIo::new(tcp), service)
                    .await;
            });
        }
    });
    addr
}

fn sha256(bytes: &[u8]) -> String {
    use sha2::Digest as _;
    sha2::Sha256::digest(bytes).iter().map(|b| format!("{b:02x}")).collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_bmc_is_updated_through_its_update_service_and_a_wrong_image_is_not_flashed_again() {
    let state: Shared = Arc::new(Mutex::new(Bmc { version: "1.00".into(), ..Bmc::default() }));
    let addr = serve(state.clone()).await;
    let dir = tempfile::tempdir().unwrap();
    let host = Machine::sandbox(dir.path().join("host"));
    let image = dir.path().join("bmc-1.72.bin");
    std::fs::write(&image, "FWIMG VER=1.72\n").unwrap();
    let name = format!("gofish://admin@{addr}");
    let firmware = |version: &str, file: &std::path::Path, hash: &str| {
        let mut pairs = vec![
            ("password", s(PASSWORD)),
            ("provider", s("supermicro")),
            ("file", s(file.to_str().unwrap())),
            ("version", s(version)),
            ("block", s(&name)),
        ];
        if !hash.is_empty() {
            pairs.push(("hash", s(hash)));
        }
        build_with(&host, "bmc:firmware", &name, &params(&pairs)).unwrap()
    };
    let uploads = || state.lock().unwrap().uploads.len();

    // Noop says what it would do and sends nothing.
    let mut res = firmware("1.72", &image, &sha256(b"FWIMG VER=1.72\n"));
    res.validate().unwrap();
    let (ok, reports) = check(res.as_mut(), false).await.unwrap();
    assert!(!ok && reports == [format!("bmc:firmware[{name}]: would update the BMC's firmware from 1.00 to 1.72")]);
    assert_eq!(uploads(), 0);

    // A file that is not the one hashed is never sent.
    let mut tampered = firmware("1.72", &image, &sha256(b"another image"));
    let err = tampered.check_apply(&mut ApplyCtx::detached(), true).await.unwrap_err().message;
    assert!(err.contains("not the `hash`") && err.contains("nothing was sent"), "{err}");
    assert_eq!(uploads(), 0);

    // Updated: the image goes to the manager, the task is followed, the restart waited out.
    support::converge(res.as_mut()).await;
    assert_eq!(state.lock().unwrap().version, "1.72");
    {
        let b = state.lock().unwrap();
        assert_eq!(b.uploads.len(), 1);
        assert_eq!(b.uploads[0].0, b"FWIMG VER=1.72\n");
        assert_eq!(b.uploads[0].1["Targets"], json!([MANAGER]));
    }

    // A task that fails says why; the version stays.
    let junk = dir.path().join("junk.bin");
    std::fs::write(&junk, "not firmware").unwrap();
    let mut bad = firmware("1.80", &junk, "");
    let err = bad.check_apply(&mut ApplyCtx::detached(), true).await.unwrap_err().message;
    assert!(err.contains("ended `Exception`: The image is not firmware for this BMC"), "{err}");
    assert_eq!(state.lock().unwrap().version, "1.72");

    // An image that brings another version than asked: said, and not flashed again.
    let other = dir.path().join("bmc-1.75.bin");
    std::fs::write(&other, "FWIMG VER=1.75\n").unwrap();
    let mut mislabeled = firmware("1.90", &other, "");
    let before = uploads();
    for _ in 0..2 {
        let err = mislabeled.check_apply(&mut ApplyCtx::detached(), true).await.unwrap_err();
        assert!(
            err.message.contains("installs the BMC firmware version 1.75, not the `version` 1.90"),
            "{}",
            err.message
        );
    }
    assert_eq!(uploads(), before + 1, "flashed once");

    // An older BMC takes the raw image at `HttpPushUri`.
    state.lock().unwrap().raw_push_only = true;
    let mut older = firmware("1.72", &image, "");
    support::converge(older.as_mut()).await;
    assert_eq!(state.lock().unwrap().version, "1.72");
    assert_eq!(state.lock().unwrap().uploads.last().unwrap().0, b"FWIMG VER=1.72\n");

    // The password is in no message.
    let mut wrong = build_with(
        &host,
        "bmc:firmware",
        &name,
        &params(&[
            ("password", s("wrong-Pw-9")),
            ("provider", s("supermicro")),
            ("file", s(image.to_str().unwrap())),
            ("version", s("1.72")),
        ]),
    )
    .unwrap();
    let err = wrong.check_apply(&mut ApplyCtx::detached(), false).await.unwrap_err().message;
    assert!(err.contains("refused the credentials of user `admin`") && !err.contains("wrong-Pw-9"), "{err}");
}

#[tokio::test]
async fn bad_firmware_params_are_refused_naming_the_field() {
    let dir = tempfile::tempdir().unwrap();
    let host = Machine::sandbox(dir.path());
    let ok: Vec<(&str, Value)> =
        vec![("provider", s("supermicro")), ("file", s("/tmp/fw.bin")), ("version", s("1.72"))];
    let with = |field: &str, value: Value| {
        let mut pairs: Vec<(&str, Value)> = ok.iter().filter(|(f, _)| *f != field).cloned().collect();
        pairs.push((Box::leak(field.to_string().into_boxed_str()), value));
        pairs
    };
    let good = build_with(&host, "bmc:firmware", "gofishs://admin@bmc1", &params(&ok)).unwrap();
    good.validate().unwrap();
    // Without a URL name, `hostname` says where the BMC is (over HTTPS by default).
    let named = build_with(&host, "bmc:firmware", "hello", &params(&with("hostname", s("192.168.1.52")))).unwrap();
    named.validate().unwrap();
    for (name, pairs, field) in [
        ("hello", ok.clone(), "hostname"),
        ("gofish://h", with("provider", s("")), "provider"),
        ("gofish://h", with("file", s("fw.bin")), "file"),
        ("gofish://h", with("file", s("/var/fw/")), "file"),
        ("gofish://h", with("version", s("")), "version"),
        ("gofish://h", with("hash", s("362b81be")), "hash"),
        ("rpcs://h", ok.clone(), "driver"),
    ] {
        let res = build_with(&host, "bmc:firmware", name, &params(&pairs)).unwrap();
        let err = res.validate().unwrap_err().message;
        assert!(err.contains(&format!("field `{field}`")), "{name} {pairs:?}: {err}");
    }
}
