//! Built-ins typed once: a pure built-in written with [`builtin!`] is an ordinary Rust
//! function over Rust types, and its mcl signature comes from those types ([`Arg`] for each
//! parameter, [`Ret`] for the result). The macro also writes the glue that reads the
//! argument values, so no built-in reads arguments by index.
//!
//! ```ignore
//! builtin! {
//!     /// whether substr occurs in s
//!     fn contains(s: &str, substr: &str) -> bool { s.contains(substr) }
//! }
//! // and, in the package's `register`:
//! typed(r, "strings.contains", contains::DEF);
//! ```
//!
//! Polymorphic built-ins (those with type variables, several signatures, or check/infer
//! hooks) keep their written signatures (`core::Def`).

use lang::value::Value;

use crate::api::{FuncError, FuncImpl, FuncResult};

/// A Rust type a built-in's parameter can have: its mcl type and how a value converts.
pub trait Arg<'a>: Sized {
    const TYPE: &'static str;
    /// `None` when the value does not have [`Self::TYPE`] (the type checker rules that out).
    fn from_arg(value: &'a Value) -> Option<Self>;
}

impl<'a> Arg<'a> for &'a str {
    const TYPE: &'static str = "str";
    fn from_arg(value: &'a Value) -> Option<Self> {
        value.as_str()
    }
}

impl Arg<'_> for i64 {
    const TYPE: &'static str = "int";
    fn from_arg(value: &Value) -> Option<Self> {
        value.as_int()
    }
}

impl Arg<'_> for f64 {
    const TYPE: &'static str = "float";
    fn from_arg(value: &Value) -> Option<Self> {
        value.as_float()
    }
}

impl Arg<'_> for bool {
    const TYPE: &'static str = "bool";
    fn from_arg(value: &Value) -> Option<Self> {
        value.as_bool()
    }
}

/// Owned, for streams: their arguments outlive the input that carried them.
impl Arg<'_> for String {
    const TYPE: &'static str = "str";
    fn from_arg(value: &Value) -> Option<Self> {
        value.as_str().map(str::to_string)
    }
}

impl<'a> Arg<'a> for Vec<&'a str> {
    const TYPE: &'static str = "[]str";
    fn from_arg(value: &'a Value) -> Option<Self> {
        value.as_list()?.iter().map(Value::as_str).collect()
    }
}

impl<'a> Arg<'a> for Vec<i64> {
    const TYPE: &'static str = "[]int";
    fn from_arg(value: &'a Value) -> Option<Self> {
        value.as_list()?.iter().map(Value::as_int).collect()
    }
}

/// A Rust type a built-in can return: its mcl type and the value it makes.
pub trait Ret {
    const TYPE: &'static str;
    fn into_result(self) -> FuncResult;
}

impl Ret for bool {
    const TYPE: &'static str = "bool";
    fn into_result(self) -> FuncResult {
        Ok(Value::Bool(self))
    }
}

impl Ret for i64 {
    const TYPE: &'static str = "int";
    fn into_result(self) -> FuncResult {
        Ok(Value::Int(self))
    }
}

impl Ret for f64 {
    const TYPE: &'static str = "float";
    fn into_result(self) -> FuncResult {
        Ok(Value::Float(self))
    }
}

impl Ret for String {
    const TYPE: &'static str = "str";
    fn into_result(self) -> FuncResult {
        Ok(Value::str(self))
    }
}

impl Ret for Vec<String> {
    const TYPE: &'static str = "[]str";
    fn into_result(self) -> FuncResult {
        Ok(Value::list(self.into_iter().map(Value::str).collect()))
    }
}

/// A value built by hand (a struct): the macro's `-> Value as "struct{…}"` gives its type.
impl Ret for Value {
    const TYPE: &'static str = "variant";
    fn into_result(self) -> FuncResult {
        Ok(self)
    }
}

