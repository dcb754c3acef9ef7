//! `hetzner:vm` against a local server that follows the Hetzner Cloud API's documented
//! requests and responses (docs.hetzner.cloud: `GET /servers?name=`, `POST /servers`,
//! `DELETE /servers/{id}`, `POST /servers/{id}/actions/{poweron,poweroff,enable_rescue,
//! disable_rescue}`, `GET /ssh_keys`, bearer tokens, `{"error": {"code", "message"}}`)
//! for the calls the kind makes. No emulator of that API exists; this one is kept to those
//! calls. Like the real service, a server takes a moment to leave `initializing`,
//! `starting`, `stopping` and `deleting`.

use crate::support;

use std::collections::BTreeMap;
use std::net::SocketAddr;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use bytes::Bytes;
use engine::{ApplyCtx, Graph, Meta, ResKey};
use http_body_util::{BodyExt, Full};
use hyper::{Request, Response};
use lang::value::Value;
use resources::{Machine, build_with};
use serde_json::{Value as Json, json};
use support::{check, engine, params, s, strs};

const TOKEN: &str = "hz-T0ken-do-not-print";
/// How long a server stays in a passing state.
const SETTLE: Duration = Duration::from_millis(300);

#[derive(Clone, Debug)]
struct Srv {
    id: u64,
    name: String,
    status: String,
    server_type: String,
    datacenter: String,
    image: String,
    rescue: bool,
    /// The status it reaches, and when (`gone` when deleted).
    next: Option<(Instant, String)>,
}

impl Srv {
    fn json(&self) -> Json {
        json!({
            "id": self.id, "name": self.name, "status": self.status,
            "server_type": {"name": self.server_type}, "datacenter": {"name": self.datacenter},
            "image": {"name": self.image}, "rescue_enabled": self.rescue,
        })
    }
}

#[derive(Default)]
struct Cloud {
    servers: BTreeMap<u64, Srv>,
    next_id: u64,
    /// Every request, `METHOD path`.
    log: Vec<String>,
    /// The last create request's body.
    created: Option<Json>,
}

impl Cloud {
    fn settle(&mut self) {
        let now = Instant::now();
        for srv in self.servers.values_mut() {
            if let Some((when, status)) = srv.next.clone()
                && when <= now
            {
                srv.status = status;
                srv.next = None;
            }
        }
        self.servers.retain(|_, s| s.status != "gone");
    }

    fn by_name(&self, name: &str) -> Option<&Srv> {
        self.servers.values().find(|s| s.name == name)
    }
}

type Shared = Arc<Mutex<Cloud>>;

fn reply(status: u16, body: Json) -> Response<Full<Bytes>> {
    Response::builder()
        .status(status)
        .header("content-type", "application/json")
        .body(Full::new(Bytes::from(body.to_string())))
        .unwrap()
}

fn error(status: u16, code: &str, message: &str) -> Response<Full<Bytes>> {
    reply(status, json!({"error": {"code": code, "message": message}}))
}

fn action(command: &str) -> Json {
    json!({"action": {"id": 1, "command": command, "status": "running", "progress": 0}})
}

