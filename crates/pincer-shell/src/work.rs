//! A count of the classifier's elementary steps, for the tests that check
//! that classification is linear in the input (a deterministic proxy for
//! time: every character the lexer reads, every token the splitter sees,
//! every word a rule looks at, every step of a glob or path comparison).
//! In a normal build [`tick`] is empty and costs nothing.

#[cfg(test)]
thread_local! {
    static STEPS: std::cell::Cell<u64> = const { std::cell::Cell::new(0) };
}

/// Counts `n` steps.
#[inline]
pub(crate) fn tick(n: usize) {
    #[cfg(test)]
    STEPS.with(|s| s.set(s.get().saturating_add(n as u64)));
    #[cfg(not(test))]
    let _ = n;
}

/// Steps counted on this thread since the last call.
#[cfg(test)]
pub(crate) fn take() -> u64 {
    STEPS.with(|s| s.replace(0))
}