impl<T: Ret> Ret for Result<T, FuncError> {
    const TYPE: &'static str = T::TYPE;
    fn into_result(self) -> FuncResult {
        self.and_then(Ret::into_result)
    }
}

/// One typed built-in, as [`builtin!`] makes it.
#[derive(Clone, Copy)]
pub struct Typed {
    /// Parameter names and mcl types, in order.
    pub params: &'static [(&'static str, &'static str)],
    /// The result's mcl type.
    pub ret: &'static str,
    /// The implementation: for a pure built-in, the glue that reads the arguments and runs
    /// the function; for a stream ([`streaming!`]), the glue that starts it per input.
    pub imp: FuncImpl,
    /// The doc comment, for `tend doc` and editors.
    pub doc: &'static str,
}

impl Typed {
    /// The mcl signature: `func(s str, substr str) bool`.
    pub fn signature(&self) -> String {
        let params: Vec<String> = self.params.iter().map(|(name, ty)| format!("{name} {ty}")).collect();
        format!("func({}) {}", params.join(", "), self.ret)
    }
}

/// The error for an argument the type checker should have ruled out.
pub fn bad_arg(i: usize, name: &str, want: &str, got: Option<&Value>) -> FuncError {
    match got {
        Some(v) => {
            FuncError::fatal(format!("internal error: argument #{i} `{name}` should be of type {want}, got {v}"))
        }
        None => FuncError::fatal(format!("internal error: missing argument #{i} `{name}` (of type {want})")),
    }
}