fn answer(cloud: &Shared, method: &str, target: &str, auth: Option<&str>, body: &[u8]) -> Response<Full<Bytes>> {
    let mut c = cloud.lock().unwrap();
    c.log.push(format!("{method} {target}"));
    if auth != Some(&format!("Bearer {TOKEN}")) {
        return error(401, "unauthorized", "unable to authenticate");
    }
    c.settle();
    let (path, query) = target.split_once('?').unwrap_or((target, ""));
    let parts: Vec<&str> = path.trim_matches('/').split('/').collect();
    let body: Json = serde_json::from_slice(body).unwrap_or(Json::Null);
    match (method, parts.as_slice()) {
        ("GET", ["v1", "servers"]) => {
            let name = query.split('&').find_map(|kv| kv.strip_prefix("name=")).unwrap_or_default();
            let found: Vec<Json> =
                c.servers.values().filter(|s| name.is_empty() || s.name == name).map(Srv::json).collect();
            reply(200, json!({"servers": found, "meta": {"pagination": {"page": 1, "per_page": 25}}}))
        }
        ("POST", ["v1", "servers"]) => {
            let name = body["name"].as_str().unwrap_or_default().to_string();
            if c.by_name(&name).is_some() {
                return error(409, "uniqueness_error", "server name is already used");
            }
            let Some(server_type) = body["server_type"].as_str().filter(|t| t.starts_with("cx")) else {
                return error(400, "invalid_input", "invalid input in field 'server_type'");
            };
            c.next_id += 1;
            let start = body["start_after_create"].as_bool().unwrap_or(true);
            let srv = Srv {
                id: c.next_id,
                name,
                status: "initializing".into(),
                server_type: server_type.into(),
                datacenter: body["datacenter"].as_str().unwrap_or("fsn1-dc14").into(),
                image: body["image"].as_str().unwrap_or_default().into(),
                rescue: false,
                next: Some((Instant::now() + SETTLE, if start { "running" } else { "off" }.into())),
            };
            let shown = srv.json();
            c.servers.insert(srv.id, srv);
            c.created = Some(body);
            reply(
                201,
                json!({"server": shown, "action": action("create_server")["action"], "next_actions": [], "root_password": null}),
            )
        }
        ("DELETE", ["v1", "servers", id]) => match c.servers.get_mut(&id.parse().unwrap_or(0)) {
            Some(srv) => {
                srv.status = "deleting".into();
                srv.next = Some((Instant::now() + SETTLE, "gone".into()));
                reply(200, action("delete_server"))
            }
            None => error(404, "not_found", "server not found"),
        },
        ("POST", ["v1", "servers", id, "actions", act]) => {
            let Some(srv) = c.servers.get_mut(&id.parse().unwrap_or(0)) else {
                return error(404, "not_found", "server not found");
            };
            match *act {
                "poweron" => {
                    srv.status = "starting".into();
                    srv.next = Some((Instant::now() + SETTLE, "running".into()));
                    reply(201, action("start_server"))
                }
                "poweroff" => {
                    srv.status = "stopping".into();
                    srv.next = Some((Instant::now() + SETTLE, "off".into()));
                    reply(201, action("stop_server"))
                }
                "enable_rescue" => {
                    srv.rescue = true;
                    reply(201, json!({"action": action("enable_rescue")["action"], "root_password": "rescue-pw"}))
                }
                "disable_rescue" => {
                    srv.rescue = false;
                    reply(201, action("disable_rescue"))
                }
                _ => error(404, "not_found", "no such action"),
            }
        }
        ("GET", ["v1", "ssh_keys"]) => reply(
            200,
            json!({"ssh_keys": [{"id": 7, "name": "bootstrap-test-key", "fingerprint": "b7:2f", "public_key": "ssh-ed25519 AAAA"}]}),
        ),
        _ => error(404, "not_found", "no such endpoint"),
    }
}

