//! float16 element-wise kernels on the CPU's conversion instructions
//! (F16C's `vcvtph2ps` / `vcvtps2ph`): a block of values is widened to
//! f32, the f32 operation runs over the block, and the block is rounded
//! back to float16.
//!
//! The element path rounds with [`f16_from_f32`]'s branch-free integer
//! sequence, about twelve vector instructions per eight values; the
//! instruction is one, plus a fix-up of NaN lanes (it keeps a NaN's
//! payload, `sign | 0x7E00 | payload`, where MLX writes `sign | 0x7D00`).
//! Otherwise both round to nearest even, subnormals, -0.0 and overflow to
//! infinity included, so the results are the element path's bit for bit
//! (tests below compare them).

use super::num::{f16_from_f32, f16_to_f32};
use half::f16;

/// Values per block: each operand's block is eight 256-bit registers of
/// f32, and the stack buffers stay in L1.
const BLOCK: usize = 64;

/// Whether the CPU has F16C besides AVX2 and FMA (checked once, then
/// cached by std).
#[inline]
pub fn available() -> bool {
    #[cfg(target_arch = "x86_64")]
    {
        super::simd::has_fma() && is_x86_feature_detected!("f16c")
    }
    #[cfg(not(target_arch = "x86_64"))]
    {
        false
    }
}

/// Calls `body` compiled with AVX2, FMA and F16C: the block functions
/// below, inlined into it, get the conversion instructions and the f32
/// operation its vector loop. Call it around a whole loop.
///
/// # Safety
/// The CPU must have them ([`available`]).
#[inline(always)]
pub unsafe fn with_f16c<R>(body: impl FnOnce() -> R) -> R {
    #[cfg(target_arch = "x86_64")]
    {
        // SAFETY: the caller checked the CPU has the features.
        unsafe { call_with_f16c(body) }
    }
    #[cfg(not(target_arch = "x86_64"))]
    body()
}

/// # Safety
/// The CPU must support AVX2, FMA and F16C.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2,fma,f16c")]
unsafe fn call_with_f16c<R>(body: impl FnOnce() -> R) -> R {
    body()
}

/// Where a float16 operand of a block kernel reads its values.
#[derive(Clone, Copy)]
pub enum Half<'a> {
    /// The whole operand: element `start + i` pairs with `o[i]`.
    Dense(&'a [f16]),
    /// One value for every element (a broadcast scalar).
    Scalar(f16),
    /// The output's own values (a donated input, overwritten in place).
    Out,
}

/// `dst[i] = f16_to_f32(src[i])`, eight at a time with `vcvtph2ps`.
///
/// # Safety
/// The CPU must have F16C ([`available`]); call it inlined into
/// [`with_f16c`] to get the instruction inline.
#[inline(always)]
pub unsafe fn widen(src: &[f16], dst: &mut [f32]) {
    let n = src.len().min(dst.len());
    let mut i = 0;
    #[cfg(target_arch = "x86_64")]
    while i + 8 <= n {
        use std::arch::x86_64::*;
        // SAFETY: elements i..i + 8 of both slices exist (i + 8 <= n);
        // the CPU has F16C (the caller's contract).
        unsafe {
            let h = _mm_loadu_si128(src.as_ptr().add(i) as *const __m128i);
            _mm256_storeu_ps(dst.as_mut_ptr().add(i), _mm256_cvtph_ps(h));
        }
        i += 8;
    }
    for (d, &s) in dst[i..n].iter_mut().zip(&src[i..n]) {
        *d = f16_to_f32(s);
    }
}

