//! `http:server:ui` and `http:server:ui:input`: a small web form under the ui's `path`
//! (default the name) on the server named by `server`, listing every input whose `path`
//! names this ui (any ui when empty). Each input's value is sent as `value` to other
//! resources.
//!
//! Under the ui path: `index.html` is a plain HTML form (no script needed: each field posts
//! to `save/` and is redirected back), `save/` takes `id` and `value` (JSON `null` on
//! success, `{"error": …}` otherwise, as mgmt), `list/` gives the elements as JSON
//! (`{"elements": [{kind, id, type, sort}]}`), `list/<id>` the value (`{"value": …}`) and
//! `watch/<id>` the value once it next changes (a long poll).
//!
//! An input's `type` is `text://` (default) or `range://?min=&max=&step=`. With `value`
//! the initial value is that param; with `store` it lives in a store and follows it:
//! `world://` is the world's plain key the `kv` kind and `world.getval` use (the local
//! store, or the cluster's with `--seeds`),
//! `local://` is the process value store of the `value` kind; the key is the resource name
//! unless the store URL has `?key=`. A value saved on the web is pushed to the store; a
//! change in the store (by anyone else) replaces the displayed value.

use lang::params::ParamMap;
use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};

use async_trait::async_trait;
use engine::{ApplyCtx, InitCtx, Payload, ResError, Resource, WatchCtx};
use futures::future::BoxFuture;
use hyper::header::{self, HeaderValue};
use hyper::{Method, StatusCode};
use lang::value::Value;
use serde_json::json;
use tokio::sync::{Notify, watch};

use super::{Hub, Request, Response, Route};
use crate::contract::common::{Raw, res_error, sends};
use crate::contract::params::{BuildError, Params};
use crate::contract::typed::Fingerprint as _;
use crate::util::registry::Registry;
use crate::util::text::escape_markup;

const INPUT_KIND: &str = "http:server:ui:input";

crate::params! {
    /// `http:server:ui`'s params.
    #[derive(Clone, Debug, PartialEq)]
    pub struct UiParams {
        pub server: String,
        pub path: String,
        pub data: UiData = UiData::default(),
    }
}

/// The page's `data`: its title and extra `<head>` markup.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct UiData {
    pub title: String,
    pub head: String,
}

crate::fingerprint_fields!(UiData { title, head });

impl crate::contract::typed::ParamType for UiData {
    const TYPE: &'static str = "struct{title str; head str}";
    fn from_value(_: &Params<'_>, _: &str, value: &Value) -> Result<Self, BuildError> {
        let field = |n: &str| match value {
            Value::Struct(fields) => {
                fields.iter().find(|(k, _)| k.as_str() == n).and_then(|(_, v)| v.as_str()).unwrap_or("").to_string()
            }
            _ => String::new(),
        };
        Ok(UiData { title: field("title"), head: field("head") })
    }
}

pub struct HttpUi {
    raw: Raw,
    params: UiParams,
    hub: Arc<Hub>,
    route: Arc<UiRoute>,
}

pub struct UiRoute {
    /// The ui resource's name: inputs name it in their `path`.
    name: String,
    /// The public prefix, ending in `/`.
    base: String,
    /// The `path` as configured (a request for it without the slash is redirected).
    path: String,
    title: String,
    head: String,
    inputs: Arc<Registry<Input>>,
}

impl HttpUi {
    pub fn build(hub: Arc<Hub>, name: &str, values: &ParamMap) -> Result<HttpUi, BuildError> {
        let (raw, params) = Raw::decoded("http:server:ui", name, values, UiParams::decode)?;
        let path = if params.path.is_empty() { name.to_string() } else { params.path.clone() };
        let base = if path.ends_with('/') { path.clone() } else { format!("{path}/") };
        let route = Arc::new(UiRoute {
            name: name.to_string(),
            base,
            path,
            title: params.data.title.clone(),
            head: params.data.head.clone(),
            inputs: hub.inputs.clone(),
        });
        Ok(HttpUi { raw, params, hub, route })
    }
}

