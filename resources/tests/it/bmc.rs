//! `bmc:power` against OpenStack's Redfish emulator (`sushy-emulator --fake` from the
//! tests' Python environment), with basic authentication on and one fake system. The
//! emulator applies a power change 1 to 11 seconds after it is asked, as hardware would,
//! so the waits here allow for that (and for the agent's 10 s poll). `bmc:firmware` reads
//! the emulator's BMC version here; its updates are tested in bmc_firmware.rs.

use crate::support;

use std::path::Path;
use std::process::{Command, Stdio};
use std::time::Duration;

use bytes::Bytes;
use engine::{ApplyCtx, Graph, Meta, ResKey};
use hyper::Method;
use lang::value::Value;
use resources::util::http_client::{Url, send_trusting, tls_config};
use resources::{Machine, build_with};
use support::{Killed, check, engine, free_port, params, pyenv_program, s};

const PASSWORD: &str = "Bmc-S3cret-pw";
/// The emulator's certificate (one emulator per test binary run).
static CERT: std::sync::OnceLock<std::path::PathBuf> = std::sync::OnceLock::new();

const SYSTEM: &str = "/redfish/v1/Systems/27946b59-9e44-4fa7-8e91-f3527a1ef094";

/// A running emulator on `port`.
struct Sushy {
    _child: Killed,
    port: u16,
}

