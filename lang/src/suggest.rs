//! Did-you-mean suggestions, the one place that decides what "close" means: the optimal
//! string alignment distance (a swap of two neighbours is one edit), within a third of the
//! wanted name's length (at least one edit). Used for unknown names in scope, fields,
//! kinds and params in the type checker, resource params, and `tend why`'s targets.

/// Edit distance between two strings (insert, delete, substitute, swap two neighbours;
/// by chars): the optimal string alignment distance.
pub fn distance(a: &str, b: &str) -> usize {
    let a: Vec<char> = a.chars().collect();
    let b: Vec<char> = b.chars().collect();
    let w = b.len() + 1;
    let mut d = vec![0usize; (a.len() + 1) * w];
    for i in 0..=a.len() {
        d[i * w] = i;
    }
    for (j, cell) in d.iter_mut().enumerate().take(w) {
        *cell = j;
    }
    for i in 1..=a.len() {
        for j in 1..=b.len() {
            let cost = usize::from(a[i - 1] != b[j - 1]);
            let mut best = (d[(i - 1) * w + j] + 1).min(d[i * w + j - 1] + 1).min(d[(i - 1) * w + j - 1] + cost);
            if i > 1 && j > 1 && a[i - 1] == b[j - 2] && a[i - 2] == b[j - 1] {
                best = best.min(d[(i - 2) * w + j - 2] + 1);
            }
            d[i * w + j] = best;
        }
    }
    d[a.len() * w + b.len()]
}

/// How many edits a candidate may be from `wanted` and still be suggested.
fn limit(wanted: &str) -> usize {
    (wanted.chars().count() / 3).max(1)
}

/// Up to three candidates close to `wanted`, closest first (ties by name).
pub fn closest<S: AsRef<str> + Ord>(wanted: &str, candidates: impl IntoIterator<Item = S>) -> Vec<S> {
    let limit = limit(wanted);
    let mut scored: Vec<(usize, S)> = candidates
        .into_iter()
        .filter(|c| c.as_ref() != wanted)
        .map(|c| (distance(wanted, c.as_ref()), c))
        .filter(|(d, _)| *d <= limit)
        .collect();
    scored.sort();
    scored.dedup();
    scored.into_iter().take(3).map(|(_, c)| c).collect()
}

/// The closest candidate to `wanted`, if any is close enough.
pub fn did_you_mean<S: AsRef<str> + Ord>(wanted: &str, candidates: impl IntoIterator<Item = S>) -> Option<S> {
    closest(wanted, candidates).into_iter().next()
}

/// Words people bring from Puppet and Ansible for a `state`, and what mcl calls them.
const SYNONYMS: &[(&str, &str)] = &[("present", "exists"), ("file", "exists"), ("directory", "exists")];

/// The allowed value someone who wrote `wanted` most likely meant: a close spelling, or
/// the mcl word for another tool's (`present` is `exists`).
pub fn allowed_value<'a>(wanted: &str, allowed: &'a [impl AsRef<str>]) -> Option<&'a str> {
    let named = allowed.iter().map(AsRef::as_ref).filter(|a| !a.is_empty());
    did_you_mean(wanted, named).or_else(|| {
        let (_, word) = SYNONYMS.iter().find(|(other, _)| *other == wanted)?;
        allowed.iter().map(AsRef::as_ref).find(|a| a == word)
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn allowed_values_are_suggested_by_spelling_or_by_another_tools_word() {
        let state = ["", "exists", "absent"];
        assert_eq!(allowed_value("exist", &state), Some("exists"));
        assert_eq!(allowed_value("present", &state), Some("exists"));
        assert_eq!(allowed_value("gone", &state), None);
        assert_eq!(allowed_value("present", &["running", "stopped"]), None);
    }

    #[test]
    fn distance_counts_edits() {
        assert_eq!(distance("kitten", "sitting"), 3);
        assert_eq!(distance("", "abc"), 3);
        assert_eq!(distance("abc", ""), 3);
        assert_eq!(distance("nmae", "name"), 1, "a swap of two neighbours is one edit");
        assert_eq!(distance("same", "same"), 0);
        assert_eq!(distance("valeu", "value"), 1);
    }

    #[test]
    fn closest_keeps_near_names_only() {
        let got = closest("pritnf", ["printf".to_string(), "print".to_string(), "len".to_string()]);
        assert_eq!(got, vec!["printf".to_string(), "print".to_string()]);
        assert!(closest("x", ["yyyyy".to_string()]).is_empty());
    }

    #[test]
    fn did_you_mean_takes_the_closest() {
        assert_eq!(did_you_mean("anotherstr", ["anotherstr2", "int", "bool"]), Some("anotherstr2"));
        assert_eq!(did_you_mean("xyz", ["anotherstr", "int"]), None);
        assert_eq!(did_you_mean("nmae", ["name", "host"]), Some("name"));
        assert_eq!(did_you_mean("contnet", ["content", "context", "mode"]), Some("content"));
    }
}
