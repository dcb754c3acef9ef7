//! `http:server:flag`: a POST endpoint at `path` (default the name) on the server named by
//! `server`; the url-encoded form field `key` of each POST becomes the flag's value, which
//! it sends as `value` (`""` while unset). Several flags may share one path, each reading
//! its own key from the same POST. A POST wakes the resource so the new value is sent at
//! once; check-apply reports a change whenever the value differs from the last one sent.

use lang::params::ParamMap;
use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};

use async_trait::async_trait;
use engine::{ApplyCtx, Payload, ResError, Resource, WatchCtx};
use futures::future::BoxFuture;
use hyper::Method;
use lang::value::Value;
use tokio::sync::Notify;

use super::{Hub, Request, Response, Route};
use crate::contract::common::{Raw, sends};
use crate::contract::params::BuildError;
use crate::contract::typed::Fingerprint as _;

crate::params! {
    /// `http:server:flag`'s params.
    #[derive(Clone, Debug, PartialEq)]
    pub struct FlagParams {
        pub server: String,
        /// Defaults to the name.
        pub path: String => |p, f| p.str_or(f, p.name),
        pub key: String,
    }
}

pub struct HttpFlag {
    raw: Raw,
    params: FlagParams,
    hub: Arc<Hub>,
    route: Arc<FlagRoute>,
    /// The value the last check-apply saw (`None`: unset).
    last: Option<String>,
    /// What the last check-apply sends.
    sent: Option<String>,
}

pub struct FlagRoute {
    path: String,
    key: String,
    value: Mutex<Option<String>>,
    /// Wakes the resource's watch after a POST.
    posted: Notify,
}

impl HttpFlag {
    pub fn build(hub: Arc<Hub>, name: &str, values: &ParamMap) -> Result<HttpFlag, BuildError> {
        let (raw, params) = Raw::decoded("http:server:flag", name, values, FlagParams::decode)?;
        let path = if params.path.is_empty() { name.to_string() } else { params.path.clone() };
        let route =
            Arc::new(FlagRoute { path, key: params.key.clone(), value: Mutex::new(None), posted: Notify::new() });
        Ok(HttpFlag { raw, params, hub, route, last: None, sent: None })
    }

    /// The value clients last posted (`None`: unset or posted empty).
    pub fn value(&self) -> Option<String> {
        self.route.value.lock().unwrap_or_else(|e| e.into_inner()).clone()
    }
}

impl Route for FlagRoute {
    fn accepts(&self, req: &Request) -> bool {
        req.path == self.path && req.method == Method::POST
    }

    fn shared(&self) -> bool {
        true
    }

    fn serve(self: Arc<Self>, req: Arc<Request>) -> BoxFuture<'static, Response> {
        Box::pin(async move {
            if !self.key.is_empty() {
                let value = req.form_values(&self.key).into_iter().next().filter(|v| !v.is_empty());
                tracing::info!(path = %self.path, key = %self.key, value = ?value, "flag posted");
                *self.value.lock().unwrap_or_else(|e| e.into_inner()) = value;
            }
            self.posted.notify_one();
            hyper::Response::new(super::empty())
        })
    }
}

#[async_trait]
impl Resource for HttpFlag {
    fn validate(&self) -> Result<(), ResError> {
        super::check_route_path(&self.raw, &self.route.path)
    }

    fn watch(&self, ctx: WatchCtx) -> BoxFuture<'static, Result<(), ResError>> {
        let hub = self.hub.clone();
        let route = self.route.clone();
        let server = self.params.server.clone();
        Box::pin(async move {
            let _listed = hub.routes.register(&server, route.clone() as Arc<dyn Route>);
            ctx.event();
            loop {
                tokio::select! {
                    _ = route.posted.notified() => ctx.event(),
                    _ = ctx.cancelled() => return Ok(()),
                }
            }
        })
    }

    async fn check_apply(&mut self, _ctx: &mut ApplyCtx, _apply: bool) -> Result<bool, ResError> {
        // Nothing on the system changes: the value is only recorded and sent.
        let value = self.value();
        let same = value == self.last;
        self.last = value.clone();
        self.sent = Some(value.unwrap_or_default());
        Ok(same)
    }

    crate::fingerprint_by_params!();

    fn sends(&self) -> Option<BTreeMap<String, Payload>> {
        self.sent.clone().map(|v| sends(vec![("value", Value::str(v))]))
    }
}

