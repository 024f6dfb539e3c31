//! Working buffers each thread keeps between calls: a fresh buffer of some
//! megabytes costs a page fault per 4 KiB on every call (7-9 ms of a
//! 2048^3 product's 75 ms when the packed `A` was allocated each time).

/// 64-byte aligned storage, so packed vectors never straddle cache lines.
#[derive(Clone, Copy)]
#[repr(align(64))]
pub(super) struct Line(#[allow(dead_code)] [f32; 16]); // (read through `floats`)

/// A zeroed buffer of at least `len` f32.
fn zeroed(len: usize) -> Vec<Line> {
    vec![Line([0.0; 16]); len.div_ceil(16)]
}

/// The buffer's values.
pub(super) fn values(v: &[Line]) -> &[f32] {
    // SAFETY: a Line is 16 f32 with no padding.
    unsafe { std::slice::from_raw_parts(v.as_ptr().cast(), v.len() * 16) }
}

/// The buffer's values, to write.
pub(super) fn floats(v: &mut [Line]) -> &mut [f32] {
    // SAFETY: a Line is 16 f32 with no padding.
    unsafe { std::slice::from_raw_parts_mut(v.as_mut_ptr().cast(), v.len() * 16) }
}

/// Which of a thread's kept buffers: each user has its own, so one may be
/// held while code it calls takes another.
#[derive(Clone, Copy)]
pub(super) enum Slot {
    /// `sgemm512`'s packed left operand (of one product, or a `PackedA`).
    PackedA = 0,
    /// `sgemm512`'s packed slabs of the right operand.
    Slabs = 1,
    /// A tile of a quantized matrix dequantized for a product (`quantized::qmm`).
    Dequantized = 2,
}

/// Buffers larger than this are not kept.
const KEPT_LINES: usize = (64 << 20) / 64;

thread_local! {
    static SCRATCH: std::cell::RefCell<[Vec<Line>; 3]> = const {
        std::cell::RefCell::new([Vec::new(), Vec::new(), Vec::new()])
    };
}

/// This thread's buffer `slot` with room for at least `len` f32 (contents
/// unspecified: the caller writes every value it reads); hand it back with
/// [`keep`].
pub(super) fn take(slot: Slot, len: usize) -> Vec<Line> {
    let buf = SCRATCH.with(|s| std::mem::take(&mut s.borrow_mut()[slot as usize]));
    if buf.len() < len.div_ceil(16) {
        zeroed(len)
    } else {
        buf
    }
}

/// Keeps `buf` as this thread's buffer `slot` for the next [`take`],
/// unless it is larger than [`KEPT_LINES`].
pub(super) fn keep(slot: Slot, buf: Vec<Line>) {
    if buf.len() <= KEPT_LINES {
        SCRATCH.with(|s| s.borrow_mut()[slot as usize] = buf);
    }
}

/// Calls `body` with the first `len` f32 of this thread's buffer `slot`
/// ([`take`], then [`keep`]).
pub(super) fn with_scratch<R>(slot: Slot, len: usize, body: impl FnOnce(&mut [f32]) -> R) -> R {
    let mut buf = take(slot, len);
    let r = body(&mut floats(&mut buf)[..len]);
    keep(slot, buf);
    r
}
