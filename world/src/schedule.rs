//! Schedules (`schedule` resources, `world.schedule`): a host's [`Candidacy`] and how a
//! namespace [`choose`]s among its candidates. Both backends decide the same way.

use std::collections::BTreeMap;

/// A host's candidacy for a schedule namespace (the `schedule` resource's terms).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Candidacy {
    /// `rr` (sticky round robin) or `alpha` (by name).
    pub strategy: String,
    /// How many hosts the namespace chooses.
    pub max: i64,
    /// Kept after the host is gone.
    pub persist: bool,
    /// Seconds the candidacy outlives the resource that made it (0: it ends with it).
    pub ttl: u64,
    /// The resource instance that volunteered: a replaced instance's withdrawal leaves
    /// its successor's candidacy alone.
    pub owner: String,
}

impl Candidacy {
    /// `key=value` lines.
    pub fn render(&self) -> String {
        format!(
            "strategy={}\nmax={}\npersist={}\nttl={}\nowner={}\n",
            self.strategy, self.max, self.persist, self.ttl, self.owner
        )
    }

    /// The inverse of [`Candidacy::render`]; other lines are ignored.
    pub fn parse(text: &str) -> Option<Candidacy> {
        let field = |key: &str| text.lines().find_map(|l| l.strip_prefix(key)?.strip_prefix('='));
        Some(Candidacy {
            strategy: field("strategy")?.to_string(),
            max: field("max")?.parse().ok()?,
            persist: field("persist")?.parse().ok()?,
            ttl: field("ttl")?.parse().ok()?,
            owner: field("owner")?.to_string(),
        })
    }
}

/// The hosts a namespace chooses from its `candidates` (host -> terms), given the hosts it
/// chose `before`. The terms of the first candidate by name decide (so every leader
/// decides the same); `alpha` takes the first `max` by name; `rr` keeps the hosts it chose
/// before that are still candidates, then adds the others by name, up to `max`. The result
/// is sorted.
pub fn choose(candidates: &BTreeMap<String, Candidacy>, before: &[String]) -> Vec<String> {
    let Some(terms) = candidates.values().next() else { return Vec::new() };
    let max = usize::try_from(terms.max.max(1)).unwrap_or(usize::MAX);
    let mut chosen: Vec<String> = if terms.strategy == "alpha" {
        Vec::new()
    } else {
        before.iter().filter(|h| candidates.contains_key(*h)).take(max).cloned().collect()
    };
    for host in candidates.keys() {
        if chosen.len() >= max {
            break;
        }
        if !chosen.contains(host) {
            chosen.push(host.clone());
        }
    }
    chosen.sort();
    chosen
}

#[cfg(test)]
mod tests {
    use super::*;

    fn terms(strategy: &str, max: i64) -> Candidacy {
        Candidacy { strategy: strategy.into(), max, persist: false, ttl: 0, owner: "o".into() }
    }

    fn hosts(names: &[&str]) -> Vec<String> {
        names.iter().map(|s| s.to_string()).collect()
    }

    #[test]
    fn round_robin_is_sticky_and_alpha_is_by_name() {
        let cands = |names: &[&str], strategy: &str| -> BTreeMap<String, Candidacy> {
            names.iter().map(|h| (h.to_string(), terms(strategy, 2))).collect()
        };
        assert_eq!(choose(&cands(&["h3", "h1", "h2"], "rr"), &[]), hosts(&["h1", "h2"]));
        // h1 went away: h3 takes its place; when h1 is back it waits.
        assert_eq!(choose(&cands(&["h2", "h3"], "rr"), &hosts(&["h1", "h2"])), hosts(&["h2", "h3"]));
        assert_eq!(choose(&cands(&["h1", "h2", "h3"], "rr"), &hosts(&["h2", "h3"])), hosts(&["h2", "h3"]));
        assert_eq!(choose(&cands(&["h1", "h2", "h3"], "alpha"), &hosts(&["h2", "h3"])), hosts(&["h1", "h2"]));
        assert_eq!(choose(&BTreeMap::new(), &hosts(&["h1"])), Vec::<String>::new());
        let c = terms("rr", 3);
        assert_eq!(Candidacy::parse(&c.render()), Some(c.clone()));
        assert_eq!(Candidacy::parse(&format!("{}expires=5\n", c.render())), Some(c));
        assert_eq!(Candidacy::parse("max=x"), None);
    }
}
