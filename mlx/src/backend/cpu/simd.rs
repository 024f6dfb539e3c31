//! Running a kernel body compiled for the CPU's wider instructions.
//!
//! The crate is built for baseline x86-64, where `f32::mul_add` is a libm
//! call and loops vectorize 4-wide at most. MLX's float formulas (exp, sin,
//! erf, ...) are written with fused multiply-adds, so a kernel calling them
//! runs many times faster when its loop is compiled with AVX2 + FMA. Results
//! do not change: `mul_add` is exactly rounded either way, and Rust never
//! fuses a plain `a * b + c`.

/// Asks for the cache lines of the `bytes` bytes from `from` (a hint: it
/// reads nothing the program sees and does not fault, whatever the address)
/// into the second-level cache: the kernels that call it fetch a whole
/// block of rows ahead, which in the first-level cache would evict the
/// block being read (bfloat16 decode: 15.7-18.2 -> 11.9-12.4 ms a step).
#[inline(always)]
pub fn prefetch_lines(from: *const i8, bytes: usize) {
    #[cfg(target_arch = "x86_64")]
    for line in (0..bytes).step_by(64) {
        // SAFETY: a prefetch is a hint, as above.
        unsafe {
            std::arch::x86_64::_mm_prefetch::<{ std::arch::x86_64::_MM_HINT_T1 }>(
                from.wrapping_add(line),
            )
        };
    }
    #[cfg(not(target_arch = "x86_64"))]
    let _ = (from, bytes);
}

/// Whether this CPU has AVX2 and FMA (checked once, then cached by std).
#[inline]
pub fn has_fma() -> bool {
    #[cfg(target_arch = "x86_64")]
    {
        is_x86_feature_detected!("avx2") && is_x86_feature_detected!("fma")
    }
    #[cfg(not(target_arch = "x86_64"))]
    {
        false
    }
}

/// Whether this CPU has AVX-512F and DQ besides AVX2 and FMA (checked
/// once, then cached by std). Valgrind's CPU reports none.
#[inline]
pub fn has_avx512() -> bool {
    #[cfg(target_arch = "x86_64")]
    {
        has_fma() && is_x86_feature_detected!("avx512f") && is_x86_feature_detected!("avx512dq")
    }
    #[cfg(not(target_arch = "x86_64"))]
    {
        false
    }
}

/// Calls `body`, compiled with AVX2 + FMA when the CPU has them. `body` and
/// what it inlines (the element function of a kernel) get the wider
/// instructions; call it around a whole loop, not per element.
#[inline(always)]
pub fn with_fma<R>(body: impl FnOnce() -> R) -> R {
    #[cfg(target_arch = "x86_64")]
    if has_fma() {
        // SAFETY: has_fma() checked the CPU supports the enabled features.
        return unsafe { call_with_fma(body) };
    }
    body()
}

/// # Safety
/// The CPU must support AVX2 and FMA ([`has_fma`]).
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2,fma")]
unsafe fn call_with_fma<R>(body: impl FnOnce() -> R) -> R {
    body()
}

/// Rows of an 8 x 8 f32 block to its columns.
///
/// # Safety
/// Called from code compiled with AVX (it is inlined there).
#[cfg(target_arch = "x86_64")]
#[inline(always)]
pub unsafe fn transpose8(r: [std::arch::x86_64::__m256; 8]) -> [std::arch::x86_64::__m256; 8] {
    use std::arch::x86_64::*;
    let t0 = _mm256_unpacklo_ps(r[0], r[1]);
    let t1 = _mm256_unpackhi_ps(r[0], r[1]);
    let t2 = _mm256_unpacklo_ps(r[2], r[3]);
    let t3 = _mm256_unpackhi_ps(r[2], r[3]);
    let t4 = _mm256_unpacklo_ps(r[4], r[5]);
    let t5 = _mm256_unpackhi_ps(r[4], r[5]);
    let t6 = _mm256_unpacklo_ps(r[6], r[7]);
    let t7 = _mm256_unpackhi_ps(r[6], r[7]);
    let s0 = _mm256_shuffle_ps::<0x44>(t0, t2);
    let s1 = _mm256_shuffle_ps::<0xEE>(t0, t2);
    let s2 = _mm256_shuffle_ps::<0x44>(t1, t3);
    let s3 = _mm256_shuffle_ps::<0xEE>(t1, t3);
    let s4 = _mm256_shuffle_ps::<0x44>(t4, t6);
    let s5 = _mm256_shuffle_ps::<0xEE>(t4, t6);
    let s6 = _mm256_shuffle_ps::<0x44>(t5, t7);
    let s7 = _mm256_shuffle_ps::<0xEE>(t5, t7);
    [
        _mm256_permute2f128_ps::<0x20>(s0, s4),
        _mm256_permute2f128_ps::<0x20>(s1, s5),
        _mm256_permute2f128_ps::<0x20>(s2, s6),
        _mm256_permute2f128_ps::<0x20>(s3, s7),
        _mm256_permute2f128_ps::<0x31>(s0, s4),
        _mm256_permute2f128_ps::<0x31>(s1, s5),
        _mm256_permute2f128_ps::<0x31>(s2, s6),
        _mm256_permute2f128_ps::<0x31>(s3, s7),
    ]
}

/// 2^n for an integer-valued `n` in [-127, 128] (2^-127 gives 0 and 2^128
/// infinity, as the exponent-bit shift of MLX's exp does). Built without a
/// float-to-int cast: Rust's saturating `as i32` stops a loop from
/// vectorizing. Other `n` give meaningless values that callers replace.
#[inline(always)]
pub fn pow2i(n: f32) -> f32 {
    // 2^23 + 127 + n keeps 127 + n in its low mantissa bits; shifting the
    // bits left by 23 moves them into the exponent field.
    f32::from_bits((n + 8_388_735.0).to_bits() << 23)
}

/// Σ a·b with eight accumulators (vectorises without reassociation).
#[inline(always)]
pub fn dot_lanes(a: &[f32], b: &[f32]) -> f32 {
    let mut acc = [0f32; 8];
    let (ca, cb) = (a.chunks_exact(8), b.chunks_exact(8));
    let tail: f32 = ca
        .remainder()
        .iter()
        .zip(cb.remainder())
        .map(|(x, y)| x * y)
        .sum();
    for (x, y) in ca.zip(cb) {
        for j in 0..8 {
            acc[j] += x[j] * y[j];
        }
    }
    acc.iter().sum::<f32>() + tail
}

#[cfg(test)]
mod tests {
    #[test]
    fn pow2i_is_the_exponent_shift_over_its_range() {
        for n in -127i32..=128 {
            let want = f32::from_bits(((n + 127) as u32) << 23);
            assert_eq!(super::pow2i(n as f32).to_bits(), want.to_bits(), "2^{n}");
        }
    }
}
