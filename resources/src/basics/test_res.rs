//! `test`: the engine test fixture of mgmt's conformance suite. Accepts every Go-width
//! field (range-checked), fails validation on request (`validatebool`, `validateerror`),
//! never compares equal with `comparefail`, sends `hello` (= `sendvalue`) and `answer`
//! (= 42), insists on received keys with `expectrecv`, and fails after `waitforerror` ms.
//! Otherwise always in the right state.

use lang::params::ParamMap;
use std::collections::{BTreeMap, BTreeSet};
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use async_trait::async_trait;
use engine::{ApplyCtx, Payload, ResError, Resource};
use lang::value::Value;

use crate::contract::common::{Raw, sends};
use crate::contract::params::{BuildError, Params};
use crate::contract::typed::Fingerprint as _;

crate::params! {
    /// Every field of mgmt's test resource, each with its Go width (range-checked on
    /// decode); optional ones stay `None` when not given, so the fingerprint tells them apart.
    #[derive(Clone, Debug, PartialEq)]
    pub struct TestParams {
        pub bool: Option<bool>,
        pub str: Option<String>,
        pub int: Option<i64>,
        pub int8: Option<i8>,
        pub int16: Option<i16>,
        pub int32: Option<i32>,
        pub int64: Option<i64>,
        pub uint: Option<i64> => |p, f| p.opt_int_in(f, 0, i64::MAX, "uint"),
        pub uint8: Option<u8>,
        pub uint16: Option<u16>,
        pub uint32: Option<u32>,
        pub uint64: Option<u64>,
        pub byte: Option<u8>,
        pub rune: Option<i32>,
        pub float32: Option<f64> => float32,
        pub float64: Option<f64>,
        pub boolptr: Option<bool>,
        pub stringptr: Option<String>,
        pub int64ptr: Option<i64>,
        pub int8ptr: Option<i8>,
        pub uint8ptr: Option<u8>,
        pub int8ptrptrptr: Option<i8>,
        pub slicestring: Option<Vec<String>>,
        pub mapintfloat: Option<Value> as "map{int: float}",
        pub mixedstruct: Option<Value> as "struct{somebool bool; somestr str; someint int; somefloat float}",
        pub interface: Option<Value>,
        pub anotherstr: Option<String>,
        pub func1: Option<Value> as "func(int) str",
        pub validatebool: bool,
        pub validateerror: String,
        pub alwaysgroup: bool,
        pub comparefail: bool,
        /// What `hello` sends.
        pub sendvalue: Option<String>,
        /// Keys that must have been received before check-apply.
        pub expectrecv: Option<Vec<String>>,
        pub onlyshow: Option<Vec<String>>,
        /// Milliseconds after which the watch fails.
        pub waitforerror: Option<u64>,
        pub comment: Option<String>,
    }
}

/// A float that must fit Go's `float32`.
fn float32(p: &Params<'_>, field: &str) -> Result<Option<f64>, BuildError> {
    let f = p.opt_float(field)?;
    if let Some(f) = f
        && f.is_finite()
        && f.abs() > f64::from(f32::MAX)
    {
        return Err(p.error(Some(field), format!("float `{f}` does not fit into `float32` field")));
    }
    Ok(f)
}

pub struct Test {
    raw: Raw,
    params: TestParams,
    received: BTreeSet<String>,
    /// Makes every `comparefail` instance unique.
    serial: u64,
}

impl Test {
    pub fn build(name: &str, values: &ParamMap) -> Result<Test, BuildError> {
        static SERIAL: AtomicU64 = AtomicU64::new(0);
        let (raw, params) = Raw::decoded("test", name, values, TestParams::decode)?;
        Ok(Test { raw, params, received: BTreeSet::new(), serial: SERIAL.fetch_add(1, Ordering::SeqCst) })
    }

    pub fn params(&self) -> &TestParams {
        &self.params
    }
}

#[async_trait]
impl Resource for Test {
    fn validate(&self) -> Result<(), ResError> {
        let err = |field: &str, message: String| self.raw.invalid(Some(field), message);
        if self.params.validatebool {
            return Err(err("validatebool", "the validate param was set to true".into()));
        }
        if !self.params.validateerror.is_empty() {
            return Err(err(
                "validateerror",
                format!("the validate error param was set to: {}", self.params.validateerror),
            ));
        }
        Ok(())
    }

    async fn check_apply(&mut self, ctx: &mut ApplyCtx, _apply: bool) -> Result<bool, ResError> {
        let key = format!("test[{}]", self.raw.name);
        for changed in &ctx.recv_changed {
            tracing::debug!(resource = %key, param = %changed, "received a new value");
        }
        if ctx.refresh {
            tracing::info!(resource = %key, "received a notification");
        }
        if let Some(expected) = &self.params.expectrecv {
            let missing: Vec<&String> = expected.iter().filter(|k| !self.received.contains(*k)).collect();
            if !missing.is_empty() {
                let list: Vec<&str> = missing.iter().map(|s| s.as_str()).collect();
                return Err(ResError::new(format!("{key}: expected to receive on: {}", list.join(", "))));
            }
        }
        if let Some(ms) = self.params.waitforerror {
            tokio::select! {
                _ = tokio::time::sleep(Duration::from_millis(ms)) => {}
                _ = ctx.cancel.cancelled() => {}
            }
            return Err(ResError::new(format!("{key}: the waitforerror param was set")));
        }
        Ok(true)
    }

    fn fingerprint(&self) -> String {
        if self.params.comparefail {
            return format!("comparefail #{}", self.serial);
        }
        self.params.fingerprint()
    }

    fn refreshable(&self) -> bool {
        true
    }

    fn sends(&self) -> Option<BTreeMap<String, Payload>> {
        let hello = self.params.sendvalue.clone().unwrap_or_default();
        Some(sends(vec![("hello", Value::str(hello)), ("answer", Value::Int(42))]))
    }

    fn recv(&mut self, key: &str, value: &Payload) -> Result<bool, ResError> {
        let changed = self.raw.recv(key, value, &mut self.params, TestParams::decode)?;
        self.received.insert(key.to_string());
        Ok(changed)
    }
}

/// The `test` kind: its params and send fields as the type checker sees them, and its constructor.
pub const TEST: crate::contract::kind::Kind =
    crate::contract::kind::Kind::new("test", TestParams::FIELDS, |_host, name, params| {
        Ok(Box::new(Test::build(name, params)?))
    })
    .sending(&[("hello", "str"), ("answer", "int")])
    .receiving()
    .in_graph(crate::contract::kind::InGraph {
        // As mgmt's: a `test` takes others into its group only with `alwaysgroup`.
        autogroup: Some(crate::contract::kind::AutoGroup {
            by_default: true,
            members: &[],
            notified_apart: false,
            fits: |group, _| crate::contract::group::bool_param(group, "alwaysgroup"),
            build: None,
        }),
        ..crate::contract::kind::InGraph::NONE
    });
