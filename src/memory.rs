//! Giving back to the OS the memory a finished phase freed.
//!
//! mimalloc returns a free page to the OS only when the thread owning it next allocates or
//! frees, after a short delay (`main.rs`). The thread that compiles, interprets and swaps a
//! program (`tend run`'s main loop) then sits waiting for the next edit or event, so what
//! those phases freed around the pages still in use would stay resident for as long as the
//! daemon idles: 14 MiB of a daemon watching 100,000 files.

/// Makes the calling thread's allocator heap give back every page it holds free. A few
/// milliseconds at 100,000 resources: for the end of a phase, not for a hot path.
pub fn release_freed() {
    #[cfg(not(feature = "system-alloc"))]
    {
        // SAFETY: `mi_collect` only walks the calling thread's own heap and the pages other
        // threads abandoned; it takes no pointer of ours.
        #[allow(unsafe_code)]
        unsafe {
            libmimalloc_sys::mi_collect(true)
        };
    }
}