impl UiRoute {
    /// This ui's inputs, ordered by `sort` then id.
    fn inputs(&self) -> Vec<Arc<Input>> {
        let mut all = self.inputs.members(&self.name);
        all.sort_by(|a, b| (&a.sort, &a.id).cmp(&(&b.sort, &b.id)));
        all
    }

    fn input(&self, id: &str) -> Option<Arc<Input>> {
        self.inputs.members(&self.name).into_iter().find(|i| i.id == id)
    }

    fn redirect(&self, to: &str, status: StatusCode) -> Response {
        let mut resp = super::text(status, &format!("<a href=\"{}\">{}</a>.", escape_markup(to), status.as_str()));
        if let Ok(v) = HeaderValue::from_str(to) {
            resp.headers_mut().insert(header::LOCATION, v);
        }
        resp
    }

    async fn answer(&self, req: &Request) -> Response {
        let rel = if req.path == self.path && !self.path.ends_with('/') {
            ""
        } else {
            match req.path.strip_prefix(&self.base) {
                Some(rel) => rel,
                None => return super::not_found(),
            }
        };
        let get = req.method == Method::GET || req.method == Method::HEAD;
        match rel {
            "" if get => self.redirect(&format!("{}index.html", self.base), StatusCode::MOVED_PERMANENTLY),
            "index.html" if get => super::respond(StatusCode::OK, "text/html; charset=utf-8", self.page()),
            "save/" if req.method == Method::POST => self.save(req),
            "list/" if get => {
                let elements: Vec<_> = self.inputs().iter().map(|i| i.element()).collect();
                super::json(StatusCode::OK, &json!({ "elements": elements }))
            }
            _ => {
                if let Some(id) = rel.strip_prefix("list/").filter(|_| get) {
                    return match self.input(id) {
                        Some(input) => super::json(StatusCode::OK, &json!({ "value": input.value() })),
                        None => not_found_id(id),
                    };
                }
                if let Some(id) = rel.strip_prefix("watch/").filter(|_| get) {
                    return match self.input(id) {
                        Some(input) => input.next_value(req).await,
                        None => not_found_id(id),
                    };
                }
                super::not_found()
            }
        }
    }

    fn save(&self, req: &Request) -> Response {
        let form = req.form();
        let field = |k: &str| form.iter().filter(|(key, _)| key == k).map(|(_, v)| v.clone()).collect::<Vec<_>>();
        let id = field("id").into_iter().next().unwrap_or_default();
        if id.is_empty() {
            return super::json(StatusCode::BAD_REQUEST, &json!({ "error": "missing id" }));
        }
        let values = field("value");
        if values.is_empty() {
            return super::json(StatusCode::BAD_REQUEST, &json!({ "error": "missing value" }));
        }
        let Some(input) = self.input(&id) else { return not_found_id(&id) };
        if let Err(e) = input.set_from_web(&values) {
            return super::json(StatusCode::BAD_REQUEST, &json!({ "error": format!("bad data: {e}") }));
        }
        if field("redirect").first().is_some_and(|r| r == "index.html") {
            return self.redirect(&format!("{}index.html", self.base), StatusCode::SEE_OTHER);
        }
        super::json(StatusCode::OK, &serde_json::Value::Null)
    }

    fn page(&self) -> String {
        let host = nix::unistd::gethostname().map(|h| h.to_string_lossy().into_owned()).unwrap_or_default();
        let title = escape_markup(&self.title);
        let mut out = String::new();
        out.push_str("<!DOCTYPE html>\n<html>\n<head>\n<meta charset=\"utf-8\">\n");
        out.push_str("<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n");
        out.push_str(&format!("<title>{title}</title>\n"));
        // `head` is raw HTML by design (mgmt's semantics): the operator writes it.
        out.push_str(&self.head);
        out.push_str("\n</head>\n<body>\n");
        out.push_str(&format!("<h1>{title}</h1>\n"));
        for input in self.inputs() {
            out.push_str(&input.form_html());
        }
        out.push_str(&format!(
            "<p><small>tend {} on {}</small></p>\n</body>\n</html>\n",
            env!("CARGO_PKG_VERSION"),
            escape_markup(&host)
        ));
        out
    }
}

