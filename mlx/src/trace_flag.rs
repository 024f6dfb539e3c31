//! The tracing flags of this thread: while a function is traced,
//! evaluating is an error, and while it is traced for a shapeless export,
//! ops record broadcasts against their operands. A leaf module (it imports
//! nothing from the crate), so ops and arrays read the flags without
//! depending on `transforms`.

use std::cell::Cell;

thread_local! {
    static TRACING: Cell<usize> = const { Cell::new(0) };
    static SHAPELESS: Cell<usize> = const { Cell::new(0) };
}

/// Whether this thread is tracing for a shapeless export: ops then record
/// broadcasts against their operands (shape donors) instead of fixed shapes.
pub fn is_shapeless_tracing() -> bool {
    SHAPELESS.with(|t| t.get() > 0)
}

/// Marks this thread as tracing shapelessly until the guard drops.
pub struct ShapelessGuard(());

impl ShapelessGuard {
    pub fn enter() -> ShapelessGuard {
        SHAPELESS.with(|t| t.set(t.get() + 1));
        ShapelessGuard(())
    }
}

impl Drop for ShapelessGuard {
    fn drop(&mut self) {
        SHAPELESS.with(|t| t.set(t.get() - 1));
    }
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