/// `dst[i] = f16_from_f32(src[i])`, eight at a time with `vcvtps2ph`
/// (round to nearest even) and MLX's NaN put in NaN lanes.
///
/// # Safety
/// As for [`widen`].
#[inline(always)]
pub unsafe fn narrow(src: &[f32], dst: &mut [f16]) {
    let n = src.len().min(dst.len());
    let mut i = 0;
    #[cfg(target_arch = "x86_64")]
    while i + 8 <= n {
        use std::arch::x86_64::*;
        // SAFETY: elements i..i + 8 of both slices exist (i + 8 <= n);
        // the CPU has F16C and AVX2 (the caller's contract).
        unsafe {
            let h =
                _mm256_cvtps_ph::<_MM_FROUND_TO_NEAREST_INT>(_mm256_loadu_ps(src.as_ptr().add(i)));
            // A float16 is NaN when its magnitude is above infinity's
            // 0x7C00 (no lane is NaN unless its f32 was); those lanes
            // become sign | 0x7D00.
            let magnitude = _mm_and_si128(h, _mm_set1_epi16(0x7FFF));
            let nan = _mm_cmpgt_epi16(magnitude, _mm_set1_epi16(0x7C00));
            let sign = _mm_and_si128(h, _mm_set1_epi16(i16::MIN));
            let mlx_nan = _mm_or_si128(sign, _mm_set1_epi16(0x7D00));
            let h = _mm_blendv_epi8(h, mlx_nan, nan);
            _mm_storeu_si128(dst.as_mut_ptr().add(i) as *mut __m128i, h);
        }
        i += 8;
    }
    for (d, &s) in dst[i..n].iter_mut().zip(&src[i..n]) {
        *d = f16_from_f32(s);
    }
}

/// The block of `h` at element `at` (`out.len()` values) widened into
/// `buf`; a scalar is left as [`fill`] put it.
///
/// # Safety
/// As for [`widen`].
#[inline(always)]
unsafe fn load(h: Half, at: usize, out: &[f16], buf: &mut [f32; BLOCK]) {
    let n = out.len();
    // SAFETY: the caller's contract.
    unsafe {
        match h {
            Half::Dense(s) => widen(&s[at..at + n], &mut buf[..n]),
            Half::Out => widen(out, &mut buf[..n]),
            Half::Scalar(_) => {}
        }
    }
}

/// A scalar operand's value in every lane of `buf` (once per call: blocks
/// never overwrite it).
#[inline(always)]
fn fill(h: Half, buf: &mut [f32; BLOCK]) {
    if let Half::Scalar(v) = h {
        buf.fill(f16_to_f32(v));
    }
}

/// `o[i] = f16_from_f32(f(x_i, y_i))` with `x_i`, `y_i` element
/// `start + i` of `x` and `y` widened (MLX's float16 arithmetic), a block
/// at a time. Every block runs `f` over all its lanes, so `f` must be
/// pure: a short last block computes (and drops) lanes of stale values.
///
/// # Safety
/// As for [`widen`].
#[inline(always)]
pub unsafe fn zip(o: &mut [f16], start: usize, x: Half, y: Half, f: &impl Fn(f32, f32) -> f32) {
    let (mut xs, mut ys, mut r) = ([0f32; BLOCK], [0f32; BLOCK], [0f32; BLOCK]);
    fill(x, &mut xs);
    fill(y, &mut ys);
    for (b, ob) in o.chunks_mut(BLOCK).enumerate() {
        let at = start + b * BLOCK;
        // SAFETY: the caller's contract.
        unsafe {
            load(x, at, ob, &mut xs);
            load(y, at, ob, &mut ys);
        }
        for i in 0..BLOCK {
            r[i] = f(xs[i], ys[i]);
        }
        // SAFETY: the caller's contract.
        unsafe { narrow(&r[..ob.len()], ob) };
    }
}

/// `o[i] = f16_from_f32(g(x_i, t))` where `t` is `h(x_i)` rounded to
/// float16 and widened again: MLX functions that round an intermediate to
/// the type (sigmoid's exp, rsqrt's square root). Blocks as in [`zip`].
///
/// # Safety
/// As for [`widen`].
#[inline(always)]
pub unsafe fn map_rounding_twice(
    o: &mut [f16],
    start: usize,
    x: Half,
    h: &impl Fn(f32) -> f32,
    g: &impl Fn(f32, f32) -> f32,
) {
    let (mut xs, mut r) = ([0f32; BLOCK], [0f32; BLOCK]);
    fill(x, &mut xs);
    for (b, ob) in o.chunks_mut(BLOCK).enumerate() {
        // SAFETY: the caller's contract (for every call in this block).
        unsafe {
            load(x, start + b * BLOCK, ob, &mut xs);
            for i in 0..BLOCK {
                r[i] = h(xs[i]);
            }
            round_in_place(&mut r);
            for i in 0..BLOCK {
                r[i] = g(xs[i], r[i]);
            }
            narrow(&r[..ob.len()], ob);
        }
    }
}

