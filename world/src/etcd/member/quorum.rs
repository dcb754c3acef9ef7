//! The arithmetic of membership changes: what keeps a majority, and whether to grow.

/// Members that must agree in a cluster of `n`.
pub(super) fn quorum(n: usize) -> usize {
    n / 2 + 1
}

/// Whether removing one member of `members`, leaving `healthy_after` healthy ones, keeps
/// a majority of what is left. The last member is never removed: it holds the data.
pub(super) fn may_remove(members: usize, healthy_after: usize) -> bool {
    members > 1 && healthy_after >= quorum(members - 1)
}

/// Whether an agent that may serve should add itself: the cluster is below its ideal
/// size and no other member is half-added (etcd adds one at a time safely).
pub(super) fn should_join(members: usize, unstarted: usize, ideal: usize) -> bool {
    members < ideal && unstarted == 0
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_removal_never_leaves_a_minority() {
        // Three members, one dead: the two healthy ones are a majority of two.
        assert!(may_remove(3, 2));
        // Three members, two dead: one of two is no majority.
        assert!(!may_remove(3, 1));
        // Five members, two dead: three of four is a majority.
        assert!(may_remove(5, 3));
        assert!(!may_remove(5, 2));
        // A member leaving a healthy pair leaves one of one.
        assert!(may_remove(2, 1));
        assert!(!may_remove(1, 0), "the last member stays");
    }

    #[test]
    fn agents_join_below_the_ideal_size_one_at_a_time() {
        assert!(should_join(1, 0, 3));
        assert!(!should_join(3, 0, 3));
        assert!(!should_join(2, 1, 5), "another is being added");
        assert!(!should_join(1, 0, 1));
    }
}