fn not_found_id(id: &str) -> Response {
    super::json(StatusCode::BAD_REQUEST, &json!({ "error": format!("id `{id}` not found") }))
}

impl Route for UiRoute {
    fn accepts(&self, req: &Request) -> bool {
        req.path == self.path || req.path.starts_with(&self.base)
    }

    fn serve(self: Arc<Self>, req: Arc<Request>) -> BoxFuture<'static, Response> {
        Box::pin(async move { self.answer(&req).await })
    }
}

#[async_trait]
impl Resource for HttpUi {
    fn validate(&self) -> Result<(), ResError> {
        super::check_route_path(&self.raw, &self.route.path)
    }

    fn watch(&self, ctx: WatchCtx) -> BoxFuture<'static, Result<(), ResError>> {
        let route = self.route.clone() as Arc<dyn Route>;
        self.hub.routes.listed_while_running(self.params.server.clone(), route, ctx)
    }

    async fn check_apply(&mut self, _ctx: &mut ApplyCtx, _apply: bool) -> Result<bool, ResError> {
        Ok(true)
    }

    crate::fingerprint_by_params!();
}

/// One form field as the ui sees it, shared with its `http:server:ui:input` resource.
pub struct Input {
    id: String,
    /// `text` or `range`.
    scheme: String,
    /// `min`, `max`, `step` for a range (the valid integers given).
    bounds: BTreeMap<String, i64>,
    sort: String,
    state: Mutex<InputState>,
    /// Wakes the resource after a web save.
    saved: Notify,
    /// Bumped on every value change; `watch/<id>` waits on it.
    changed: watch::Sender<u64>,
}

struct InputState {
    value: String,
    /// The store changed since the last check-apply (so it wins over the web value).
    store_event: bool,
}

impl Input {
    pub fn id(&self) -> &str {
        &self.id
    }

