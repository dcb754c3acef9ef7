//! `test`: the engine test fixture of mgmt's conformance suite. Accepts every Go-width
//! field (range-checked), fails validation on request (`validatebool`, `validateerror`),
//! never compares equal with `comparefail`, sends `hello` (= `sendvalue`) and `answer`
//! (= 42), insists on received keys with `expectrecv`, and fails after `waitforerror` ms.
//! Otherwise always in the right state.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use async_trait::async_trait;
use engine::{ApplyCtx, Payload, ResError, Resource};
use lang::value::Value;

use crate::common::{Raw, res_error, sends};
use crate::params::{BuildError, Params};

/// Go integer widths of the fields that have one: (field, min, max, Go type).
const WIDTHS: &[(&str, i64, i64, &str)] = &[
    ("int8", i8::MIN as i64, i8::MAX as i64, "int8"),
    ("int16", i16::MIN as i64, i16::MAX as i64, "int16"),
    ("int32", i32::MIN as i64, i32::MAX as i64, "int32"),
    ("rune", i32::MIN as i64, i32::MAX as i64, "int32"),
    ("uint", 0, i64::MAX, "uint"),
    ("uint8", 0, u8::MAX as i64, "uint8"),
    ("byte", 0, u8::MAX as i64, "uint8"),
    ("uint16", 0, u16::MAX as i64, "uint16"),
    ("uint32", 0, u32::MAX as i64, "uint32"),
    ("uint64", 0, i64::MAX, "uint64"),
    ("int8ptr", i8::MIN as i64, i8::MAX as i64, "int8"),
    ("uint8ptr", 0, u8::MAX as i64, "uint8"),
    ("int8ptrptrptr", i8::MIN as i64, i8::MAX as i64, "int8"),
    ("waitforerror", 0, i64::MAX, "uint64"),
];

#[derive(Clone, Debug, PartialEq)]
pub struct TestParams {
    /// Every field as given (already type- and range-checked).
    pub values: BTreeMap<String, Value>,
    pub validatebool: bool,
    pub validateerror: String,
    pub comparefail: bool,
    pub sendvalue: Option<String>,
    pub expectrecv: Option<Vec<String>>,
    pub waitforerror: Option<u64>,
}

impl TestParams {
    fn decode(p: &Params<'_>) -> Result<TestParams, BuildError> {
        for (field, min, max, go) in WIDTHS {
            p.opt_int_in(field, *min, *max, go)?;
        }
        if let Some(f) = p.opt_float("float32")?
            && f.is_finite()
            && f.abs() > f64::from(f32::MAX)
        {
            return Err(p.error(Some("float32"), format!("float `{f}` does not fit into `float32` field")));
        }
        Ok(TestParams {
            values: p_values(p),
            validatebool: p.bool("validatebool")?,
            validateerror: p.str("validateerror")?,
            comparefail: p.bool("comparefail")?,
            sendvalue: p.opt_str("sendvalue")?,
            expectrecv: p.opt_list_str("expectrecv")?,
            waitforerror: p.opt_int_in("waitforerror", 0, i64::MAX, "uint64")?.map(|n| n as u64),
        })
    }
}

fn p_values(p: &Params<'_>) -> BTreeMap<String, Value> {
    crate::kind::decl("test")
        .map(|d| d.params.iter().filter_map(|f| p.get(&f.name).map(|v| (f.name.clone(), v.clone()))).collect())
        .unwrap_or_default()
}

pub struct Test {
    raw: Raw,
    params: TestParams,
    received: BTreeSet<String>,
    /// Makes every `comparefail` instance unique.
    serial: u64,
}

impl Test {
    pub fn build(name: &str, values: &BTreeMap<String, Value>) -> Result<Test, BuildError> {
        static SERIAL: AtomicU64 = AtomicU64::new(0);
        let raw = Raw::new("test", name, values);
        let params = raw.decode(TestParams::decode)?;
        Ok(Test { raw, params, received: BTreeSet::new(), serial: SERIAL.fetch_add(1, Ordering::SeqCst) })
    }

    pub fn params(&self) -> &TestParams {
        &self.params
    }
}

#[async_trait]
impl Resource for Test {
    fn validate(&self) -> Result<(), ResError> {
        let err = |field: &str, message: String| {
            res_error(BuildError {
                kind: "test".into(),
                name: self.raw.name.clone(),
                field: Some(field.into()),
                message,
            })
        };
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
        format!("{:?}", self.params)
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
pub const TEST: crate::kind::Kind = crate::kind::Kind {
    name: "test",
    params: &[
        ("bool", "bool"),
        ("str", "str"),
        ("int", "int"),
        ("int8", "int"),
        ("int16", "int"),
        ("int32", "int"),
        ("int64", "int"),
        ("uint", "int"),
        ("uint8", "int"),
        ("uint16", "int"),
        ("uint32", "int"),
        ("uint64", "int"),
        ("byte", "int"),
        ("rune", "int"),
        ("float32", "float"),
        ("float64", "float"),
        ("boolptr", "bool"),
        ("stringptr", "str"),
        ("int64ptr", "int"),
        ("int8ptr", "int"),
        ("uint8ptr", "int"),
        ("int8ptrptrptr", "int"),
        ("slicestring", "[]str"),
        ("mapintfloat", "map{int: float}"),
        ("mixedstruct", "struct{somebool bool; somestr str; someint int; somefloat float}"),
        ("interface", "variant"),
        ("anotherstr", "str"),
        ("func1", "func(int) str"),
        ("validatebool", "bool"),
        ("validateerror", "str"),
        ("alwaysgroup", "bool"),
        ("comparefail", "bool"),
        ("sendvalue", "str"),
        ("expectrecv", "[]str"),
        ("onlyshow", "[]str"),
        ("waitforerror", "int"),
        ("comment", "str"),
    ],
    sends: &[("hello", "str"), ("answer", "int")],
    can_recv: true,
    build: |_host, name, params| Ok(Box::new(Test::build(name, params)?)),
};
