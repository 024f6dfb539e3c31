//! The tracing flag: while a function is traced, evaluating is an error.

use std::cell::Cell;

thread_local! {
    static TRACING: Cell<usize> = const { Cell::new(0) };
}

/// Whether this thread is tracing a function.
pub fn is_tracing() -> bool {
    TRACING.with(|t| t.get() > 0)
}

/// Marks this thread as tracing until the guard drops (nests).
pub struct TraceGuard(());

impl TraceGuard {
    pub fn enter() -> TraceGuard {
        TRACING.with(|t| t.set(t.get() + 1));
        TraceGuard(())
    }
}

impl Drop for TraceGuard {
    fn drop(&mut self) {
        TRACING.with(|t| t.set(t.get() - 1));
    }
}