    pub fn value(&self) -> String {
        self.lock().value.clone()
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, InputState> {
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }

    fn set(&self, value: String) {
        let mut s = self.lock();
        if s.value != value {
            s.value = value;
            drop(s);
            self.changed.send_modify(|n| *n += 1);
        }
    }

    /// A value submitted on the web: one value, valid for the input type.
    pub fn set_from_web(&self, values: &[String]) -> Result<(), String> {
        let [value] = values else { return Err(format!("unexpected length of {}", values.len())) };
        self.check(value)?;
        self.set(value.clone());
        self.saved.notify_one();
        Ok(())
    }

    fn check(&self, value: &str) -> Result<(), String> {
        if value.contains(['\n', '\r']) {
            return Err("the value must be a single line".into());
        }
        if self.scheme == "range" {
            let n: i64 = value.trim().parse().map_err(|_| format!("`{value}` is not an integer"))?;
            if self.bounds.get("min").is_some_and(|min| n < *min) || self.bounds.get("max").is_some_and(|max| n > *max)
            {
                return Err(format!("{n} is out of range"));
            }
        }
        Ok(())
    }

    fn element(&self) -> serde_json::Value {
        let mut ty: serde_json::Map<String, serde_json::Value> =
            self.bounds.iter().map(|(k, v)| (k.clone(), json!(v.to_string()))).collect();
        ty.insert("type".into(), json!(self.scheme));
        json!({ "kind": INPUT_KIND, "id": self.id, "type": ty, "sort": self.sort })
    }

    fn form_html(&self) -> String {
        let id = escape_markup(&self.id);
        let value = escape_markup(&self.value());
        let mut attrs = format!("type=\"{}\"", if self.scheme == "range" { "range" } else { "text" });
        for (k, v) in &self.bounds {
            attrs.push_str(&format!(" {k}=\"{v}\""));
        }
        let shown = if self.scheme == "range" { format!(" <output>{value}</output>") } else { String::new() };
        format!(
            "<form method=\"post\" action=\"save/\">\n<label for=\"{id}\">{id}</label>\n\
             <input type=\"hidden\" name=\"id\" value=\"{id}\">\n\
             <input type=\"hidden\" name=\"redirect\" value=\"index.html\">\n\
             <input {attrs} id=\"{id}\" name=\"value\" value=\"{value}\">{shown}\n\
             <button type=\"submit\">save</button>\n</form>\n"
        )
    }

    /// Answers `watch/<id>` once the value changes (503 when the server stops).
    async fn next_value(&self, req: &Request) -> Response {
        let mut rx = self.changed.subscribe();
        tokio::select! {
            changed = rx.changed() => {
                if changed.is_ok() {
                    return super::json(StatusCode::OK, &json!({ "value": self.value() }));
                }
                super::status(StatusCode::SERVICE_UNAVAILABLE)
            }
            _ = req.shutdown.cancelled() => super::status(StatusCode::SERVICE_UNAVAILABLE),
        }
    }
}

crate::params! {
    /// `http:server:ui:input`'s params.
    #[derive(Clone, Debug, PartialEq)]
    pub struct InputParams {
        pub path: String,
        pub id: String,
        pub value: String,
        pub store: String,
        /// A `text://` URL with options (`?max=…`).
        pub r#type("type"): String => |p, f| p.str_or(f, "text://"),
        pub sort: String,
    }
}

/// Where a `store` input keeps its value.
#[derive(Clone, Debug, PartialEq)]
enum Store {
    None,
    /// The process value store, under this key.
    Local(String),
    /// The world, under this plain key (followed from init on).
    World(String),
}

pub struct HttpUiInput {
    raw: Raw,
    params: InputParams,
    hub: Arc<Hub>,
    /// The host's value store, for a `local://` store.
    values: Arc<crate::basics::value::ValueStore>,
    input: Arc<Input>,
    store: Result<Store, String>,
    world: Arc<dyn world::World>,
    /// The key of a `world://` store as last seen (after init).
    view: Option<world::Follow>,
    /// The value the last apply sent.
    last: Option<String>,
    sent: Option<String>,
}

/// `scheme://host?query` into the scheme and the query pairs.
fn parse_url(text: &str) -> Result<(String, Vec<(String, String)>), String> {
    let (scheme, rest) = text.split_once("://").ok_or_else(|| format!("`{text}` is not a URL (`scheme://…`)"))?;
    let query = rest.split_once('?').map(|(_, q)| q).unwrap_or("");
    Ok((scheme.to_string(), form_urlencoded::parse(query.as_bytes()).into_owned().collect()))
}

impl HttpUiInput {
    pub fn build(
        hub: Arc<Hub>,
        store_values: Arc<crate::basics::value::ValueStore>,
        world: Arc<dyn world::World>,
        name: &str,
        values: &ParamMap,
    ) -> Result<HttpUiInput, BuildError> {
        let (raw, params) = Raw::decoded(INPUT_KIND, name, values, InputParams::decode)?;
        let (scheme, query) = parse_url(&params.r#type).unwrap_or_default();
        let bounds = if scheme == "range" {
            query
                .iter()
                .filter(|(k, _)| ["min", "max", "step"].contains(&k.as_str()))
                .filter_map(|(k, v)| v.parse::<i64>().ok().map(|v| (k.clone(), v)))
                .collect()
        } else {
            BTreeMap::new()
        };
        let id = if params.id.is_empty() { name.to_string() } else { params.id.clone() };
        let store = if params.store.is_empty() {
            Ok(Store::None)
        } else {
            parse_url(&params.store).and_then(|(scheme, query)| {
                let key = query
                    .into_iter()
                    .find(|(k, v)| k == "key" && !v.is_empty())
                    .map(|(_, v)| v)
                    .unwrap_or_else(|| name.to_string());
                match scheme.as_str() {
                    "local" => Ok(Store::Local(key)),
                    "world" => Ok(Store::World(key)),
                    other => Err(format!("unknown store scheme `{other}` (expected `local` or `world`)")),
                }
            })
        };
        let input = Arc::new(Input {
            id,
            scheme,
            bounds,
            sort: params.sort.clone(),
            // At startup the store (if any) is the authority.
            state: Mutex::new(InputState { value: params.value.clone(), store_event: true }),
            saved: Notify::new(),
            changed: watch::Sender::new(0),
        });
        Ok(HttpUiInput {
            raw,
            params,
            hub,
            values: store_values,
            input,
            store,
            world,
            view: None,
            last: None,
            sent: None,
        })
    }

    /// The value web clients see.
    pub fn value(&self) -> String {
        self.input.value()
    }

    fn err(&self, field: &str, message: impl Into<String>) -> ResError {
        res_error(BuildError {
            kind: INPUT_KIND.into(),
            name: self.raw.name.clone(),
            field: Some(field.into()),
            message: message.into(),
        })
    }

    fn store_get(&self) -> Result<Option<String>, ResError> {
        match self.store.as_ref().unwrap_or(&Store::None) {
            Store::None => Ok(None),
            Store::Local(key) => match self.values.get(key) {
                None => Ok(None),
                Some(Value::Str(s)) => Ok(Some(s.to_string())),
                Some(other) => Err(self.err("store", format!("the local value `{key}` is not a str: {other}"))),
            },
            Store::World(key) => {
                let view = self.view.as_ref().ok_or_else(|| ResError::new("check-apply before init"))?;
                Ok(view.borrow().entries.get(key).cloned())
            }
        }
    }

    /// Whether the store's value is known (a world key never read yet is not).
    fn store_known(&self) -> bool {
        match self.store.as_ref().unwrap_or(&Store::None) {
            Store::World(_) => self.view.as_ref().is_some_and(|v| v.borrow().read),
            _ => true,
        }
    }

    async fn store_set(&self, value: &str) -> Result<(), ResError> {
        match self.store.as_ref().unwrap_or(&Store::None) {
            Store::None => Ok(()),
            Store::Local(key) => {
                self.values.set(key, Value::str(value));
                Ok(())
            }
            Store::World(key) => {
                let what = format!("{INPUT_KIND}[{}]", self.raw.name);
                let written =
                    self.world.set(key, Some(value)).await.map_err(|e| ResError::transient(format!("{what}: {e}")))?;
                crate::cluster::world::note_queued(written, &what);
                Ok(())
            }
        }
    }

    fn send(&mut self, value: String) {
        self.sent = Some(value);
    }
}

#[async_trait]
impl Resource for HttpUiInput {
    fn validate(&self) -> Result<(), ResError> {
        if self.input.id.is_empty() {
            return Err(self.err("id", "empty id"));
        }
        if !self.params.value.is_empty() && !self.params.store.is_empty() {
            return Err(self.err("store", "may only use either value or store"));
        }
        match parse_url(&self.params.r#type) {
            Ok((scheme, _)) if scheme == "text" || scheme == "range" => {}
            Ok((scheme, _)) => return Err(self.err("type", format!("unknown scheme `{scheme}` (text or range)"))),
            Err(e) => return Err(self.err("type", e)),
        }
        self.store.as_ref().map_err(|e| self.err("store", e.clone()))?;
        Ok(())
    }