async fn start_sushy(dir: &Path, python: &Path, emulator: &Path) -> Sushy {
    // Its password file takes bcrypt digests only: the environment's own bcrypt makes one.
    let digest = Command::new(python)
        .args(["-c", &format!("import bcrypt; print(bcrypt.hashpw(b'{PASSWORD}', bcrypt.gensalt(4)).decode())")])
        .output()
        .unwrap();
    assert!(digest.status.success(), "{}", String::from_utf8_lossy(&digest.stderr));
    std::fs::write(dir.join("htpasswd"), format!("admin:{}", String::from_utf8_lossy(&digest.stdout))).unwrap();
    std::fs::create_dir_all(dir.join("state")).unwrap();
    let config = format!(
        "SUSHY_EMULATOR_AUTH_FILE = {auth:?}\nSUSHY_EMULATOR_STATE_DIR = {state:?}\n\
         SUSHY_EMULATOR_FAKE_SYSTEMS = [{{'uuid': '27946b59-9e44-4fa7-8e91-f3527a1ef094', 'name': 'fake', \
         'power_state': 'Off', 'nics': [{{'mac': '00:5c:52:31:3a:9c', 'ip': '172.22.0.100'}}]}}]\n",
        auth = dir.join("htpasswd").display().to_string(),
        state = dir.join("state").display().to_string(),
    );
    std::fs::write(dir.join("sushy.conf"), config).unwrap();
    // HTTPS with a certificate of its own, as a BMC has.
    let made = Command::new("openssl")
        .args(["req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes", "-days", "1"])
        .args([
            "-subj",
            "/CN=bmc",
            "-addext",
            "subjectAltName=IP:127.0.0.1",
            "-addext",
            "basicConstraints=critical,CA:FALSE",
        ])
        .arg("-keyout")
        .arg(dir.join("bmc.key"))
        .arg("-out")
        .arg(dir.join("bmc.crt"))
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .unwrap();
    assert!(made.success(), "openssl makes the BMC's certificate");
    let port = free_port();
    let log = std::fs::File::create(dir.join("sushy.log")).unwrap();
    let child = Command::new(emulator)
        .arg("--fake")
        .args(["--config", &dir.join("sushy.conf").display().to_string()])
        .arg("--ssl-certificate")
        .arg(dir.join("bmc.crt"))
        .arg("--ssl-key")
        .arg(dir.join("bmc.key"))
        .args(["-i", "127.0.0.1", "-p", &port.to_string()])
        .stdin(Stdio::null())
        .stdout(log.try_clone().unwrap())
        .stderr(log)
        .spawn()
        .expect("sushy-emulator starts");
    let sushy = Sushy { _child: Killed(child), port };
    CERT.set(dir.join("bmc.crt")).unwrap();
    for _ in 0..200 {
        if redfish(port, &Method::GET, "/redfish/v1", None).await.is_ok() {
            return sushy;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    panic!("sushy-emulator answers: {}", std::fs::read_to_string(dir.join("sushy.log")).unwrap_or_default());
}

/// The test's own Redfish request (as the administrator), trusting the BMC's certificate.
async fn redfish(port: u16, method: &Method, path: &str, body: Option<&str>) -> Result<serde_json::Value, String> {
    use tokio_rustls::rustls::pki_types::{CertificateDer, pem::PemObject as _};
    let url = Url::parse(&format!("https://admin:{PASSWORD}@127.0.0.1:{port}{path}"))?;
    let headers = [(hyper::header::CONTENT_TYPE, "application/json".to_string())];
    let mut roots = tokio_rustls::rustls::RootCertStore::empty();
    let pem = std::fs::read(CERT.get().unwrap()).unwrap();
    roots.add(CertificateDer::from_pem_slice(&pem).unwrap()).unwrap();
    let trust = tls_config(Some(roots))?;
    let body = Bytes::from(body.unwrap_or_default().to_string());
    let reply = send_trusting(&url, method, &headers, &body, Some(&trust)).await?;
    if reply.status >= 300 {
        return Err(format!("{path}: {}", reply.status));
    }
    Ok(serde_json::from_slice(&reply.body).unwrap_or_default())
}

async fn power(port: u16) -> String {
    redfish(port, &Method::GET, SYSTEM, None).await.unwrap()["PowerState"].as_str().unwrap_or_default().to_string()
}

async fn eventually_power(port: u16, want: &str, within: Duration) -> bool {
    let until = std::time::Instant::now() + within;
    while std::time::Instant::now() < until {
        if power(port).await == want {
            return true;
        }
        tokio::time::sleep(Duration::from_millis(250)).await;
    }
    false
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn power_is_set_held_against_drift_and_refused_with_a_clear_error() {
    let (Some(emulator), Some(python)) = (pyenv_program("sushy-emulator"), pyenv_program("python")) else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let sushy = start_sushy(dir.path(), &python, &emulator).await;
    let port = sushy.port;
    assert_eq!(power(port).await, "Off");
    let secret = dir.path().join("bmc.pass");
    std::fs::write(&secret, format!("{PASSWORD}\n")).unwrap();
    let host = Machine::sandbox(dir.path().join("host"));
    let name = format!("gofishs://admin@127.0.0.1:{port}");
    let ca = dir.path().join("bmc.crt");
    let on = [("state", s("on")), ("password_file", s(secret.to_str().unwrap())), ("ca", s(ca.to_str().unwrap()))];

    // Without `ca`, the BMC's own certificate is not trusted: a clear error.
    let mut untrusted = build_with(&host, "bmc:power", &name, &params(&on[..2])).unwrap();
    let err = untrusted.check_apply(&mut ApplyCtx::detached(), false).await.unwrap_err().message;
    assert!(err.contains(&format!("cannot reach the BMC at https://127.0.0.1:{port}: TLS")), "{err}");

    // Noop asks and changes nothing.
    let mut probe = build_with(&host, "bmc:power", &name, &params(&on)).unwrap();
    probe.validate().unwrap();
    let (ok, reports) = check(probe.as_mut(), false).await.unwrap();
    assert!(!ok && reports == [format!("bmc:power[{name}]: would power on")], "{reports:?}");

    // On: the apply waits for the emulator to get there.
    let engine = engine(&dir.path().join("engine"));
    let mut g = Graph::new();
    g.add_vertex(
        ResKey::new("bmc:power", &name),
        Meta::default(),
        build_with(&host, "bmc:power", &name, &params(&on)).unwrap(),
    );
    engine.apply(g).await.unwrap();
    assert!(engine.wait_converged(Duration::from_secs(40)).await, "converged");
    assert_eq!(power(port).await, "On");

    // Powered off behind the agent's back: its watch sees it and powers on again.
    redfish(
        port,
        &Method::POST,
        &format!("{SYSTEM}/Actions/ComputerSystem.Reset"),
        Some(r#"{"ResetType":"ForceOff"}"#),
    )
    .await
    .unwrap();
    assert!(eventually_power(port, "Off", Duration::from_secs(15)).await, "the emulator powers off");
    assert!(eventually_power(port, "On", Duration::from_secs(40)).await, "the drift is repaired");
    engine.shutdown(Duration::from_secs(5)).await;

    // A soft power-off reaches off.
    let soft = [("state", s("soft")), ("password", s(PASSWORD)), on[2].clone()];
    let mut soft = build_with(&host, "bmc:power", &name, &params(&soft)).unwrap();
    support::converge(soft.as_mut()).await;
    assert_eq!(power(port).await, "Off");

    // A wrong password: refused, named by user, the password nowhere in the message.
    let wrong = [("state", s("on")), ("password", s("not-the-pw")), on[2].clone()];
    let mut wrong = build_with(&host, "bmc:power", &name, &params(&wrong)).unwrap();
    let err = wrong.check_apply(&mut ApplyCtx::detached(), true).await.unwrap_err().message;
    assert!(err.contains("refused the credentials of user `admin`") && err.contains("401"), "{err}");
    assert!(!err.contains("not-the-pw"), "{err}");

    // bmc:firmware reads the emulator's BMC version: the version asked for is already there.
    let image = dir.path().join("fw.bin");
    std::fs::write(&image, "an image").unwrap();
    let firmware = |version: &str| {
        let pairs = [
            ("password", s(PASSWORD)),
            on[2].clone(),
            ("provider", s("supermicro")),
            ("file", s(image.to_str().unwrap())),
            ("version", s(version)),
        ];
        build_with(&host, "bmc:firmware", &name, &params(&pairs)).unwrap()
    };
    let mut current = firmware("1.00");
    current.validate().unwrap();
    assert_eq!(check(current.as_mut(), true).await, Ok((true, vec![])));
    // The emulator offers `HttpPushUri` but takes no image there: the BMC's answer is told.
    let mut newer = firmware("1.72");
    let err = newer.check_apply(&mut ApplyCtx::detached(), true).await.unwrap_err().message;
    assert!(
        err.contains(&format!(
            "the BMC at https://127.0.0.1:{port} answered POST /redfish/v1/UpdateService/FirmwareInventory with 40"
        )),
        "{err}"
    );

    // An unreachable BMC: a clear, retried error.
    let gone = format!("gofish://admin@127.0.0.1:{}", free_port());
    // (plain HTTP: `gofish`)
    let mut away =
        build_with(&host, "bmc:power", &gone, &params(&[("state", s("on")), ("password", s(PASSWORD))])).unwrap();
    let err = away.check_apply(&mut ApplyCtx::detached(), true).await.unwrap_err();
    assert!(err.message.contains("cannot reach the BMC at http://127.0.0.1:"), "{}", err.message);
    assert!(!err.message.contains(PASSWORD));
    assert_eq!(power(port).await, "Off", "nothing reached the real BMC");
}

#[tokio::test]
async fn bad_params_are_refused_naming_the_field() {
    let dir = tempfile::tempdir().unwrap();
    let host = Machine::sandbox(dir.path());
    for (name, pairs, field) in [
        ("gofish://h", vec![("state", s("cycle"))], "state"),
        ("rpcs://127.0.0.1:8800", vec![("state", s("on"))], "driver"),
        ("no-url", vec![("state", s("on")), ("driver", s("gofish"))], "hostname"),
        ("gofish://h", vec![("state", s("on")), ("port", Value::Int(70000))], "port"),
        ("gofish://h", vec![("state", s("on")), ("password", s("x")), ("password_file", s("/p"))], "password_file"),
        ("gofish://h", vec![("state", s("on")), ("ca", s("relative.pem"))], "ca"),
    ] {
        let res = build_with(&host, "bmc:power", name, &params(&pairs)).unwrap();
        let err = res.validate().unwrap_err().message;
        assert!(err.contains(&format!("field `{field}`")), "{name} {pairs:?}: {err}");
    }
}
