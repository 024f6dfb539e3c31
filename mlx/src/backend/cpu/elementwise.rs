//! Generic element-wise kernels: map one or two (or three) arrays of the
//! same shape into a new row-major array, with contiguous fast paths,
//! buffer donation, and rayon above [`PAR_THRESHOLD`].

use super::copy::{for_each_row, to_contiguous_vec};
use super::f16c::{self, Half};
use super::num::{f16_from_f32, f16_to_f32};
use super::simd::with_fma;
use super::PAR_THRESHOLD;
use crate::array::Data;
use crate::buffer::{cast_bytes, cast_bytes_mut, Buffer};
use crate::layout::gather_range;
use crate::primitive::{ChunkRef, Spec};
use crate::{Array, Element, Result};
use half::f16;
use rayon::prelude::*;

/// Elements per parallel task: large enough to amortise scheduling,
/// small enough to balance two or more cores.
const CHUNK: usize = PAR_THRESHOLD / 4;

/// A new buffer for `spec`'s elements that the kernel writes in full: its
/// old contents are not cleared (bool buffers are, so they never hold a
/// byte other than 0 or 1).
pub fn fresh_output(spec: &Spec) -> Buffer {
    let nbytes = spec.size() * spec.dtype.size();
    if spec.dtype == crate::Dtype::Bool {
        Buffer::zeroed(nbytes)
    } else {
        Buffer::for_overwrite(nbytes)
    }
}

/// Runs `body(start, chunk)` over consecutive chunks of `out`, on several
/// threads when `out` is large, each compiled for AVX2 + FMA when the CPU
/// has them. Callers mark `body` `#[inline(always)]`: only code inlined
/// into [`with_fma`] gets its instructions, and a body the compiler left
/// out of line ran its element function a call at a time, multiply-adds
/// and `floor` as library calls (float16's sigmoid, 8x slower).
fn for_chunks<U: Send>(out: &mut [U], body: impl Fn(usize, &mut [U]) + Sync) {
    if out.len() >= PAR_THRESHOLD {
        out.par_chunks_mut(CHUNK)
            .enumerate()
            .for_each(|(c, o)| with_fma(|| body(c * CHUNK, o)));
    } else {
        with_fma(|| body(0, out));
    }
}

/// Fills `out[i] = f(i-th element)` where the input is read row-major.
fn fill_from<T: Element, U: Element>(
    out: &mut [U],
    src: &Data,
    shape: &[i32],
    f: &(impl Fn(T) -> U + Sync),
) {
    let s = src.buffer.as_slice::<T>();
    if src.is_row_contiguous(shape) {
        let s = &s[src.offset..src.offset + out.len()];
        for_chunks(
            out,
            #[inline(always)]
            |start, o| {
                let x = &s[start..start + o.len()];
                for (o, &x) in o.iter_mut().zip(x) {
                    *o = f(x);
                }
            },
        );
        return;
    }
    let mut k = 0;
    with_fma(|| {
        for_each_row(
            shape,
            &src.strides,
            src.offset,
            #[inline(always)]
            |base, len, stride| {
                for i in 0..len as isize {
                    out[k] = f(s[(base + i * stride) as usize]);
                    k += 1;
                }
            },
        )
    });
}

/// `out = f(a)` element-wise; `a` has the output's shape.
pub fn unary<T: Element, U: Element>(
    a: &Array,
    out: &Spec,
    f: impl Fn(T) -> U + Sync,
) -> Result<Data> {
    if std::mem::size_of::<T>() == std::mem::size_of::<U>() {
        if let Some(mut buf) = a.try_donate() {
            map_in_place(&mut buf, out.size(), &f);
            return Ok(Data::contiguous(buf, &out.shape));
        }
    }
    let da = a.data()?;
    let mut buf = fresh_output(out);
    fill_from(
        buf.as_mut_slice::<U>().expect("heap buffer"),
        &da,
        a.shape(),
        &f,
    );
    Ok(Data::contiguous(buf, &out.shape))
}

/// Converts the `n` elements of a donated buffer from T to U in place.
fn map_in_place<T: Element, U: Element>(buf: &mut Buffer, n: usize, f: &(impl Fn(T) -> U + Sync)) {
    let data = &mut buf.as_mut_slice::<T>().expect("heap buffer")[..n];
    for_chunks(
        data,
        #[inline(always)]
        |_, chunk| {
            let p = chunk.as_mut_ptr();
            for i in 0..chunk.len() {
                // SAFETY: T and U have the same size; element i of this chunk is
                // read before it is written, and no other thread touches it.
                unsafe {
                    let x = p.add(i).read();
                    (p as *mut U).add(i).write(f(x));
                }
            }
        },
    );
}

