//! Helpers shared by the unification and interpreter tests: a graph builder that gives
//! every node its own span, and a small hand-made catalog.
#![allow(dead_code)]

use lang::catalog::{CallSite, Catalog, FuncDecl, ParamDecl, ResourceDecl};
use lang::diag::{Diagnostic, Diagnostics, Stage};
use lang::ir::*;
use lang::span::{FileId, Span};
use lang::syntax::ast::BinOp;
use lang::types::{Type, parse_type};
use lang::value::Value;

/// Builds a [`FuncGraph`] by hand. Node `i` spans bytes `10*i..10*i+5`, so tests can name
/// the span of a node.
#[derive(Default)]
pub struct B {
    pub g: FuncGraph,
    next_span: usize,
}

pub fn sp(n: usize) -> Span {
    Span::new(FileId(0), 100_000 + n * 10, 100_000 + n * 10 + 5)
}

impl B {
    pub fn new() -> B {
        B::default()
    }
    pub fn node(&mut self, kind: NodeKind) -> NodeId {
        let id = self.g.nodes.len();
        self.g.add(kind, Span::new(FileId(0), id * 10, id * 10 + 5))
    }
    pub fn span(&self, n: NodeId) -> Span {
        self.g.node(n).span
    }
    /// A span for a statement or field, distinct from all node spans.
    pub fn stmt_span(&mut self) -> Span {
        self.next_span += 1;
        sp(self.next_span)
    }
    pub fn str(&mut self, s: &str) -> NodeId {
        self.node(NodeKind::Const(Value::str(s)))
    }
    pub fn int(&mut self, i: i64) -> NodeId {
        self.node(NodeKind::Const(Value::Int(i)))
    }
    pub fn float(&mut self, f: f64) -> NodeId {
        self.node(NodeKind::Const(Value::Float(f)))
    }
    pub fn bool(&mut self, b: bool) -> NodeId {
        self.node(NodeKind::Const(Value::Bool(b)))
    }
    pub fn list(&mut self, items: Vec<NodeId>) -> NodeId {
        self.node(NodeKind::List(items))
    }
    pub fn map(&mut self, entries: Vec<(NodeId, NodeId)>) -> NodeId {
        self.node(NodeKind::Map(entries))
    }
    pub fn strukt(&mut self, fields: Vec<(&str, NodeId)>) -> NodeId {
        self.node(NodeKind::Struct(fields.into_iter().map(|(n, v)| (n.to_string(), v)).collect()))
    }
    pub fn interp(&mut self, parts: Vec<NodeId>) -> NodeId {
        self.node(NodeKind::Interp(parts))
    }
    pub fn call(&mut self, func: &str, args: Vec<NodeId>) -> NodeId {
        self.node(NodeKind::Call { func: func.into(), args })
    }
    pub fn call_value(&mut self, callee: NodeId, args: Vec<NodeId>) -> NodeId {
        self.node(NodeKind::CallValue { callee, args })
    }
    pub fn param(&mut self, name: &str) -> (ParamId, NodeId) {
        let p = self.g.add_param(name, Span::default());
        let n = self.node(NodeKind::Param(p));
        (p, n)
    }
    pub fn param_use(&mut self, p: ParamId) -> NodeId {
        self.node(NodeKind::Param(p))
    }
    pub fn lambda(&mut self, params: Vec<ParamId>, body: NodeId) -> NodeId {
        self.node(NodeKind::Lambda { params, body })
    }
    pub fn bin(&mut self, op: BinOp, a: NodeId, b: NodeId) -> NodeId {
        self.node(NodeKind::Op { op: Op::Bin(op), args: vec![a, b] })
    }
    pub fn not(&mut self, a: NodeId) -> NodeId {
        self.node(NodeKind::Op { op: Op::Not, args: vec![a] })
    }
    pub fn iff(&mut self, cond: NodeId, then: NodeId, els: NodeId) -> NodeId {
        self.node(NodeKind::If { cond, then, els })
    }
    pub fn index(&mut self, base: NodeId, index: NodeId) -> NodeId {
        self.node(NodeKind::Index { base, index })
    }
    pub fn field(&mut self, base: NodeId, field: &str) -> NodeId {
        self.node(NodeKind::Field { base, field: field.into() })
    }
    pub fn field_or(&mut self, base: NodeId, field: &str, default: NodeId) -> NodeId {
        self.node(NodeKind::FieldOr { base, field: field.into(), default })
    }
    pub fn annotate(&mut self, node: NodeId, ty: &str) -> Span {
        let span = self.stmt_span();
        self.g.annotations.push(Annotation { node, ty: parse_type(ty).unwrap(), span });
        span
    }

    /// `kind NAME { fields }` with one span per field; returns (statement span, field spans).
    pub fn res(&mut self, kind: &str, name: NodeId, fields: Vec<(&str, NodeId)>) -> (Span, Vec<Span>) {
        let span = self.stmt_span();
        let fields: Vec<IrField> = fields
            .into_iter()
            .map(|(n, v)| IrField {
                origin: Default::default(),
                name: n.into(),
                value: v,
                cond: None,
                span: self.stmt_span(),
            })
            .collect();
        let spans = fields.iter().map(|f| f.span).collect();
        self.g.stmts.push(IrStmt::Resource(IrResource {
            kind: kind.into(),
            kind_span: span,
            name,
            fields,
            edges: Vec::new(),
            metas: Vec::new(),
            collect: false,
            virtuality: Default::default(),
            classes: Vec::new(),
            span,
        }));
        (span, spans)
    }

    pub fn last_res(&mut self) -> &mut IrResource {
        match self.g.stmts.last_mut() {
            Some(IrStmt::Resource(r)) => r,
            _ => panic!("last statement is not a resource"),
        }
    }

