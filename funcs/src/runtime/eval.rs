//! Computing one instance from its operands, per node kind, and calling lambdas (for
//! `CallValue` and for built-ins, through [`Caller`]).

use std::any::Any;
use std::panic::{AssertUnwindSafe, catch_unwind};

use lang::ir::{NodeId, NodeKind};
use lang::types::Type;
use lang::value::{Closure, Env, Value};

use crate::api::{CallCtx, Caller, FuncError, FuncImpl, FuncResult};
use crate::runtime::evaluator::{Computed, Evaluator, Failure, Slot, from_result};
use crate::runtime::ops;
use crate::runtime::stream::InstId;

/// Operand values, all ready or not.
enum Gathered {
    Ready(Vec<Value>),
    Pending,
    Failed(Failure),
}

impl Evaluator {
    /// Computes instance `id` of `node` in `env`. Operands are obtained with
    /// [`Evaluator::get`], which records them as dependencies.
    pub(crate) fn eval(&self, id: InstId, node: NodeId, env: &Env) -> Slot {
        let graph = &*self.graph;
        let fail = |err: FuncError| Some(Err(Failure::new(err, node)));
        match &graph.node(node).kind {
            NodeKind::Const(v) => Some(Ok(v.clone())),
            NodeKind::Param(_) => self.get(node, env),
            NodeKind::List(items) => self.with_all(items, env, |vals| Ok(Value::list(vals))),
            NodeKind::Map(pairs) => {
                let flat: Vec<NodeId> = pairs.iter().flat_map(|(k, v)| [*k, *v]).collect();
                self.with_all(&flat, env, |vals| Ok(ops::map_literal(vals)))
            }
            NodeKind::Struct(fields) => {
                let nodes: Vec<NodeId> = fields.iter().map(|(_, n)| *n).collect();
                self.with_all(&nodes, env, |vals| {
                    Ok(Value::strukt(fields.iter().map(|(n, _)| n.clone()).zip(vals).collect()))
                })
            }
            NodeKind::Interp(parts) => self.with_all(parts, env, |vals| Ok(ops::interp(&vals))),
            NodeKind::Op { op, args } => {
                let op = *op;
                self.with_all(args, env, |vals| from_result(ops::apply_op(op, &vals), node))
            }
            NodeKind::Call { func, args } => {
                let Some(call) = self.info.call(node) else {
                    return fail(FuncError::fatal("call site without call information"));
                };
                match call.imp {
                    None => fail(FuncError::fatal(format!("function `{func}` is not registered"))),
                    Some(FuncImpl::Pure(f)) => match self.gather(args, env) {
                        Gathered::Pending => None,
                        Gathered::Failed(e) => Some(Err(e)),
                        Gathered::Ready(vals) => {
                            let ctx = CallCtx {
                                arg_types: &call.arg_types,
                                ret_type: &call.ret_type,
                                caller: &EvaluatorCaller { engine: self },
                                host: &self.host,
                            };
                            // A panicking built-in is a bug in it, but it should stop this
                            // program with a diagnostic at the call, not take the engine down.
                            let depth = self.frame_depth();
                            let r = catch_unwind(AssertUnwindSafe(|| f(&ctx, &vals))).unwrap_or_else(|panic| {
                                self.truncate_frames(depth);
                                Err(FuncError::fatal(format!("function `{func}` panicked: {}", panic_message(&*panic))))
                            });
                            Some(r.map_err(|err| self.builtin_failure(err, node)))
                        }
                    },
                    Some(FuncImpl::Stream(f)) => {
                        let g = self.gather(args, env);
                        let arg_types = call.arg_types.to_vec();
                        let ret_type: Type = call.ret_type.clone();
                        let start = |generation| self.spawner.start(f, id, generation, arg_types, ret_type);
                        let (stale, emitted) = self.with_stream(id, start, |s| {
                            let changed = match &g {
                                Gathered::Ready(vals) => s.set_inputs(vals.clone()),
                                _ => false,
                            };
                            (changed && s.emitted.is_some(), s.emitted.clone())
                        });
                        if stale {
                            self.mark_stale(id);
                        }
                        match g {
                            Gathered::Failed(e) => Some(Err(e)),
                            _ => {
                                emitted.map(|r| r.map_err(|err| Failure { streamed: true, ..Failure::new(err, node) }))
                            }
                        }
                    }
                }
            }
            NodeKind::CallValue { callee, args } => {
                let f = self.get(*callee, env);
                let g = self.gather(args, env);
                match (f, g) {
                    (Some(Err(e)), _) | (_, Gathered::Failed(e)) => Some(Err(e)),
                    (None, _) | (_, Gathered::Pending) => None,
                    (Some(Ok(Value::Func(c))), Gathered::Ready(vals)) => {
                        self.call_closure(&c, vals, node).map(|r| r.map_err(|f| f.through_call(node)))
                    }
                    (Some(Ok(other)), _) => fail(FuncError::fatal(format!("can't call a non-function value {other}"))),
                }
            }
            NodeKind::Inline { body, .. } => self.get(*body, env),
            NodeKind::Construct(c) => self.construct(node, c.value, &c.checks, env),
            NodeKind::Dispatch(d) => fail(unresolved(&d.func)),
            NodeKind::Lambda { .. } => {
                // The instance's own environment binds exactly the captured parameters
                // (none for a static lambda), so equal closures compare equal.
                Some(Ok(Value::Func(Closure { lambda: node, env: self.own_env(id) })))
            }
            NodeKind::If { cond, then, els } => match self.get(*cond, env)? {
                Ok(Value::Bool(true)) => self.get(*then, env),
                Ok(Value::Bool(false)) => self.get(*els, env),
                Ok(other) => fail(FuncError::fatal(format!("if condition is not a bool: {other}"))),
                Err(e) => Some(Err(e)),
            },
            NodeKind::Except { lhs, rhs } => match self.get(*lhs, env)? {
                Err(Failure { err: FuncError::Catchable(_), .. }) => self.get(*rhs, env),
                other => Some(other),
            },
            NodeKind::Index { base, index } => {
                self.with_all(&[*base, *index], env, |vals| from_result(ops::index(&vals[0], &vals[1]), node))
            }
            NodeKind::Field { base, field } => {
                self.with_all(&[*base], env, |vals| from_result(ops::field(&vals[0], field), node))
            }
            NodeKind::FieldOr { base, field, default } => {
                // A static choice by the struct *type*; without type information (graphs
                // built by hand) the value decides.
                match graph.ty(*base) {
                    Some(Type::Struct(fs)) if !fs.iter().any(|(n, _)| n == field) => self.get(*default, env),
                    // The type has the field; an unsettable attribute may still be unset.
                    _ => match self.get(*base, env)? {
                        Ok(v) => match v.field(field) {
                            Some(x) => Some(Ok(x.clone())),
                            None => self.get(*default, env),
                        },
                        Err(e) => Some(Err(e)),
                    },
                }
            }
        }
    }

