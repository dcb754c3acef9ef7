//! Did-you-mean suggestions for unknown names (Levenshtein distance over the names in
//! scope).

/// Edit distance between two strings (insert, delete, substitute, swap two neighbours;
/// by chars): the optimal string alignment distance.
pub(crate) fn distance(a: &str, b: &str) -> usize {
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

/// Up to three candidates close to `wanted`, closest first (ties by name).
pub(crate) fn closest(wanted: &str, candidates: impl IntoIterator<Item = String>) -> Vec<String> {
    let limit = (wanted.chars().count() / 3).max(1);
    let mut scored: Vec<(usize, String)> = candidates
        .into_iter()
        .filter(|c| c != wanted)
        .map(|c| (distance(wanted, &c), c))
        .filter(|(d, _)| *d <= limit)
        .collect();
    scored.sort();
    scored.dedup();
    scored.into_iter().take(3).map(|(_, c)| c).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn distance_counts_edits() {
        assert_eq!(distance("kitten", "sitting"), 3);
        assert_eq!(distance("", "abc"), 3);
        assert_eq!(distance("same", "same"), 0);
        assert_eq!(distance("valeu", "value"), 1);
    }

    #[test]
    fn closest_keeps_near_names_only() {
        let got = closest("pritnf", ["printf".to_string(), "print".to_string(), "len".to_string()]);
        assert_eq!(got, vec!["printf".to_string(), "print".to_string()]);
        assert!(closest("x", ["yyyyy".to_string()]).is_empty());
    }
}
