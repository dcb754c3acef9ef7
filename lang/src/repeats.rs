//! One error per cause: a class body is elaborated once per `include` and a func body once
//! per call, so one mistake in it would be reported as many times. [`fold`] keeps the first
//! of each repeat and, inside a class, says which includes it came from.

use std::collections::HashMap;

use crate::diag::{Diagnostic, Diagnostics, Stage};
use crate::ir::IrInclude;
use crate::span::Span;

/// How many include sites are labelled at most; the note still counts them all.
const SITES_SHOWN: usize = 8;

/// `diags` with repeats (same stage, message and place) folded into their first, in the
/// order they came. A folded error inside a class body gets a note counting the includes
/// and a label on each include site (`includes` is [`crate::ir::FuncGraph::includes`]).
pub fn fold(diags: Diagnostics, includes: &[IrInclude]) -> Diagnostics {
    let mut kept: Vec<(Diagnostic, usize)> = Vec::new();
    let mut index: HashMap<(Stage, String, Option<Span>), usize> = HashMap::new();
    for d in diags.into_vec() {
        let key = (d.stage, d.message.clone(), d.span);
        match index.get(&key) {
            Some(&at) => kept[at].1 += 1,
            None => {
                index.insert(key, kept.len());
                kept.push((d, 1));
            }
        }
    }
    kept.into_iter().map(|(d, times)| if times > 1 { name_includes(d, times, includes) } else { d }).collect()
}

/// Adds to an error seen `times` times the includes of the innermost class whose body
/// holds it (an error repeated by a func's calls stays as it is).
fn name_includes(mut d: Diagnostic, times: usize, includes: &[IrInclude]) -> Diagnostic {
    let Some(span) = d.span else { return d };
    let holds = |body: &Span| body.file == span.file && body.start <= span.start && span.end <= body.end;
    let Some(body) = includes.iter().map(|i| i.body).filter(holds).min_by_key(|b| b.end - b.start) else {
        return d;
    };
    let of_class: Vec<&IrInclude> = includes.iter().filter(|i| i.body == body).collect();
    let class = &of_class[0].class;
    let (includes, of) = match of_class[0].instance {
        true => ("instances", "defined type"),
        false => ("includes", "class"),
    };
    let count = if times == of_class.len() {
        format!("each of the {times} {includes}")
    } else {
        format!("{times} of the {} {includes}", of_class.len())
    };
    d.notes.push(format!("shown once: it comes from {count} of {of} `{class}`"));
    let mut sites: Vec<(Span, bool)> = Vec::new();
    for include in &of_class {
        // The outermost include tells the instances apart; a class included from another
        // class is reached through the outer one's include sites.
        let site = (include.chain[0], include.chain.len() > 1);
        if !sites.contains(&site) {
            sites.push(site);
        }
    }
    for &(site, through) in sites.iter().take(SITES_SHOWN) {
        let text = match (through, of_class[0].instance) {
            (true, true) => format!("`{class}` instantiated through here"),
            (true, false) => format!("`{class}` included through here"),
            (false, true) => "instance here".to_string(),
            (false, false) => "included here".to_string(),
        };
        d.labels.push(crate::diag::Label { span: site, message: text });
    }
    if sites.len() > SITES_SHOWN {
        d.notes.push(format!("{} more include sites not labelled", sites.len() - SITES_SHOWN));
    }
    d
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::span::FileId;

    fn span(start: usize, end: usize) -> Span {
        Span::new(FileId(0), start, end)
    }

    fn include(at: usize) -> IrInclude {
        IrInclude { class: "web".into(), body: span(10, 50), chain: vec![span(at, at + 5)], instance: false }
    }

    #[test]
    fn an_error_in_a_class_included_three_times_is_one_error_naming_the_includes() {
        let error = Diagnostic::new(Stage::Unify, "type error: str != int", span(20, 25));
        let other = Diagnostic::new(Stage::Unify, "another", span(70, 75));
        let diags: Diagnostics =
            [error.clone(), error.clone(), other, error].into_iter().fold(Diagnostics::new(), |mut all, d| {
                all.push(d);
                all
            });
        let folded = fold(diags, &[include(60), include(80), include(100)]);
        let folded: Vec<_> = folded.iter().collect();
        assert_eq!(folded.len(), 2);
        assert_eq!(folded[0].notes, ["shown once: it comes from each of the 3 includes of class `web`"]);
        let sites: Vec<_> = folded[0].labels.iter().map(|l| (l.span.start, l.message.as_str())).collect();
        assert_eq!(sites, [(60, "included here"), (80, "included here"), (100, "included here")]);
        assert!(folded[1].notes.is_empty() && folded[1].labels.is_empty());
    }

    #[test]
    fn repeats_outside_a_class_fold_without_notes() {
        let error = Diagnostic::new(Stage::SetScope, "no such var", span(55, 58));
        let mut diags = Diagnostics::new();
        diags.push(error.clone());
        diags.push(error);
        let folded = fold(diags, &[include(60)]);
        assert_eq!(folded.len(), 1);
        assert!(folded.iter().all(|d| d.notes.is_empty()));
    }
}