    /// Evaluates every operand (all of them, so that every stream among them starts
    /// even while another is still pending).
    /// A value of a declared type, once every check holds. Apart from [`Evaluator::eval`]
    /// (and never inlined into it) so that its frame, which every level of a deep chain
    /// pays, stays small.
    #[inline(never)]
    fn construct(&self, node: NodeId, value: NodeId, checks: &[lang::ir::IrCheck], env: &Env) -> Slot {
        let built = self.get(value, env)?;
        for check in checks {
            let result = match self.get(check.node, env)? {
                Ok(v) => v,
                Err(e) => return Some(Err(e)),
            };
            let attr = || check.attr.as_ref().and_then(|(_, at)| self.get(*at, env)?.ok());
            if let Some(message) = check.failure(&result, attr) {
                return Some(Err(Failure::new(FuncError::catchable(message), node)));
            }
        }
        Some(built)
    }

    fn gather(&self, nodes: &[NodeId], env: &Env) -> Gathered {
        let mut vals = Vec::with_capacity(nodes.len());
        let mut pending = false;
        let mut failed = None;
        for n in nodes {
            match self.get(*n, env) {
                None => pending = true,
                Some(Ok(v)) => vals.push(v),
                Some(Err(e)) => {
                    if failed.is_none() {
                        failed = Some(e);
                    }
                }
            }
        }
        match (failed, pending) {
            (Some(e), _) => Gathered::Failed(e),
            (None, true) => Gathered::Pending,
            (None, false) => Gathered::Ready(vals),
        }
    }

    fn with_all(&self, nodes: &[NodeId], env: &Env, f: impl FnOnce(Vec<Value>) -> Computed) -> Slot {
        match self.gather(nodes, env) {
            Gathered::Ready(vals) => Some(f(vals)),
            Gathered::Pending => None,
            Gathered::Failed(e) => Some(Err(e)),
        }
    }

    /// Calls a lambda value: its body in the captured environment plus the arguments.
    /// The body instance becomes a dependency of the running computation, keyed by the
    /// argument values, so repeated calls with the same arguments are cache hits.
    pub(crate) fn call_closure(&self, f: &Closure, args: Vec<Value>, at: NodeId) -> Slot {
        let fail = |msg: String| Some(Err(Failure::new(FuncError::fatal(msg), at)));
        let Some(node) = self.graph.nodes.get(f.lambda.0 as usize) else {
            return fail("function value refers to no lambda".into());
        };
        let NodeKind::Lambda { params, body } = &node.kind else {
            return fail("function value refers to no lambda".into());
        };
        if params.len() != args.len() {
            return fail(format!("function expects {} arguments, got {}", params.len(), args.len()));
        }
        let mut env = f.env.clone();
        for (p, v) in params.iter().zip(args) {
            env = env.bind(*p, v);
        }
        self.get(*body, &env)
    }
}

/// The text of a panic payload.
fn panic_message(panic: &(dyn Any + Send)) -> String {
    panic
        .downcast_ref::<&str>()
        .map(|s| s.to_string())
        .or_else(|| panic.downcast_ref::<String>().cloned())
        .unwrap_or_else(|| "unknown panic".to_string())
}

/// The [`Caller`] handed to pure built-ins while they run on the evaluator thread. `Caller`
/// is not `Sync`, so a built-in cannot hand it to another thread: the engine (and its
/// `RefCell`) is only ever touched from its own.
struct EvaluatorCaller<'a> {
    engine: &'a Evaluator,
}

impl Caller for EvaluatorCaller<'_> {
    fn call(&self, f: &Closure, args: Vec<Value>) -> FuncResult {
        match self.engine.call_closure(f, args, f.lambda) {
            None => {
                self.engine.set_pending();
                Err(FuncError::NotReady)
            }
            Some(Ok(v)) => Ok(v),
            Some(Err(failure)) => {
                self.engine.note_origin(&failure.err, failure.inner.unwrap_or(failure.origin));
                Err(failure.err)
            }
        }
    }
}

/// Unification rewrites every dispatch into a call: one left is a bug in tend.
#[cold]
#[inline(never)]
fn unresolved(func: &str) -> FuncError {
    FuncError::fatal(format!("internal: the call of overloaded `{func}` was not resolved"))
}