    async fn init(&mut self, _ctx: &InitCtx) -> Result<(), ResError> {
        if let Ok(Store::World(key)) = &self.store {
            self.view = Some(self.world.follow(&world::Topic::Val(key.clone())));
        }
        Ok(())
    }

    fn watch(&self, ctx: WatchCtx) -> BoxFuture<'static, Result<(), ResError>> {
        let hub = self.hub.clone();
        let input = self.input.clone();
        let ui = self.params.path.clone();
        let store = self.store.clone().unwrap_or(Store::None);
        let mut view = self.view.clone();
        let values = self.values.clone();
        Box::pin(async move {
            let _listed = hub.inputs.register(&ui, input.clone());
            if !matches!(store, Store::World(_)) {
                view = None;
            }
            let mut last_world = view.as_mut().map(|v| v.borrow_and_update().entries.clone());
            let mut locals = matches!(store, Store::Local(_)).then(|| values.changes());
            let local_key = match &store {
                Store::Local(key) => Some(key.clone()),
                _ => None,
            };
            let mut last_local = local_key.as_ref().and_then(|k| values.get(k));
            ctx.event();
            loop {
                tokio::select! {
                    _ = input.saved.notified() => ctx.event(),
                    changed = async { view.as_mut().expect("guarded").changed().await }, if view.is_some() => {
                        if changed.is_err() {
                            view = None;
                            continue;
                        }
                        let now = view.as_mut().map(|v| v.borrow_and_update().entries.clone());
                        if now != last_world {
                            last_world = now;
                            input.lock().store_event = true;
                            ctx.event();
                        }
                    }
                    changed = async { locals.as_mut().expect("guarded").changed().await }, if locals.is_some() => {
                        if changed.is_err() {
                            locals = None;
                            continue;
                        }
                        let now = local_key.as_ref().and_then(|k| values.get(k));
                        if now != last_local {
                            last_local = now;
                            input.lock().store_event = true;
                            ctx.event();
                        }
                    }
                    _ = ctx.cancelled() => return Ok(()),
                }
            }
        })
    }