/// Defines a pure built-in as a typed Rust function; see the module docs. Makes a module
/// named like the function holding `run` (the function itself, callable from Rust), `call`
/// (the glue the runtime calls) and `DEF` (the [`Typed`] to register).
#[macro_export]
macro_rules! builtin {
    (
        $(#[doc = $doc:literal])*
        fn $name:ident($ctx:ident: &CallCtx $(, $arg:ident : $ty:ty)* $(,)?) -> $ret:ty $(as $text:literal)? $body:block
    ) => {
        $crate::builtin!(@module [$($doc)*] $name [$ctx: &$crate::api::CallCtx<'_>,] [$($arg: $ty),*] $ret [$($text)?] $body);
    };
    (
        $(#[doc = $doc:literal])*
        fn $name:ident($($arg:ident : $ty:ty),* $(,)?) -> $ret:ty $(as $text:literal)? $body:block
    ) => {
        $crate::builtin!(@module [$($doc)*] $name [] [$($arg: $ty),*] $ret [$($text)?] $body);
    };
    (@module [$($doc:literal)*] $name:ident [$($ctx:ident: $ctxty:ty,)?] [$($arg:ident : $ty:ty),*] $ret:ty [$($text:literal)?] $body:block) => {
        $(#[doc = $doc])*
        pub(crate) mod $name {
            #[allow(unused_imports)]
            use super::*;

            $(#[doc = $doc])*
            // A built-in may ignore a parameter its mcl signature has (as Go's does).
            #[allow(unused_variables)]
            pub(crate) fn run($($ctx: $ctxty,)? $($arg: $ty),*) -> $ret $body

            /// Reads the arguments by name and type, then runs the function.
            #[allow(unused_variables, unused_mut, unused_assignments)]
            pub(crate) fn call(ctx: &$crate::api::CallCtx<'_>, args: &[lang::value::Value]) -> $crate::api::FuncResult {
                let mut at = 0usize;
                $(
                    let $arg: $ty = match args.get(at).and_then(<$ty as $crate::typed::Arg<'_>>::from_arg) {
                        Some(v) => v,
                        None => {
                            return Err($crate::typed::bad_arg(
                                at,
                                stringify!($arg),
                                <$ty as $crate::typed::Arg<'_>>::TYPE,
                                args.get(at),
                            ))
                        }
                    };
                    at += 1;
                )*
                $crate::typed::Ret::into_result(run($($crate::builtin!(@ctx ctx $ctx),)? $($arg),*))
            }

            /// What registration needs.
            pub(crate) const DEF: $crate::typed::Typed = $crate::typed::Typed {
                params: &[$((stringify!($arg), <$ty as $crate::typed::Arg<'_>>::TYPE)),*],
                ret: $crate::builtin!(@ret $ret $(, $text)?),
                imp: $crate::api::FuncImpl::Pure(call),
                doc: concat!($($doc),*),
            };
        }
    };
    (@ctx $ctx:ident $_name:ident) => { $ctx };
    (@ret $ret:ty) => { <$ret as $crate::typed::Ret>::TYPE };
    (@ret $ret:ty, $text:literal) => { $text };
}

/// Defines a streaming built-in whose arguments are typed like [`builtin!`]'s (owned:
/// `String`, `i64`, `f64`, `bool`) and whose result type is written after `->`. The body
/// runs once per complete set of inputs (`core::streams::per_input`: a new input cancels
/// it and starts it again) and emits through the [`Emitter`](crate::core::streams::Emitter)
/// named first. Makes a module holding `DEF`.
///
/// ```ignore
/// streaming! {
///     /// a file's contents, updated when it changes
///     fn readfile(em, filename: String) -> "str" {
///         follow(PathBuf::from(filename), Watched::Path, em, read_file).await
///     }
/// }
/// ```
#[macro_export]
macro_rules! streaming {
    (
        $(#[doc = $doc:literal])*
        fn $name:ident($em:ident $(, $arg:ident : $ty:ty)* $(,)?) -> $ret:literal $body:block
    ) => {
        $(#[doc = $doc])*
        pub(crate) mod $name {
            #[allow(unused_imports)]
            use super::*;

            /// Starts one instance for one call site.
            #[allow(unused_variables, unused_assignments)]
            fn start(ctx: $crate::api::StreamCtx) -> futures::future::BoxFuture<'static, ()> {
                Box::pin($crate::core::streams::per_input(ctx, |args, $em: $crate::core::streams::Emitter| async move {
                    #[allow(unused_mut)]
                    let mut at = 0usize;
                    $(
                        let $arg: $ty = match args.get(at).and_then(<$ty as $crate::typed::Arg<'_>>::from_arg) {
                            Some(v) => v,
                            None => {
                                let err = $crate::typed::bad_arg(
                                    at,
                                    stringify!($arg),
                                    <$ty as $crate::typed::Arg<'_>>::TYPE,
                                    args.get(at),
                                );
                                $em.send(Err(err)).await;
                                return;
                            }
                        };
                        at += 1;
                    )*
                    $body
                }))
            }

            /// What registration needs.
            pub(crate) const DEF: $crate::typed::Typed = $crate::typed::Typed {
                params: &[$((stringify!($arg), <$ty as $crate::typed::Arg<'_>>::TYPE)),*],
                ret: $ret,
                imp: $crate::api::FuncImpl::Stream(start),
                doc: concat!($($doc),*),
            };
        }
    };
}

#[cfg(test)]
mod tests {
    use crate::api::{CallCtx, FuncError, Host};
    use lang::types::Type;
    use lang::value::Value;

    crate::builtin! {
        /// repeats s n times
        fn repeat(s: &str, n: i64) -> Result<String, FuncError> {
            if n < 0 {
                return Err(FuncError::catchable("negative count"));
            }
            Ok(s.repeat(n as usize))
        }
    }

    crate::builtin! {
        /// the program's root
        fn root(ctx: &CallCtx) -> String { ctx.host.root.display().to_string() }
    }

    crate::builtin! {
        /// a pair
        fn pair(a: &str) -> Value as "struct{a str}" { Value::strukt(vec![("a".to_string(), Value::str(a))]) }
    }

    crate::builtin! {
        /// the lengths of the strings
        fn lengths(items: Vec<&str>) -> Vec<String> { items.iter().map(|s| s.len().to_string()).collect() }
    }

    struct NoCaller;
    impl crate::api::Caller for NoCaller {
        fn call(&self, _: &lang::value::Closure, _: Vec<Value>) -> crate::api::FuncResult {
            unreachable!()
        }
    }

    fn run_def(f: crate::typed::Typed, args: &[Value]) -> crate::api::FuncResult {
        let host = Host::default();
        let ctx = CallCtx { arg_types: &[], ret_type: &Type::Str, caller: &NoCaller, host: &host };
        let crate::api::FuncImpl::Pure(call) = f.imp else { panic!("not a pure built-in") };
        call(&ctx, args)
    }

    #[test]
    fn the_signature_comes_from_the_rust_types() {
        assert_eq!(repeat::DEF.signature(), "func(s str, n int) str");
        assert_eq!(lengths::DEF.signature(), "func(items []str) []str");
        assert_eq!(repeat::DEF.doc.trim(), "repeats s n times");
        assert_eq!(root::DEF.signature(), "func() str", "the call context is not a parameter");
        assert_eq!(pair::DEF.signature(), "func(a str) struct{a str}");
    }

    #[test]
    fn arguments_are_read_by_name_and_results_converted() {
        assert_eq!(run_def(repeat::DEF, &[Value::str("ab"), Value::Int(3)]), Ok(Value::str("ababab")));
        assert_eq!(
            run_def(repeat::DEF, &[Value::str("ab"), Value::Int(-1)]),
            Err(FuncError::catchable("negative count"))
        );
        assert_eq!(run_def(root::DEF, &[]), Ok(Value::str("")));
        let list = Value::list(vec![Value::str("a"), Value::str("abc")]);
        assert_eq!(run_def(lengths::DEF, &[list]), Ok(Value::list(vec![Value::str("1"), Value::str("3")])));
    }

    #[test]
    fn a_mistyped_argument_is_an_error_naming_it() {
        let err = run_def(repeat::DEF, &[Value::str("ab"), Value::str("x")]).unwrap_err();
        assert_eq!(err.message(), "internal error: argument #1 `n` should be of type int, got \"x\"");
        let err = run_def(repeat::DEF, &[Value::str("ab")]).unwrap_err();
        assert!(err.message().contains("missing argument #1 `n`"), "{err:?}");
    }

    crate::streaming! {
        /// s, then s repeated, n times
        fn growing(em, s: String, n: i64) -> "str" {
            let mut v = s.clone();
            for _ in 0..n {
                if !em.value(Value::str(&v)).await {
                    return;
                }
                v.push_str(&s);
            }
        }
    }

    #[tokio::test]
    async fn a_stream_reads_its_typed_arguments_per_input() {
        assert_eq!(growing::DEF.signature(), "func(s str, n int) str");
        let crate::api::FuncImpl::Stream(start) = growing::DEF.imp else { panic!("not a stream") };
        let (inputs, irx) = tokio::sync::watch::channel(Some(vec![Value::str("ab"), Value::Int(2)]));
        let (otx, mut out) = tokio::sync::mpsc::channel(8);
        let cancel = tokio_util::sync::CancellationToken::new();
        let ctx = crate::api::StreamCtx {
            arg_types: vec![],
            ret_type: Type::Str,
            host: Host::default(),
            inputs: irx,
            out: otx,
            cancel: cancel.clone(),
        };
        let task = tokio::spawn(start(ctx));
        assert_eq!(out.recv().await, Some(Ok(Value::str("ab"))));
        assert_eq!(out.recv().await, Some(Ok(Value::str("abab"))));
        // A mistyped input is an error value naming the parameter, not a silent stop.
        inputs.send_replace(Some(vec![Value::str("ab"), Value::str("x")]));
        let err = out.recv().await.expect("a value").unwrap_err();
        assert!(err.message().contains("argument #1 `n` should be of type int"), "{err:?}");
        cancel.cancel();
        task.await.unwrap();
    }
}