/// Serves the API on a free port of 127.0.0.1 until the test ends.
async fn serve(cloud: Shared) -> SocketAddr {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(async move {
        loop {
            let Ok((tcp, _)) = listener.accept().await else { return };
            let cloud = cloud.clone();
            tokio::spawn(async move {
                let service = hyper::service::service_fn(move |req: Request<hyper::body::Incoming>| {
                    let cloud = cloud.clone();
                    async move {
                        let method = req.method().to_string();
                        let target = req.uri().path_and_query().map(|p| p.to_string()).unwrap_or_default();
                        let auth = req.headers().get("authorization").and_then(|v| v.to_str().ok()).map(str::to_string);
                        let body = req.into_body().collect().await.map(|b| b.to_bytes()).unwrap_or_default();
                        Ok::<_, std::convert::Infallible>(answer(&cloud, &method, &target, auth.as_deref(), &body))
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

fn host_for(dir: &std::path::Path, addr: SocketAddr) -> Machine {
    let clouds = resources::cloud::Endpoints { hetzner: format!("http://{addr}/v1"), ..Default::default() };
    Machine { clouds: Arc::new(clouds), ..Machine::sandbox(dir) }
}

fn vm(pairs: &[(&str, Value)]) -> Vec<(&'static str, Value)> {
    let mut all: Vec<(&'static str, Value)> = vec![
        ("apitoken", s(TOKEN)),
        ("servertype", s("cx22")),
        ("datacenter", s("fsn1-dc14")),
        ("image", s("debian-13")),
        ("waitinterval", Value::Int(0)),
        ("waittimeout", Value::Int(10)),
    ];
    for (k, v) in pairs {
        all.retain(|(field, _)| field != k);
        all.push((leak(k), v.clone()));
    }
    all
}

fn leak(text: &str) -> &'static str {
    Box::leak(text.to_string().into_boxed_str())
}

fn status(cloud: &Shared, name: &str) -> Option<(String, bool, String)> {
    let mut c = cloud.lock().unwrap();
    c.settle();
    c.by_name(name).map(|s| (s.status.clone(), s.rescue, s.server_type.clone()))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_server_is_made_powered_rescued_rebuilt_and_deleted() {
    let cloud: Shared = Arc::default();
    let addr = serve(cloud.clone()).await;
    let dir = tempfile::tempdir().unwrap();
    let host = host_for(dir.path(), addr);
    let build = |pairs: &[(&str, Value)]| build_with(&host, "hetzner:vm", "web1", &params(&vm(pairs))).unwrap();

    // Noop: says so, makes nothing.
    let mut res = build(&[("state", s("running"))]);
    res.validate().unwrap();
    let (ok, reports) = check(res.as_mut(), false).await.unwrap();
    assert!(!ok && reports == ["hetzner:vm[web1]: would create the server"], "{reports:?}");
    assert_eq!(status(&cloud, "web1"), None);

    // Made and running, with the project's keys; then nothing to do.
    support::converge(res.as_mut()).await;
    assert_eq!(status(&cloud, "web1"), Some(("running".into(), false, "cx22".into())));
    let created = cloud.lock().unwrap().created.clone().unwrap();
    assert_eq!(created["ssh_keys"], json!([7]));
    assert_eq!(created["start_after_create"], json!(true));

    // Off, then rescue mode with a named key (an unknown one is an error naming it).
    support::converge(build(&[("state", s("off"))]).as_mut()).await;
    assert_eq!(status(&cloud, "web1").unwrap().0, "off");
    let mut unknown =
        build(&[("state", s("off")), ("serverrescuemode", s("linux64")), ("serverrescuekeys", strs(&["nope"]))]);
    let err = check(unknown.as_mut(), true).await.unwrap_err();
    assert!(err.contains("no SSH key `nope`"), "{err}");
    let rescue =
        [("state", s("off")), ("serverrescuemode", s("linux64")), ("serverrescuekeys", strs(&["bootstrap-test-key"]))];
    support::converge(build(&rescue).as_mut()).await;
    assert!(status(&cloud, "web1").unwrap().1, "rescue mode on");
    support::converge(build(&[("state", s("off"))]).as_mut()).await;
    assert!(!status(&cloud, "web1").unwrap().1, "rescue mode off again");

    // Another server type: refused without allowrebuild, rebuilt with `ifneeded`.
    let mut bigger = build(&[("state", s("off")), ("servertype", s("cx32"))]);
    let err = check(bigger.as_mut(), true).await.unwrap_err();
    assert!(err.contains("servertype is `cx22`, not `cx32`") && err.contains("ifneeded"), "{err}");
    let mut ignored = build(&[("state", s("off")), ("servertype", s("cx32")), ("allowrebuild", s("ignore"))]);
    assert!(check(ignored.as_mut(), true).await.unwrap().0, "ignore: nothing to do");
    let old_id = cloud.lock().unwrap().by_name("web1").unwrap().id;
    support::converge(
        build(&[("state", s("off")), ("servertype", s("cx32")), ("allowrebuild", s("ifneeded"))]).as_mut(),
    )
    .await;
    let c = cloud.lock().unwrap().by_name("web1").cloned().unwrap();
    assert!(c.id != old_id && c.server_type == "cx32" && c.status == "off", "{c:?}");

    // An API error is passed on with its code: a server type the API does not know.
    support::converge(build(&[("state", s("absent"))]).as_mut()).await;
    assert_eq!(status(&cloud, "web1"), None, "deleted");
    let mut bad_type = build(&[("state", s("running")), ("servertype", s("zz9"))]);
    let err = check(bad_type.as_mut(), true).await.unwrap_err();
    assert!(err.contains("invalid_input") && err.contains("server_type"), "{err}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn drift_is_repaired_and_errors_never_show_the_token() {
    let cloud: Shared = Arc::default();
    let addr = serve(cloud.clone()).await;
    let dir = tempfile::tempdir().unwrap();
    let host = host_for(dir.path(), addr);
    let engine = engine(&dir.path().join("engine"));
    let mut g = Graph::new();
    let res = build_with(&host, "hetzner:vm", "web2", &params(&vm(&[("state", s("running"))]))).unwrap();
    // As in mgmt's example: the API is polled (`Meta:poll`), here every second.
    g.add_vertex(ResKey::new("hetzner:vm", "web2"), Meta { poll: 1, ..Meta::default() }, res);
    engine.apply(g).await.unwrap();
    assert!(engine.wait_converged(support::WAIT).await);
    assert_eq!(status(&cloud, "web2").unwrap().0, "running");

    // Powered off in the console: powered on again.
    cloud.lock().unwrap().servers.values_mut().for_each(|s| s.status = "off".into());
    assert!(support::eventually(|| status(&cloud, "web2").is_some_and(|s| s.0 == "running")).await, "repaired");
    // Deleted in the console: made again.
    cloud.lock().unwrap().servers.clear();
    let made_again = support::eventually(|| status(&cloud, "web2").is_some_and(|s| s.0 == "running")).await;
    assert!(made_again, "made again: {:?}", cloud.lock().unwrap().log);
    engine.shutdown(support::WAIT).await;

    // A wrong token: refused, the token in no message.
    let mut wrong = build_with(&host, "hetzner:vm", "web2", &params(&vm(&[("apitoken", s("wrong-token-x"))]))).unwrap();
    let err = wrong.check_apply(&mut ApplyCtx::detached(), true).await.unwrap_err().message;
    assert!(err.contains("refused the token") && err.contains("unauthorized"), "{err}");
    assert!(!err.contains("wrong-token-x") && !err.contains(TOKEN), "{err}");

    // The API unreachable: a clear error, retried by the engine.
    let gone = Machine {
        clouds: Arc::new(resources::cloud::Endpoints {
            hetzner: format!("http://127.0.0.1:{}/v1", support::free_port()),
            ..Default::default()
        }),
        ..host.clone()
    };
    let mut away = build_with(&gone, "hetzner:vm", "web2", &params(&vm(&[("state", s("running"))]))).unwrap();
    let err = away.check_apply(&mut ApplyCtx::detached(), true).await.unwrap_err().message;
    assert!(err.contains("cannot reach the Hetzner API at http://127.0.0.1:"), "{err}");
}

#[tokio::test]
async fn bad_params_are_refused_naming_the_field() {
    let dir = tempfile::tempdir().unwrap();
    let host = Machine::sandbox(dir.path());
    for (pairs, field) in [
        (vec![("apitoken", s(""))], "apitoken"),
        (vec![("state", s("up"))], "state"),
        (vec![("allowrebuild", s("always"))], "allowrebuild"),
        (vec![("serverrescuemode", s("linux"))], "serverrescuemode"),
        (vec![("state", s("running")), ("image", s(""))], "image"),
    ] {
        let res = build_with(&host, "hetzner:vm", "web", &params(&vm(&pairs))).unwrap();
        let err = res.validate().unwrap_err().message;
        assert!(err.contains(&format!("field `{field}`")), "{pairs:?}: {err}");
        assert!(!err.contains(TOKEN), "{err}");
    }
}