    async fn check_apply(&mut self, ctx: &mut ApplyCtx, apply: bool) -> Result<bool, ResError> {
        let key = format!("{INPUT_KIND}[{}]", self.raw.name);
        if matches!(self.store, Ok(Store::None)) {
            let value = self.input.value();
            let same = self.last.as_ref() == Some(&value);
            self.send(value.clone());
            if same {
                return Ok(true);
            }
            if apply {
                tracing::info!(resource = %key, %value, "sending");
                self.last = Some(value);
            }
            return Ok(false);
        }

        if !self.store_known() {
            // The watch wakes this resource once the world key was read.
            tracing::info!(resource = %key, "waiting for the world to be read");
            return Ok(false);
        }
        // Reconcile the store and the web: whichever changed last wins.
        let stored = self.store_get()?;
        let (web, store_event) = {
            let mut s = self.input.lock();
            (s.value.clone(), std::mem::replace(&mut s.store_event, false))
        };
        if stored.as_ref() == Some(&web) {
            self.send(web);
            return Ok(true);
        }
        if !apply {
            // Nothing consumed: look again next time.
            self.input.lock().store_event |= store_event;
            ctx.report(format!("{key}: would reconcile the store and the web value"));
            self.send(web);
            return Ok(false);
        }
        let value = match (store_event, stored) {
            (true, Some(stored)) => {
                self.input.set(stored.clone());
                stored
            }
            _ => {
                self.store_set(&web).await?;
                web
            }
        };
        tracing::info!(resource = %key, %value, "sending");
        self.send(value);
        Ok(false)
    }

    crate::fingerprint_by_params!();

    fn sends(&self) -> Option<BTreeMap<String, Payload>> {
        self.sent.clone().map(|v| sends(vec![("value", Value::str(v))]))
    }
}

/// The `http:server:ui` kind: its params and send fields as the type checker sees them, and its constructor.
pub const HTTP_SERVER_UI: crate::contract::kind::Kind =
    crate::contract::kind::Kind::new("http:server:ui", UiParams::FIELDS, |host, name, params| {
        Ok(Box::new(HttpUi::build(host.http.clone(), name, params)?))
    });

/// The `http:server:ui:input` kind: its params and send fields as the type checker sees them, and its constructor.
pub const HTTP_SERVER_UI_INPUT: crate::contract::kind::Kind =
    crate::contract::kind::Kind::new("http:server:ui:input", InputParams::FIELDS, |host, name, params| {
        Ok(Box::new(HttpUiInput::build(host.http.clone(), host.values.clone(), host.world.clone(), name, params)?))
    })
    .sending(&[("value", "str")]);

#[cfg(test)]
mod tests {
    use super::*;
    use crate::contract::common::value_of;
    use crate::http::body_bytes;
    use crate::http::proxy::MemUpstream;
    use bytes::Bytes;