/// The contiguous elements of an operand, or its one value when it is a
/// broadcast scalar.
#[derive(Clone, Copy)]
enum Operand<'a, T> {
    Dense(&'a [T]),
    Scalar(T),
}

impl<'a, T: Element> Operand<'a, T> {
    /// `None` for a strided operand (neither dense nor a broadcast scalar).
    fn of(d: &'a Data, shape: &[i32], n: usize) -> Option<Operand<'a, T>> {
        let s = d.buffer.as_slice::<T>();
        if d.strides.iter().all(|&st| st == 0) {
            Some(Operand::Scalar(s[d.offset]))
        } else if d.is_row_contiguous(shape) {
            Some(Operand::Dense(&s[d.offset..d.offset + n]))
        } else {
            None
        }
    }
}

impl<'a, T: Element> Operand<'a, T> {
    /// [`Operand::of`], or a strided operand copied row-major into `keep`.
    fn or_copy(d: &'a Data, shape: &[i32], n: usize, keep: &'a mut Vec<T>) -> Operand<'a, T> {
        Operand::of(d, shape, n).unwrap_or_else(|| {
            *keep = to_contiguous_vec(d, shape);
            Operand::Dense(keep)
        })
    }

    /// Element `i`.
    #[inline(always)]
    fn at(&self, i: usize) -> T {
        match self {
            Operand::Dense(s) => s[i],
            Operand::Scalar(v) => *v,
        }
    }

