//! Two halves of a large program's work side by side: the one way a phase splits
//! independent items (statements, declarations, resources) across two threads.

/// Items from which a phase works in two halves at once. Below it a second thread costs
/// more than it saves.
pub const IN_HALVES: usize = 8192;

/// Items from which a light phase (a microsecond an item or less), or one whose second
/// half is made apart and then copied into place, works in halves: below it the second
/// thread's memory (its heap's pages, the copy) lifts a small program's peak by 2-3 MiB at
/// 10,000 resources, a tenth of it, for a few milliseconds saved.
pub const IN_HALVES_LARGE: usize = 32_768;

/// Runs `head` on this thread and `tail` on a second one, at once, and returns both
/// results; a panic in either comes back to the caller as it was.
pub fn both<H, T>(head: impl FnOnce() -> H, tail: impl FnOnce() -> T + Send) -> (H, T)
where
    T: Send,
{
    std::thread::scope(|s| {
        let tail = s.spawn(tail);
        let head = head();
        (head, tail.join().unwrap_or_else(|panic| std::panic::resume_unwind(panic)))
    })
}

#[cfg(test)]
mod tests {
    use super::both;

    #[test]
    fn both_halves_run_and_come_back_in_place() {
        let mut items: Vec<u32> = (0..10).collect();
        let (head, tail) = items.split_at_mut(5);
        let here = std::thread::current().id();
        let (h, t) = both(
            || {
                head.iter_mut().for_each(|i| *i *= 2);
                std::thread::current().id()
            },
            || {
                tail.iter_mut().for_each(|i| *i += 100);
                std::thread::current().id()
            },
        );
        assert_eq!(items, [0, 2, 4, 6, 8, 105, 106, 107, 108, 109]);
        assert_eq!(h, here);
        assert_ne!(t, here, "the tail runs on a thread of its own");
    }

    #[test]
    fn a_panic_in_the_tail_reaches_the_caller() {
        let caught = std::panic::catch_unwind(|| both(|| 1, || -> u32 { panic!("tail failed") }));
        let payload = caught.expect_err("the tail's panic is the caller's");
        assert_eq!(payload.downcast_ref::<&str>(), Some(&"tail failed"));
    }
}
