//! `tend check` runs each kind's own validation (the catalog's [`Validator`]) on every
//! resource whose name and params are all constants, so `mode => "0999"` or a path with a
//! `..` is refused by `check` and by the editor, at the field, instead of by `run`. A
//! resource with any param computed at run time is validated when its graph is built, as
//! before; so is one whose kind overrides or collectors may change.

use std::collections::HashSet;

use crate::catalog::{Catalog, Invalid, Validator};
use crate::checks::eval;
use crate::diag::{Code, Diagnostic, Diagnostics, Stage};
use crate::ir::{FuncGraph, IrResource, IrStmt};
use crate::params::ParamMap;
use crate::syntax::ast::Virtuality;
use crate::value::Value;

/// A diagnostic for each constant resource its kind refuses.
pub fn constant_resources(graph: &FuncGraph, catalog: &Catalog) -> Diagnostics {
    let mut diags = Diagnostics::new();
    let Some(validator) = catalog.validator() else { return diags };
    // Overrides and collectors change params as written; defaults statements are
    // already in each resource's fields.
    let mut changed = HashSet::new();
    crate::checks::steering(&graph.stmts, false, &mut changed);
    let mut walk = Walk { graph, validator, changed, diags: &mut diags };
    walk.stmts(&graph.stmts);
    diags
}

struct Walk<'a> {
    graph: &'a FuncGraph,
    validator: Validator,
    changed: HashSet<String>,
    diags: &'a mut Diagnostics,
}

impl Walk<'_> {
    fn stmts(&mut self, stmts: &[IrStmt]) {
        for stmt in stmts {
            match stmt {
                IrStmt::Resource(res) => self.resource(res),
                // A branch that can never run declares nothing.
                IrStmt::If { cond, then, els, .. } => match eval(self.graph, *cond, 0) {
                    Some(Value::Bool(true)) => self.stmts(then),
                    Some(Value::Bool(false)) => self.stmts(els),
                    _ => {
                        self.stmts(then);
                        self.stmts(els);
                    }
                },
                IrStmt::For { body, .. } => self.stmts(body),
                IrStmt::Instance(i) => self.stmts(&i.body),
                _ => {}
            }
        }
    }

    fn resource(&mut self, res: &IrResource) {
        if res.collect || res.virtuality != Virtuality::Real || self.changed.contains(&res.kind) || self.hidden(res) {
            return;
        }
        let names = match eval(self.graph, res.name, 0) {
            Some(Value::Str(name)) => vec![name],
            Some(Value::List(items)) => {
                let names: Option<Vec<_>> =
                    items.iter().map(|v| if let Value::Str(s) = v { Some(s.clone()) } else { None }).collect();
                let Some(names) = names else { return };
                names
            }
            _ => return,
        };
        let mut params = ParamMap::new();
        for field in &res.fields {
            if let Some(cond) = field.cond {
                match eval(self.graph, cond, 0) {
                    Some(Value::Bool(true)) => {}
                    Some(Value::Bool(false)) => continue,
                    _ => return,
                }
            }
            let Some(value) = eval(self.graph, field.value, 0) else { return };
            if &*field.name == crate::ir::SPLAT {
                let Some(entries) = value.splat_entries() else { return };
                for (name, value) in entries {
                    params.insert(name, value);
                }
                continue;
            }
            params.insert(field.name.to_string(), value);
        }
        for name in names {
            if let Some(invalid) = (self.validator)(&res.kind, &name, &params) {
                self.diags.push(self.diagnostic(res, &name, invalid));
            }
        }
    }

    /// Whether `Meta:hidden` may be set (hidden resources skip their validation, as in
    /// mgmt); a whole-struct `Meta =>` is taken as possibly hiding.
    fn hidden(&self, res: &IrResource) -> bool {
        res.metas.iter().any(|m| match m.name.as_deref() {
            Some("hidden") => eval(self.graph, m.value, 0) != Some(Value::Bool(false)),
            Some(_) => false,
            None => true,
        })
    }

    fn diagnostic(&self, res: &IrResource, name: &str, invalid: Invalid) -> Diagnostic {
        // A field no entry writes came from the splat (`* => …`), if there is one.
        let field = invalid.field.as_deref().and_then(|f| {
            res.fields
                .iter()
                .find(|x| &*x.name == f)
                .or_else(|| res.fields.iter().find(|x| &*x.name == crate::ir::SPLAT))
        });
        // The value when the field is written in the resource itself, else the name (a
        // kind that names no field mostly refuses what the name says, such as its path).
        let span = field.map_or(self.graph.node(res.name).span, |f| {
            let value = self.graph.node(f.value).span;
            let inside = value.file == f.span.file && f.span.start <= value.start && value.end <= f.span.end;
            // A build error is placed as the run places it: on the whole field.
            if inside && !invalid.building { value } else { f.span }
        });
        let shown = match &invalid.field {
            Some(field) => format!("field `{field}`: {}", invalid.message),
            None => invalid.message,
        };
        // Worded as the run words them when it builds the graph.
        let message = if invalid.building {
            format!("error building resource {}[{name}]: {shown}", res.kind)
        } else {
            format!("{}[{name}] did not Validate: {shown}", res.kind)
        };
        let mut diag = Diagnostic::new(Stage::Interpret, message, span).with_code(Code::InvalidResource);
        if let Some(note) = invalid.note {
            diag = diag.with_note(note);
        }
        diag
    }
}