/// `x` rounded to float16 and widened again, in place (a block).
///
/// # Safety
/// As for [`widen`].
#[inline(always)]
unsafe fn round_in_place(x: &mut [f32]) {
    let mut t = [f16::ZERO; BLOCK];
    let t = &mut t[..x.len()];
    // SAFETY: the caller's contract.
    unsafe {
        narrow(x, t);
        widen(t, x);
    }
}

/// One row of a recognised rms_norm in float16: `o[j] = f16(f16(x[j] · r)
/// · w[j])`, each product rounded as MLX's float16 multiply rounds it
/// (the product of two float16 values is exact in f32).
///
/// # Safety
/// As for [`widen`].
#[inline(always)]
pub unsafe fn norm_row(x: &[f32], r: f32, w: &[f16], o: &mut [f16]) {
    let (mut a, mut wf) = ([0f32; BLOCK], [0f32; BLOCK]);
    for ((xb, wb), ob) in x
        .chunks(BLOCK)
        .zip(w.chunks(BLOCK))
        .zip(o.chunks_mut(BLOCK))
    {
        let (a, wf) = (&mut a[..xb.len()], &mut wf[..xb.len()]);
        for (a, &v) in a.iter_mut().zip(xb) {
            *a = v * r;
        }
        // SAFETY: the caller's contract (for every call in this block).
        unsafe {
            round_in_place(a);
            widen(wb, wf);
            for (a, &w) in a.iter_mut().zip(wf.iter()) {
                *a *= w;
            }
            narrow(a, ob);
        }
    }
}