    pub fn half(&mut self, kind: &str, name: NodeId, field: Option<&str>) -> IrEdgeHalf {
        IrEdgeHalf { kind: kind.into(), name, field: field.map(String::from), span: self.stmt_span() }
    }

    pub fn edge(&mut self, halves: Vec<IrEdgeHalf>) -> Span {
        let span = self.stmt_span();
        let links = vec![IrEdgeLink { notify: false, backward: false }; halves.len().saturating_sub(1)];
        let sides = halves.into_iter().map(|h| IrSide { refs: vec![h], collector: None }).collect();
        self.g.stmts.push(IrStmt::Edge(IrEdge { sides, links, span }));
        span
    }

    /// `test "t" { anotherstr => node, }`: makes `node` reachable and requires `str`.
    pub fn use_str(&mut self, node: NodeId) -> Span {
        let name = self.str("t");
        self.res("test", name, vec![("anotherstr", node)]).1[0]
    }

    /// A statement that makes `node` reachable without constraining it (`test [..] {}`
    /// whose name is `if node == node { [] } else { [] }` would constrain it, so instead
    /// use an interface field, which accepts anything).
    pub fn use_any(&mut self, node: NodeId) {
        let name = self.str("any");
        self.res("test", name, vec![("interface", node)]);
    }

    pub fn unify(&mut self, catalog: &Catalog) -> Vec<Diagnostic> {
        lang::unify::unify(&mut self.g, catalog).into_vec()
    }
}

fn printf_infer(site: &CallSite) -> Result<Type, String> {
    let Some(Some(fmt)) = site.args.first() else {
        return Err("format string is not known statically".into());
    };
    let fmt = fmt.as_str().ok_or("format must be a str")?;
    let mut args = vec![("format".to_string(), Type::Str)];
    let mut chars = fmt.chars();
    let mut n = 0;
    while let Some(c) = chars.next() {
        if c != '%' {
            continue;
        }
        let t = match chars.next() {
            Some('d') => Type::Int,
            Some('s') => Type::Str,
            Some('t') => Type::Bool,
            Some('f') => Type::Float,
            Some('v') => Type::Var(100 + n),
            _ => continue,
        };
        n += 1;
        args.push((format!("a{n}"), t));
    }
    if args.len() != site.args.len() {
        return Err(format!(
            "number of args ({}) doesn't match format string verb count ({})",
            site.args.len() - 1,
            args.len() - 1
        ));
    }
    Ok(Type::Func(args, Box::new(Type::Str)))
}

fn len_check(t: &Type) -> Result<(), String> {
    match t {
        Type::Func(args, _) => match &args[0].1 {
            Type::Str | Type::List(_) | Type::Map(..) => Ok(()),
            other => Err(format!("can't take the length of a `{other}`")),
        },
        _ => Err("not a func".into()),
    }
}

fn sig(s: &str) -> Type {
    parse_type(s).unwrap()
}

fn param(name: &str, ty: &str) -> ParamDecl {
    ParamDecl::new(name, sig(ty))
}

pub fn catalog() -> Catalog {
    let mut c = Catalog::new();
    let f = |name: &str, sigs: Vec<&str>| FuncDecl {
        name: name.into(),
        sigs: sigs.into_iter().map(sig).collect(),
        infer: None,
        check: None,
        doc: "",
    };
    c.add_func(FuncDecl { check: Some(len_check), ..f("len", vec!["func(?1) int"]) });
    c.add_func(FuncDecl { infer: Some(printf_infer), ..f("fmt.printf", vec![]) });
    c.add_func(f("map.lookup", vec!["func(m map{?1: ?2}, key ?1) ?2"]));
    c.add_func(f("iter.map", vec!["func(inputs []?1, function func(?1) ?2) []?2"]));
    c.add_func(f("list.concat", vec!["func(a []?1, b []?1) []?1", "func(a []?1, b []?1, c []?1) []?1"]));
    c.add_func(f("strings.to_upper", vec!["func(s str) str"]));
    c.add_func(f("datetime.now", vec!["func() int"]));
    c.add_resource(ResourceDecl {
        kind: "test".into(),
        params: vec![
            param("anotherstr", "str"),
            param("stringptr", "str"),
            param("int8", "int"),
            param("boolptr", "bool"),
            param("slicestring", "[]str"),
            param("mapintfloat", "map{int: float}"),
            param("func1", "func(int) str"),
            param("interface", "variant"),
        ],
        sends: vec![param("hello", "str"), param("answer", "int")],
        can_recv: true,
    });
    c.add_resource(ResourceDecl {
        kind: "file".into(),
        params: vec![param("content", "str"), param("state", "str"), param("mode", "str")],
        sends: vec![],
        can_recv: true,
    });
    c.add_resource(ResourceDecl {
        kind: "exec".into(),
        params: vec![param("cmd", "str"), param("shell", "str")],
        sends: vec![param("output", "str")],
        can_recv: false,
    });
    c.add_resource(ResourceDecl {
        kind: "value".into(),
        params: vec![param("any", "variant")],
        sends: vec![param("any", "variant")],
        can_recv: true,
    });
    c
}

/// The only diagnostic, which must be at stage `stage`.
pub fn only(diags: &[Diagnostic], stage: Stage) -> &Diagnostic {
    assert_eq!(diags.len(), 1, "expected one diagnostic, got {diags:#?}");
    assert_eq!(diags[0].stage, stage, "{:#?}", diags[0]);
    &diags[0]
}

pub fn messages(d: &Diagnostics) -> Vec<String> {
    d.iter().map(|d| d.message.clone()).collect()
}

pub fn ty(s: &str) -> Type {
    sig(s)
}

pub const ADD: BinOp = BinOp::Add;