    /// The operand a fused chunk holds (its bytes are aligned for `T`).
    fn of_chunk(c: ChunkRef<'a>) -> Operand<'a, T> {
        let s = cast_bytes::<T>(c.bytes);
        if c.scalar {
            Operand::Scalar(s[0])
        } else {
            Operand::Dense(s)
        }
    }
}

/// `out = f(a, b)` over one chunk of a fused chain (see [`ChunkRef`]).
pub fn binary_chunk<T: Element, U: Element>(
    a: ChunkRef,
    b: ChunkRef,
    out: &mut [u8],
    f: impl Fn(T, T) -> U,
) {
    let o = cast_bytes_mut::<U>(out);
    zip_chunk(o, 0, Operand::of_chunk(a), Operand::of_chunk(b), &f)
}

/// `out = f(a)` over one chunk of a fused chain (see [`ChunkRef`]),
/// compiled with AVX2 + FMA when the CPU has them (callers mark `f`
/// `#[inline(always)]`, as for [`unary`]).
pub fn unary_chunk<T: Element, U: Element>(a: ChunkRef, out: &mut [u8], f: impl Fn(T) -> U) {
    let o = cast_bytes_mut::<U>(out);
    with_fma(
        #[inline(always)]
        || match Operand::of_chunk(a) {
            Operand::Dense(x) => o.iter_mut().zip(x).for_each(|(o, &x)| *o = f(x)),
            Operand::Scalar(x) => o.fill(f(x)),
        },
    )
}

/// `o[i] = f(x[i], y[i])` over one chunk starting at element `start`.
#[inline(always)]
fn zip_chunk<T: Element, U: Element>(
    o: &mut [U],
    start: usize,
    x: Operand<T>,
    y: Operand<T>,
    f: &impl Fn(T, T) -> U,
) {
    let r = start..start + o.len();
    match (x, y) {
        (Operand::Dense(x), Operand::Dense(y)) => {
            for ((o, &x), &y) in o.iter_mut().zip(&x[r.clone()]).zip(&y[r]) {
                *o = f(x, y);
            }
        }
        (Operand::Dense(x), Operand::Scalar(y)) => {
            for (o, &x) in o.iter_mut().zip(&x[r]) {
                *o = f(x, y);
            }
        }
        (Operand::Scalar(x), Operand::Dense(y)) => {
            for (o, &y) in o.iter_mut().zip(&y[r]) {
                *o = f(x, y);
            }
        }
        (Operand::Scalar(x), Operand::Scalar(y)) => o.fill(f(x, y)),
    }
}

/// `out = f(a, b)` element-wise; `a` and `b` have the output's shape
/// (broadcast views with zero strides are fine).
pub fn binary<T: Element, U: Element>(
    a: &Array,
    b: &Array,
    out: &Spec,
    f: impl Fn(T, T) -> U + Sync,
) -> Result<Data> {
    let shape = out.shape.as_slice();
    let n = out.size();
    if T::DTYPE == U::DTYPE {
        if let Some(d) = binary_donated(a, b, out, &f)? {
            return Ok(d);
        }
    }
    let (da, db) = (a.data()?, b.data()?);
    let mut buf = fresh_output(out);
    let o = buf.as_mut_slice::<U>().expect("heap buffer");
    let strided = |d: &Data| Operand::<T>::of(d, shape, n).is_none();
    if !(strided(&da) && strided(&db)) {
        // Dense, scalar, or one strided operand (a broadcast row such as an
        // attention mask) copied row-major: the vector loop.
        let (mut ka, mut kb) = (Vec::new(), Vec::new());
        let x = Operand::or_copy(&da, shape, n, &mut ka);
        let y = Operand::or_copy(&db, shape, n, &mut kb);
        for_chunks(
            o,
            #[inline(always)]
            |start, o| zip_chunk(o, start, x, y, &f),
        );
    } else {
        // Both strided: materialise b row-major, then walk a's rows.
        let sa = da.buffer.as_slice::<T>();
        let yb = to_contiguous_vec::<T>(&db, shape);
        let mut k = 0;
        for_each_row(shape, &da.strides, da.offset, |base, len, stride| {
            for i in 0..len as isize {
                o[k] = f(sa[(base + i * stride) as usize], yb[k]);
                k += 1;
            }
        });
    }
    Ok(Data::contiguous(buf, shape))
}

/// The binary op written into a donated input buffer (T and U are the same
/// type), when one operand can give its buffer (the other is read in place
/// when dense or a broadcast scalar, else copied row-major first).
fn binary_donated<T: Element, U: Element>(
    a: &Array,
    b: &Array,
    out: &Spec,
    f: &(impl Fn(T, T) -> U + Sync),
) -> Result<Option<Data>> {
    let shape = out.shape.as_slice();
    let n = out.size();
    let same = |x: T, y: T| -> T {
        // SAFETY: the caller checked T::DTYPE == U::DTYPE, so T and U are one type.
        unsafe { std::mem::transmute_copy::<U, T>(&f(x, y)) }
    };
    if let Some((mut buf, dother, donor_first)) = donor(a, b, shape)? {
        // A strided `other` (a broadcast row) is copied row-major.
        let mut keep = Vec::new();
        let y = Operand::<T>::or_copy(&dother, shape, n, &mut keep);
        let o = &mut buf.as_mut_slice::<T>().expect("heap buffer")[..n];
        for_chunks(
            o,
            #[inline(always)]
            |start, o| {
                let r = start..start + o.len();
                match (y, donor_first) {
                    (Operand::Dense(y), true) => {
                        o.iter_mut().zip(&y[r]).for_each(|(o, &y)| *o = same(*o, y))
                    }
                    (Operand::Dense(y), false) => {
                        o.iter_mut().zip(&y[r]).for_each(|(o, &y)| *o = same(y, *o))
                    }
                    (Operand::Scalar(y), true) => o.iter_mut().for_each(|o| *o = same(*o, y)),
                    (Operand::Scalar(y), false) => o.iter_mut().for_each(|o| *o = same(y, *o)),
                }
            },
        );
        return Ok(Some(Data::contiguous(buf, shape)));
    }
    Ok(None)
}

/// The buffer of whichever of `a` and `b` can give it for an output of
/// `shape` (it has that shape, is not the other operand, and nothing else
/// holds it), the other operand's data, and whether the donor is `a`.
fn donor(a: &Array, b: &Array, shape: &[i32]) -> Result<Option<(Buffer, Data, bool)>> {
    for (donor, other, donor_first) in [(a, b, true), (b, a, false)] {
        if donor.shape() != shape || std::ptr::eq(donor, other) {
            continue;
        }
        let dother = other.data()?;
        if let Some(buf) = donor.try_donate() {
            return Ok(Some((buf, dother, donor_first)));
        }
    }
    Ok(None)
}

/// `out = f(c, a, b)` for three same-shape inputs (select-like ops):
/// dense inputs are read in place and broadcast scalars as one value (a
/// prefill's attention mask selects over its scores without copying
/// them); other layouts are copied row-major first.
pub fn ternary<C: Element, T: Element, U: Element>(
    c: &Array,
    a: &Array,
    b: &Array,
    out: &Spec,
    f: impl Fn(C, T, T) -> U + Sync,
) -> Result<Data> {
    let shape = out.shape.as_slice();
    let n = out.size();
    let (dc, da, db) = (c.data()?, a.data()?, b.data()?);
    let (mut kc, mut ka, mut kb) = (Vec::new(), Vec::new(), Vec::new());
    let xc = Operand::<C>::or_copy(&dc, shape, n, &mut kc);
    let xa = Operand::<T>::or_copy(&da, shape, n, &mut ka);
    let xb = Operand::<T>::or_copy(&db, shape, n, &mut kb);
    let mut buf = fresh_output(out);
    let o = buf.as_mut_slice::<U>().expect("heap buffer");
    for_chunks(
        o,
        #[inline(always)]
        |start, o| {
            for (i, o) in (start..).zip(o.iter_mut()) {
                *o = f(xc.at(i), xa.at(i), xb.at(i));
            }
        },
    );
    Ok(Data::contiguous(buf, shape))
}

/// [`for_chunks`] compiled with F16C besides AVX2 and FMA: the float16
/// block kernels of [`f16c`]. Panics on a CPU without them (callers
/// check [`f16c::available`] first).
fn for_f16c_chunks<U: Send>(out: &mut [U], body: impl Fn(usize, &mut [U]) + Sync) {
    assert!(f16c::available(), "the CPU lacks F16C");
    // SAFETY: the CPU has F16C, AVX2 and FMA (asserted above).
    let run = |start, o: &mut [U]| unsafe { f16c::with_f16c(|| body(start, o)) };
    if out.len() >= PAR_THRESHOLD {
        out.par_chunks_mut(CHUNK)
            .enumerate()
            .for_each(|(c, o)| run(c * CHUNK, o));
    } else {
        run(0, out);
    }
}

impl<'a> From<Operand<'a, f16>> for Half<'a> {
    fn from(o: Operand<'a, f16>) -> Half<'a> {
        match o {
            Operand::Dense(s) => Half::Dense(s),
            Operand::Scalar(v) => Half::Scalar(v),
        }
    }
}

/// float16 `out = f16_from_f32(f(x))` with `f` computed in f32 (MLX's
/// float16 arithmetic), through the CPU's conversion instructions a block
/// at a time where it has them ([`f16c`]): the same bits as the element
/// path [`unary`] takes elsewhere, faster.
pub fn unary_f16(a: &Array, out: &Spec, f: impl Fn(f32) -> f32 + Sync) -> Result<Data> {
    unary_f16_blocks(
        a,
        out,
        #[inline(always)]
        |o, start, x| {
            // SAFETY: `for_f16c_chunks` runs this only on a CPU with F16C.
            unsafe { f16c::zip(o, start, x, Half::Scalar(f16::ZERO), &|v, _| f(v)) }
        },
        #[inline(always)]
        |x| f16_from_f32(f(f16_to_f32(x))),
    )
}

/// [`unary_f16`] of `g(x, t)` where `t` is `h(x)` rounded to float16: MLX
/// functions that round an intermediate to the type (sigmoid's exp,
/// rsqrt's square root).
pub fn unary_f16_rounding_twice(
    a: &Array,
    out: &Spec,
    h: impl Fn(f32) -> f32 + Sync,
    g: impl Fn(f32, f32) -> f32 + Sync,
) -> Result<Data> {
    unary_f16_blocks(
        a,
        out,
        #[inline(always)]
        |o, start, x| {
            // SAFETY: `for_f16c_chunks` runs this only on a CPU with F16C.
            unsafe { f16c::map_rounding_twice(o, start, x, &h, &g) }
        },
        #[inline(always)]
        |x| {
            let x = f16_to_f32(x);
            f16_from_f32(g(x, f16_to_f32(f16_from_f32(h(x)))))
        },
    )
}

/// A float16 unary kernel: `block(o, start, x)` writes a chunk `o` of the
/// output (its first element is element `start`) from the input `x`;
/// `element` is the same function of one value, which CPUs without F16C
/// run. A donated input is computed in place; a strided one (a
/// transposed view) is gathered chunk by chunk into the output first.
fn unary_f16_blocks(
    a: &Array,
    out: &Spec,
    block: impl Fn(&mut [f16], usize, Half) + Sync,
    element: impl Fn(f16) -> f16 + Sync,
) -> Result<Data> {
    if !f16c::available() {
        return unary::<f16, f16>(a, out, element);
    }
    let n = out.size();
    if let Some(mut buf) = a.try_donate() {
        let o = &mut buf.as_mut_slice::<f16>().expect("heap buffer")[..n];
        for_f16c_chunks(
            o,
            #[inline(always)]
            |start, o| block(o, start, Half::Out),
        );
        return Ok(Data::contiguous(buf, &out.shape));
    }
    let da = a.data()?;
    let mut buf = fresh_output(out);
    let o = buf.as_mut_slice::<f16>().expect("heap buffer");
    if da.is_row_contiguous(a.shape()) {
        let s = &da.buffer.as_slice::<f16>()[da.offset..da.offset + n];
        for_f16c_chunks(
            o,
            #[inline(always)]
            |start, o| block(o, start, Half::Dense(s)),
        );
    } else {
        for_f16c_chunks(
            o,
            #[inline(always)]
            |start, o| {
                gather_range(&da, a.shape(), start, o);
                block(o, start, Half::Out)
            },
        );
    }
    Ok(Data::contiguous(buf, &out.shape))
}

/// float16 `out = f16_from_f32(f(x, y))` with `f` computed in f32, as
/// [`unary_f16`] does it; a donated operand is overwritten in place and a
/// strided one copied row-major first, as [`binary`] does.
pub fn binary_f16(
    a: &Array,
    b: &Array,
    out: &Spec,
    f: impl Fn(f32, f32) -> f32 + Sync,
) -> Result<Data> {
    if !f16c::available() {
        return binary::<f16, f16>(
            a,
            b,
            out,
            #[inline(always)]
            |x, y| f16_from_f32(f(f16_to_f32(x), f16_to_f32(y))),
        );
    }
    let shape = out.shape.as_slice();
    let n = out.size();
    #[inline(always)]
    fn block(o: &mut [f16], start: usize, x: Half, y: Half, f: &impl Fn(f32, f32) -> f32) {
        // SAFETY: `for_f16c_chunks` runs this only on a CPU with F16C.
        unsafe { f16c::zip(o, start, x, y, f) }
    }
    if let Some((mut buf, dother, donor_first)) = donor(a, b, shape)? {
        let mut keep = Vec::new();
        let y = Half::from(Operand::<f16>::or_copy(&dother, shape, n, &mut keep));
        let o = &mut buf.as_mut_slice::<f16>().expect("heap buffer")[..n];
        for_f16c_chunks(
            o,
            #[inline(always)]
            |start, o| {
                if donor_first {
                    block(o, start, Half::Out, y, &f)
                } else {
                    block(o, start, y, Half::Out, &f)
                }
            },
        );
        return Ok(Data::contiguous(buf, shape));
    }
    let (da, db) = (a.data()?, b.data()?);
    let (mut ka, mut kb) = (Vec::new(), Vec::new());
    let x = Half::from(Operand::or_copy(&da, shape, n, &mut ka));
    let y = Half::from(Operand::or_copy(&db, shape, n, &mut kb));
    let mut buf = fresh_output(out);
    let o = buf.as_mut_slice::<f16>().expect("heap buffer");
    for_f16c_chunks(
        o,
        #[inline(always)]
        |start, o| block(o, start, x, y, &f),
    );
    Ok(Data::contiguous(buf, shape))
}

/// [`binary_f16`] over one chunk of a fused chain (see [`ChunkRef`]).
pub fn binary_chunk_f16(
    a: ChunkRef,
    b: ChunkRef,
    out: &mut [u8],
    f: impl Fn(f32, f32) -> f32 + Sync,
) {
    if !f16c::available() {
        return binary_chunk::<f16, f16>(
            a,
            b,
            out,
            #[inline(always)]
            |x, y| f16_from_f32(f(f16_to_f32(x), f16_to_f32(y))),
        );
    }
    let o = cast_bytes_mut::<f16>(out);
    let (x, y) = (Operand::of_chunk(a).into(), Operand::of_chunk(b).into());
    // SAFETY: the CPU has F16C, AVX2 and FMA (checked above).
    unsafe { f16c::with_f16c(|| f16c::zip(o, 0, x, y, &f)) }
}

/// float32 to float16 or back (`T` -> `U`), rounding as
/// [`f16_from_f32`] does: a contiguous input `block(src, dst)` a chunk at
/// a time with F16C, else `element` per value.
pub fn convert_f16<T: Element, U: Element>(
    a: &Array,
    out: &Spec,
    block: impl Fn(&[T], &mut [U]) + Sync,
    element: impl Fn(T) -> U + Sync,
) -> Result<Data> {
    let da = a.data()?;
    if !f16c::available() || !da.is_row_contiguous(a.shape()) {
        return unary::<T, U>(a, out, element);
    }
    let s = &da.buffer.as_slice::<T>()[da.offset..da.offset + out.size()];
    let mut buf = fresh_output(out);
    for_f16c_chunks(
        buf.as_mut_slice::<U>().expect("heap buffer"),
        #[inline(always)]
        |start, o| block(&s[start..start + o.len()], o),
    );
    Ok(Data::contiguous(buf, &out.shape))
}