    fn hub() -> Arc<Hub> {
        Hub::with_upstream(Arc::new(MemUpstream::default()))
    }

    fn input(hub: &Arc<Hub>, name: &str, pairs: &[(&str, &str)]) -> HttpUiInput {
        input_in(hub, name, pairs, Arc::new(world::Detached::new("h1")))
    }

    fn input_in(hub: &Arc<Hub>, name: &str, pairs: &[(&str, &str)], world: Arc<dyn world::World>) -> HttpUiInput {
        let values = pairs.iter().map(|(k, v)| (k.to_string(), Value::str(*v))).collect();
        HttpUiInput::build(hub.clone(), Arc::default(), world, name, &values).unwrap()
    }

    fn ui(hub: &Arc<Hub>) -> HttpUi {
        let data = Value::strukt(vec![("title".into(), Value::str("my <ui>")), ("head".into(), Value::str(""))]);
        let values = [("data".to_string(), data)].into_iter().collect();
        HttpUi::build(hub.clone(), "/ui/", &values).unwrap()
    }

    async fn call(route: &Arc<UiRoute>, method: Method, target: &str, body: &str) -> (StatusCode, String) {
        let mut req = Request::new(method, target);
        req.body = Bytes::from(body.to_string());
        let resp = route.clone().serve(Arc::new(req)).await;
        let status = resp.status();
        (status, String::from_utf8_lossy(&body_bytes(resp).await.unwrap()).into_owned())
    }

    fn sent(i: &HttpUiInput) -> String {
        value_of(&i.sends().unwrap()["value"]).unwrap().as_str().unwrap().to_string()
    }

    #[test]
    fn validation_names_the_field() {
        let h = hub();
        let both = input(&h, "a", &[("value", "x"), ("store", "world://")]);
        assert!(both.validate().unwrap_err().message.contains("field `store`: may only use either"));
        let bad = input(&h, "a", &[("type", "checkbox://")]);
        assert!(bad.validate().unwrap_err().message.contains("field `type`: unknown scheme `checkbox`"));
        let bad = input(&h, "a", &[("store", "etcd://")]);
        assert!(bad.validate().unwrap_err().message.contains("unknown store scheme `etcd`"));
        assert!(input(&h, "a", &[("type", "range://?min=0&max=5&step=1")]).validate().is_ok());
    }