/// One row of a recognised rope over halves in float16: `o1 = f16(f16(x1
/// · c) − f16(x2 · s))`, `o2 = f16(f16(x1 · s) + f16(x2 · c))`, every
/// operation rounded on its own as the element path rounds it.
///
/// # Safety
/// As for [`widen`].
#[inline(always)]
pub unsafe fn rope_halves_row(
    x: [&[f16]; 2],
    c: &[f16],
    s: &[f16],
    o1: &mut [f16],
    o2: &mut [f16],
) {
    let mut v = [[0f32; BLOCK]; 4];
    let (mut p, mut q) = ([0f32; BLOCK], [0f32; BLOCK]);
    for start in (0..c.len()).step_by(BLOCK) {
        let n = (c.len() - start).min(BLOCK);
        let block = start..start + n;
        let [x1, x2, cb, sb] = &mut v;
        let (x1, x2, cb, sb) = (&mut x1[..n], &mut x2[..n], &mut cb[..n], &mut sb[..n]);
        let (p, q) = (&mut p[..n], &mut q[..n]);
        // SAFETY: the caller's contract (for every call in this block).
        unsafe {
            widen(&x[0][block.clone()], x1);
            widen(&x[1][block.clone()], x2);
            widen(&c[block.clone()], cb);
            widen(&s[block.clone()], sb);
            for (sign, (cp, cq), out) in [
                (-1.0f32, (&*cb, &*sb), &mut o1[block.clone()]),
                (1.0, (&*sb, &*cb), &mut o2[block.clone()]),
            ] {
                for i in 0..n {
                    p[i] = x1[i] * cp[i];
                    q[i] = x2[i] * cq[i];
                }
                round_in_place(p);
                round_in_place(q);
                for i in 0..n {
                    p[i] += sign * q[i];
                }
                narrow(p, out);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    /// `f(values)` through [`narrow`] inside [`with_f16c`], or `None` on a
    /// CPU without F16C (the tests then have nothing to compare).
    fn narrowed(src: &[f32]) -> Option<Vec<f16>> {
        if !available() {
            return None;
        }
        let mut out = vec![f16::ZERO; src.len()];
        // SAFETY: the CPU has F16C (checked above).
        unsafe { with_f16c(|| narrow(src, &mut out)) };
        Some(out)
    }

    fn check_narrow(src: &[f32]) {
        let Some(got) = narrowed(src) else { return };
        for (&x, g) in src.iter().zip(got) {
            assert_eq!(
                g.to_bits(),
                f16_from_f32(x).to_bits(),
                "{:#010x}",
                x.to_bits()
            );
        }
    }

    /// Every float16 widens as [`f16_to_f32`] widens it (NaN payloads
    /// included), through the vector lanes and the tail.
    #[test]
    fn widen_matches_every_float16() {
        if !available() {
            return;
        }
        let all: Vec<f16> = (0..=u16::MAX).map(f16::from_bits).collect();
        for skip in [0, 3] {
            let src = &all[skip..];
            let mut got = vec![0f32; src.len()];
            // SAFETY: the CPU has F16C (checked above).
            unsafe { with_f16c(|| widen(src, &mut got)) };
            for (&h, g) in src.iter().zip(got) {
                assert_eq!(g.to_bits(), f16_to_f32(h).to_bits(), "{:#06x}", h.to_bits());
            }
        }
    }

    /// f32 values round as [`f16_from_f32`] rounds them: every float16
    /// widened and its neighbours one f32 step away; every upper 19 bits
    /// (sign, exponent, float16's significand) with low bits at, below and
    /// above the halfway point and at the ends, which covers NaN payloads,
    /// subnormals, underflow to zero and overflow to infinity; and a
    /// pseudo-random sweep of bit patterns.
    #[test]
    fn narrow_matches_the_element_rounding() {
        let mut v = Vec::new();
        for bits in 0..=u16::MAX {
            let x = f16_to_f32(f16::from_bits(bits)).to_bits();
            v.extend([x, x.wrapping_sub(1), x.wrapping_add(1)]);
        }
        for high in 0..1u32 << 19 {
            for low in [0, 1, 0xFFF, 0x1000, 0x1001, 0x1FFF] {
                v.push(high << 13 | low);
            }
        }
        let mut state = 0x2545_F491_4F6C_DD1Du64;
        for _ in 0..1 << 22 {
            state = state
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            v.push((state >> 32) as u32);
        }
        let src: Vec<f32> = v.into_iter().map(f32::from_bits).collect();
        check_narrow(&src);
        check_narrow(&src[5..]);
    }

    /// `zip` and `map_rounding_twice` against the element path, for every
    /// kind of operand, lengths with short last blocks, and offsets.
    fn check_blocks(xs: &[u16], ys: &[u16], start: usize) {
        if !available() {
            return;
        }
        let x: Vec<f16> = xs.iter().map(|&b| f16::from_bits(b)).collect();
        let y: Vec<f16> = ys.iter().map(|&b| f16::from_bits(b)).collect();
        let len = x.len().min(y.len());
        let start = start.min(len);
        let n = len - start;
        let w = |h: f16| f16_to_f32(h);
        // Both operands NaN: x86 returns the NaN of the instruction's
        // first source, which the compiler picks (Rust leaves the sign of
        // a NaN result unspecified), so either sign of MLX's NaN passes.
        let same = |g: f16, want: f16, p: f16, q: f16| {
            g.to_bits() == want.to_bits()
                || (p.is_nan() && q.is_nan() && g.to_bits() & 0x7FFF == 0x7D00)
        };
        let div = |a: f32, b: f32| a / b;
        let mut o = vec![f16::ZERO; n];
        // SAFETY: the CPU has F16C (checked above).
        unsafe { with_f16c(|| zip(&mut o, start, Half::Dense(&x), Half::Dense(&y), &div)) };
        for i in 0..n {
            let (p, q) = (x[start + i], y[start + i]);
            let want = f16_from_f32(w(p) / w(q));
            assert!(same(o[i], want, p, q), "dense {i}");
        }
        let s = y[0];
        o.copy_from_slice(&x[start..start + n]);
        // SAFETY: as above.
        unsafe { with_f16c(|| zip(&mut o, start, Half::Scalar(s), Half::Out, &div)) };
        for i in 0..n {
            let want = f16_from_f32(w(s) / w(x[start + i]));
            assert!(same(o[i], want, s, x[start + i]), "scalar, in place {i}");
        }
        let (h, g) = (|v: f32| v.sqrt(), |_: f32, t: f32| 1.0 / t);
        // SAFETY: as above.
        unsafe { with_f16c(|| map_rounding_twice(&mut o, start, Half::Dense(&x), &h, &g)) };
        for i in 0..n {
            let t = f16_to_f32(f16_from_f32(w(x[start + i]).sqrt()));
            assert_eq!(o[i].to_bits(), f16_from_f32(1.0 / t).to_bits(), "twice {i}");
        }
    }

    proptest! {
        #[test]
        fn blocks_match_the_element_path(
            xs in prop::collection::vec(any::<u16>(), 1..300),
            ys in prop::collection::vec(any::<u16>(), 1..300),
            start in 0usize..20,
        ) {
            check_blocks(&xs, &ys, start);
        }
    }
}