/// The `http:server:flag` kind: its params and send fields as the type checker sees them, and its constructor.
pub const HTTP_SERVER_FLAG: crate::contract::kind::Kind =
    crate::contract::kind::Kind::new("http:server:flag", FlagParams::FIELDS, |host, name, params| {
        Ok(Box::new(HttpFlag::build(host.http.clone(), name, params)?))
    })
    .sending(&[("value", "str")]);

#[cfg(test)]
mod tests {
    use super::*;
    use crate::contract::common::value_of;
    use crate::http::dispatch;
    use crate::http::proxy::MemUpstream;
    use bytes::Bytes;
    use hyper::StatusCode;

    fn flag(hub: &Arc<Hub>, name: &str, pairs: &[(&str, &str)]) -> HttpFlag {
        let values = pairs.iter().map(|(k, v)| (k.to_string(), Value::str(*v))).collect();
        HttpFlag::build(hub.clone(), name, &values).unwrap()
    }

    fn post(path: &str, body: &str) -> Arc<Request> {
        let mut req = Request::new(Method::POST, path);
        req.body = Bytes::from(body.to_string());
        Arc::new(req)
    }

    fn sent(f: &HttpFlag) -> String {
        let sends = f.sends().expect("sends after check-apply");
        value_of(&sends["value"]).unwrap().as_str().unwrap().to_string()
    }

    #[tokio::test]
    async fn flags_at_one_path_each_read_their_key() {
        let hub = Hub::with_upstream(Arc::new(MemUpstream::default()));
        let mut a = flag(&hub, "foo", &[("key", "done"), ("path", "/action")]);
        let mut b = flag(&hub, "bar", &[("key", "sshkey"), ("path", "/action")]);
        let routes: Vec<Arc<dyn Route>> = vec![a.route.clone(), b.route.clone()];
        let mut ctx = ApplyCtx::detached();
        assert!(a.check_apply(&mut ctx, true).await.unwrap(), "unset is the initial state");
        assert_eq!(sent(&a), "");

        let resp = dispatch(&routes, post("/action", "done=true&sshkey=AAAA")).await.expect("accepted");
        assert_eq!(resp.status(), StatusCode::OK);
        assert!(!a.check_apply(&mut ctx, true).await.unwrap(), "a new value is a change");
        assert!(!b.check_apply(&mut ctx, true).await.unwrap());
        assert_eq!((sent(&a), sent(&b)), ("true".into(), "AAAA".into()));
        assert!(a.check_apply(&mut ctx, true).await.unwrap(), "then it is settled");

        dispatch(&routes, post("/action", "done=")).await.unwrap();
        assert!(!a.check_apply(&mut ctx, true).await.unwrap());
        assert_eq!(sent(&a), "", "an empty post unsets the value");

        let get = Arc::new(Request::new(Method::GET, "/action"));
        assert!(dispatch(&routes, get).await.is_none(), "only POST is accepted");
    }

    #[test]
    fn a_relative_path_is_rejected() {
        let hub = Hub::with_upstream(Arc::new(MemUpstream::default()));
        let f = flag(&hub, "foo", &[("key", "k")]);
        assert!(
            f.validate()
                .unwrap_err()
                .message
                .contains("http:server:flag[foo]: field `path`: the path must be absolute")
        );
        assert!(flag(&hub, "/flag1", &[("key", "k")]).validate().is_ok());
    }
}