    #[tokio::test]
    async fn the_form_lists_saves_and_sends_values() {
        let h = hub();
        let page = ui(&h);
        let mut text = input(&h, "text1", &[("value", "default"), ("sort", "a")]);
        let range = input(&h, "range1", &[("value", "2"), ("type", "range://?min=0&max=5&step=1"), ("sort", "b")]);
        let _t = h.inputs.register("", text.input.clone());
        let _r = h.inputs.register("/ui/", range.input.clone());
        let route = page.route.clone();

        let (status, html) = call(&route, Method::GET, "/ui/index.html", "").await;
        assert_eq!(status, StatusCode::OK);
        assert!(html.contains("<title>my &lt;ui&gt;</title>"), "{html}");
        assert!(html.find("id=\"text1\"").unwrap() < html.find("id=\"range1\"").unwrap(), "sorted by `sort`");
        assert!(html.contains("type=\"range\" max=\"5\" min=\"0\" step=\"1\""), "{html}");
        assert_eq!(call(&route, Method::GET, "/ui/", "").await.0, StatusCode::MOVED_PERMANENTLY);

        let (_, list) = call(&route, Method::GET, "/ui/list/", "").await;
        let list: serde_json::Value = serde_json::from_str(&list).unwrap();
        assert_eq!(list["elements"][1]["type"]["type"], "range");
        assert_eq!(list["elements"][1]["type"]["max"], "5");
        assert_eq!(list["elements"][0]["kind"], INPUT_KIND);

        let mut ctx = ApplyCtx::detached();
        assert!(!text.check_apply(&mut ctx, true).await.unwrap(), "the first value is sent");
        assert_eq!(sent(&text), "default");
        assert!(text.check_apply(&mut ctx, true).await.unwrap());

        let watcher = {
            let route = route.clone();
            tokio::spawn(async move { call(&route, Method::GET, "/ui/watch/text1", "").await })
        };
        tokio::time::sleep(std::time::Duration::from_millis(20)).await;
        let (status, body) = call(&route, Method::POST, "/ui/save/", "id=text1&value=hello").await;
        assert_eq!((status, body.as_str()), (StatusCode::OK, "null"));
        assert_eq!(watcher.await.unwrap().1, r#"{"value":"hello"}"#);
        assert!(!text.check_apply(&mut ctx, true).await.unwrap());
        assert_eq!(sent(&text), "hello");
        assert_eq!(call(&route, Method::GET, "/ui/list/text1", "").await.1, r#"{"value":"hello"}"#);

        let (status, body) = call(&route, Method::POST, "/ui/save/", "id=range1&value=9").await;
        assert_eq!(status, StatusCode::BAD_REQUEST);
        assert!(body.contains("out of range"), "{body}");
        let (status, _) = call(&route, Method::POST, "/ui/save/", "id=range1&value=3&redirect=index.html").await;
        assert_eq!(status, StatusCode::SEE_OTHER);
        assert_eq!(range.value(), "3");
        assert!(call(&route, Method::POST, "/ui/save/", "id=nope&value=1").await.1.contains("not found"));
    }

    #[tokio::test]
    async fn a_world_store_input_follows_the_kv_store_both_ways() {
        let dir = tempfile::tempdir().unwrap();
        let h = hub();
        let world = Arc::new(crate::cluster::world::local(dir.path(), "h1"));
        let mut i = input_in(&h, "text1", &[("store", "world://")], world.clone());
        let init = InitCtx {
            key: engine::ResKey::new(INPUT_KIND, "text1"),
            var_dir: Some(dir.path().join("var")),
            state_dir: dir.path().into(),
        };
        i.init(&init).await.unwrap();
        let file = dir.path().join("kv/text1/value");
        let mut ctx = ApplyCtx::detached();

        assert!(!i.check_apply(&mut ctx, true).await.unwrap(), "an absent key is created");
        assert_eq!(std::fs::read_to_string(&file).unwrap(), "");
        assert!(i.check_apply(&mut ctx, true).await.unwrap());

        i.input.set_from_web(&["from web".into()]).unwrap();
        assert!(!i.check_apply(&mut ctx, false).await.unwrap());
        assert_eq!(std::fs::read_to_string(&file).unwrap(), "", "noop writes nothing");
        assert!(!i.check_apply(&mut ctx, true).await.unwrap());
        assert_eq!(std::fs::read_to_string(&file).unwrap(), "from web");
        assert_eq!(sent(&i), "from web");

        world::World::set(world.as_ref(), "text1", Some("from world")).await.unwrap();
        i.input.lock().store_event = true; // what the watch does on the change
        assert!(!i.check_apply(&mut ctx, true).await.unwrap());
        assert_eq!((i.value(), sent(&i)), ("from world".into(), "from world".into()));
    }

    #[tokio::test]
    async fn a_local_store_input_uses_the_value_store() {
        let h = hub();
        let key = "tend-ui-test-local-key";
        let mut i = input(&h, "x", &[("store", &format!("local://?key={key}"))]);
        i.values.set(key, Value::str("stored"));
        let mut ctx = ApplyCtx::detached();
        assert!(!i.check_apply(&mut ctx, true).await.unwrap());
        assert_eq!(i.value(), "stored", "at startup the store wins");
        i.input.set_from_web(&["web".into()]).unwrap();
        assert!(!i.check_apply(&mut ctx, true).await.unwrap());
        assert_eq!(i.values.get(key), Some(Value::str("web")));
    }
}
