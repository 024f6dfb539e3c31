//! MLX's own CPU formulas for `exp`, `sin`/`cos`, `erf`, `erfinv` and
//! `sigmoid`, evaluated in f32 with the same operations, constants and
//! fused multiply-adds as MLX so that results agree bit for bit; and the C
//! math library functions MLX calls for everything else (Rust's own
//! `asinh`/`acosh`/`atanh` and num-complex's functions use different
//! formulas and branch-cut conventions, so the C ones are bound here).

// The constants are MLX's, written as in its source, so that they round to
// the same f32 values.
#![allow(clippy::excessive_precision, clippy::approx_constant)]

use crate::Complex64;

/// Bindings to the platform's C math library (linked by `std` already).
/// `Complex64` is `#[repr(C)]` (re, im), the layout of C's `float _Complex`.
mod libm {
    use crate::Complex64;
    extern "C" {
        pub fn cexpf(z: Complex64) -> Complex64;
        pub fn clogf(z: Complex64) -> Complex64;
        pub fn csqrtf(z: Complex64) -> Complex64;
        pub fn csinf(z: Complex64) -> Complex64;
        pub fn ccosf(z: Complex64) -> Complex64;
        pub fn ctanf(z: Complex64) -> Complex64;
        pub fn csinhf(z: Complex64) -> Complex64;
        pub fn ccoshf(z: Complex64) -> Complex64;
        pub fn ctanhf(z: Complex64) -> Complex64;
        pub fn casinf(z: Complex64) -> Complex64;
        pub fn cacosf(z: Complex64) -> Complex64;
        pub fn catanf(z: Complex64) -> Complex64;
        pub fn casinhf(z: Complex64) -> Complex64;
        pub fn cacoshf(z: Complex64) -> Complex64;
        pub fn catanhf(z: Complex64) -> Complex64;
        pub fn cpowf(z: Complex64, w: Complex64) -> Complex64;
        pub fn asinhf(x: f32) -> f32;
        pub fn acoshf(x: f32) -> f32;
        pub fn atanhf(x: f32) -> f32;
        pub fn asinh(x: f64) -> f64;
        pub fn acosh(x: f64) -> f64;
        pub fn atanh(x: f64) -> f64;
        pub fn remainderf(x: f32, y: f32) -> f32;
        pub fn remainder(x: f64, y: f64) -> f64;
    }
}

/// `asinhf` from libm.
pub fn asinh_f32(x: f32) -> f32 {
    // SAFETY: a pure C function of one float.
    unsafe { libm::asinhf(x) }
}
/// `acoshf` from libm.
pub fn acosh_f32(x: f32) -> f32 {
    // SAFETY: a pure C function of one float.
    unsafe { libm::acoshf(x) }
}
/// `atanhf` from libm.
pub fn atanh_f32(x: f32) -> f32 {
    // SAFETY: a pure C function of one float.
    unsafe { libm::atanhf(x) }
}
/// `asinh` from libm.
pub fn asinh_f64(x: f64) -> f64 {
    // SAFETY: a pure C function of one double.
    unsafe { libm::asinh(x) }
}
/// `acosh` from libm.
pub fn acosh_f64(x: f64) -> f64 {
    // SAFETY: a pure C function of one double.
    unsafe { libm::acosh(x) }
}
/// `atanh` from libm.
pub fn atanh_f64(x: f64) -> f64 {
    // SAFETY: a pure C function of one double.
    unsafe { libm::atanh(x) }
}
/// Complex functions of the C library, as `std::exp(std::complex<float>)`
/// and friends call them (C99 Annex G special values and branch cuts).
pub mod complex {
    use super::libm;
    use crate::Complex64;

    macro_rules! bind {
        ($($(#[$doc:meta])* $name:ident => $c:ident;)*) => {$(
            $(#[$doc])*
            pub fn $name(z: Complex64) -> Complex64 {
                // SAFETY: a pure C function of one float complex.
                unsafe { libm::$c(z) }
            }
        )*};
    }
    bind! {
        /// `cexpf`.
        exp => cexpf;
        /// `clogf`.
        ln => clogf;
        /// `csqrtf`.
        sqrt => csqrtf;
        /// `csinf`.
        sin => csinf;
        /// `ccosf`.
        cos => ccosf;
        /// `ctanf`.
        tan => ctanf;
        /// `csinhf`.
        sinh => csinhf;
        /// `ccoshf`.
        cosh => ccoshf;
        /// `ctanhf`.
        tanh => ctanhf;
        /// `casinf`.
        asin => casinf;
        /// `cacosf`.
        acos => cacosf;
        /// `catanf`.
        atan => catanf;
        /// `casinhf`.
        asinh => casinhf;
        /// `cacoshf`.
        acosh => cacoshf;
        /// `catanhf`.
        atanh => catanhf;
    }

    /// `cpowf(z, w)`.
    pub fn pow(z: Complex64, w: Complex64) -> Complex64 {
        // SAFETY: a pure C function of two float complex values.
        unsafe { libm::cpowf(z, w) }
    }
}

/// Complex division as C compilers do it (libgcc's `__divsc3`: Smith's
/// algorithm, then C99 Annex G infinities when the result is NaN), so that
/// `z / 0` is infinite rather than NaN.
pub fn complex_div(x: Complex64, y: Complex64) -> Complex64 {
    let (mut a, mut b, mut c, mut d) = (x.re, x.im, y.re, y.im);
    let (mut re, mut im);
    if c.abs() < d.abs() {
        let ratio = c / d;
        let denom = c * ratio + d;
        re = (a * ratio + b) / denom;
        im = (b * ratio - a) / denom;
    } else {
        let ratio = d / c;
        let denom = d * ratio + c;
        re = (b * ratio + a) / denom;
        im = (b - a * ratio) / denom;
    }
    if re.is_nan() && im.is_nan() {
        let inf = f32::INFINITY;
        if c == 0.0 && d == 0.0 && (!a.is_nan() || !b.is_nan()) {
            re = inf.copysign(c) * a;
            im = inf.copysign(c) * b;
        } else if (a.is_infinite() || b.is_infinite()) && c.is_finite() && d.is_finite() {
            a = (if a.is_infinite() { 1.0f32 } else { 0.0 }).copysign(a);
            b = (if b.is_infinite() { 1.0f32 } else { 0.0 }).copysign(b);
            re = inf * (a * c + b * d);
            im = inf * (b * c - a * d);
        } else if (c.is_infinite() || d.is_infinite()) && a.is_finite() && b.is_finite() {
            c = (if c.is_infinite() { 1.0f32 } else { 0.0 }).copysign(c);
            d = (if d.is_infinite() { 1.0f32 } else { 0.0 }).copysign(d);
            re = 0.0 * (a * c + b * d);
            im = 0.0 * (b * c - a * d);
        }
    }
    Complex64::new(re, im)
}

/// IEEE remainder (`remainderf`): `x - n*y` with `n` = x/y rounded to even.
pub fn ieee_remainder_f32(x: f32, y: f32) -> f32 {
    // SAFETY: a pure C function of two floats.
    unsafe { libm::remainderf(x, y) }
}
/// IEEE remainder (`remainder`) in f64.
pub fn ieee_remainder_f64(x: f64, y: f64) -> f64 {
    // SAFETY: a pure C function of two doubles.
    unsafe { libm::remainder(x, y) }
}

/// MLX's `exp`: 2^(x·log2 e) split into an integer power built from the
/// exponent bits and a degree-6 polynomial (Cephes constants); |x| > 88
/// saturates to 0 / inf.
#[inline]
pub fn exp_f32(x0: f32) -> f32 {
    let x = x0 * 1.442695f32;
    // MLX adds 0.5 as a double, so the rounding to nearest is exact.
    let ipart = ((x as f64) + 0.5).floor() as f32;
    let fpart = x - ipart;
    let mut p = 1.535336188319500e-4f32;
    p = p.mul_add(fpart, 1.339887440266574e-3);
    p = p.mul_add(fpart, 9.618437357674640e-3);
    p = p.mul_add(fpart, 5.550332471162809e-2);
    p = p.mul_add(fpart, 2.402264791363012e-1);
    p = p.mul_add(fpart, 6.931472028550421e-1);
    p = p.mul_add(fpart, 1.0);
    let r = super::simd::pow2i(ipart) * p;
    if x0.is_nan() {
        x0
    } else if x0 > 88.0 {
        f32::INFINITY
    } else if x0 < -88.0 {
        0.0
    } else {
        r
    }
}

/// MLX's sine / cosine of `±ax` (`neg` is the sign of the input, `ax` its
/// magnitude in f32): Cephes reduction by π/4 in three parts and two
/// polynomials; magnitudes above 2^23 use libm.
#[inline]
fn sincos(neg: bool, ax: f32, x_orig: f32, sine: bool) -> f32 {
    if ax > 8388608.0 {
        return if sine { x_orig.sin() } else { x_orig.cos() };
    }
    let y = ax * 1.27323954473516f32;
    let j = ((y as u32).wrapping_add(1)) & !1u32;
    let y = j as f32;
    let poly = (j & 2) != 0;
    let mut x = y.mul_add(-0.78515625, ax);
    x = y.mul_add(-2.4187564849853515625e-4, x);
    x = y.mul_add(-3.77489497744594108e-8, x);
    let sign_sin = neg ^ ((j & 4) != 0);
    let sign_cos = (j.wrapping_sub(2) & 4) != 0;
    let z = x * x;
    let mut y1 = z.mul_add(2.443315711809948e-5, -1.388731625493765e-3);
    let mut y2 = z.mul_add(-1.9515295891e-4, 8.3321608736e-3);
    y1 = y1.mul_add(z, 4.166664568298827e-2);
    y2 = y2.mul_add(z, -1.6666654611e-1);
    y1 *= z;
    y2 *= z;
    y1 *= z;
    y2 = x.mul_add(y2, x);
    y1 = z.mul_add(-0.5, y1);
    y1 += 1.0;
    if sine {
        let ys = if poly { y1 } else { y2 };
        if sign_sin {
            -ys
        } else {
            ys
        }
    } else {
        let yc = if poly { y2 } else { y1 };
        if sign_cos {
            yc
        } else {
            -yc
        }
    }
}

/// MLX's `sin` in f32.
#[inline]
pub fn sin_f32(x: f32) -> f32 {
    sincos(x < 0.0, x.abs(), x, true)
}
/// MLX's `cos` in f32.
#[inline]
pub fn cos_f32(x: f32) -> f32 {
    sincos(x < 0.0, x.abs(), x, false)
}
/// MLX's `sin` of an f64: the sign is taken in f64, the rest in f32.
#[inline]
pub fn sin_f64(x: f64) -> f64 {
    sincos(x < 0.0, x.abs() as f32, x as f32, true) as f64
}
/// MLX's `cos` of an f64 (computed in f32).
#[inline]
pub fn cos_f64(x: f64) -> f64 {
    sincos(x < 0.0, x.abs() as f32, x as f32, false) as f64
}

/// MLX's `erf` before the final sign: the Abramowitz–Stegun 7.1.26
/// polynomial with MLX's exp, for `v` in f32. The caller negates the
/// result unless the input is > 0 (in its own dtype, after rounding).
#[inline]
pub fn erf_abs_f32(v: f32) -> f32 {
    let t = 1.0 / 0.3275911f32.mul_add(v.abs(), 1.0);
    let mut r = 1.061405429f32.mul_add(t, -1.453152027);
    r = r.mul_add(t, 1.421413741);
    r = r.mul_add(t, -0.284496736);
    r = r.mul_add(t, 0.254829592);
    let e = -exp_f32(-v * v);
    (e * t).mul_add(r, 1.0)
}

/// MLX's `erf` in f32.
#[inline]
pub fn erf_f32(x: f32) -> f32 {
    let r = erf_abs_f32(x);
    if x > 0.0 {
        r
    } else {
        -r
    }
}

/// MLX's `erfinv` in f32 (Giles' single-precision approximation with libm `logf`).
#[inline]
pub fn erfinv_f32(a: f32) -> f32 {
    let t = a.mul_add(0.0 - a, 1.0).ln();
    let p = if t.abs() > 6.125 {
        let mut p = 3.03697567e-10f32;
        p = p.mul_add(t, 2.93243101e-8);
        p = p.mul_add(t, 1.22150334e-6);
        p = p.mul_add(t, 2.84108955e-5);
        p = p.mul_add(t, 3.93552968e-4);
        p = p.mul_add(t, 3.02698812e-3);
        p = p.mul_add(t, 4.83185798e-3);
        p = p.mul_add(t, -2.64646143e-1);
        p.mul_add(t, 8.40016484e-1)
    } else {
        let mut p = 5.43877832e-9f32;
        p = p.mul_add(t, 1.43285448e-7);
        p = p.mul_add(t, 1.22774793e-6);
        p = p.mul_add(t, 1.12963626e-7);
        p = p.mul_add(t, -5.61530760e-5);
        p = p.mul_add(t, -1.47697632e-4);
        p = p.mul_add(t, 2.31468678e-3);
        p = p.mul_add(t, 1.15392581e-2);
        p = p.mul_add(t, -2.32015476e-1);
        p.mul_add(t, 8.86226892e-1)
    };
    a * p
}

/// MLX's `sigmoid` in f32: y = 1/(1 + exp(|x|)); y for x < 0, else 1 − y.
#[inline]
pub fn sigmoid_f32(x: f32) -> f32 {
    let y = 1.0 / (1.0 + exp_f32(x.abs()));
    if x < 0.0 {
        y
    } else {
        1.0 - y
    }
}

/// MLX's `sigmoid` in f64: exp in f32, the rest in f64.
#[inline]
pub fn sigmoid_f64(x: f64) -> f64 {
    let e = exp_f32(x.abs() as f32) as f64;
    let y = 1.0 / (1.0 + e);
    if x < 0.0 {
        y
    } else {
        1.0 - y
    }
}

/// MLX's `sigmoid` for a half type: the exp is rounded to the half type
/// (`round`) before the rest is computed in f32.
#[inline(always)]
pub fn sigmoid_half(x: f32, round: impl Fn(f32) -> f32) -> f32 {
    sigmoid_from_exp(x, round(exp_f32(x.abs())))
}

/// The rest of [`sigmoid_half`] once `e`, the rounded `exp(|x|)`, is known.
#[inline(always)]
pub fn sigmoid_from_exp(x: f32, e: f32) -> f32 {
    let y = 1.0 / (1.0 + e);
    if x < 0.0 {
        y
    } else {
        1.0 - y
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn formulas_are_close_to_libm() {
        for i in -400..400 {
            let x = i as f32 * 0.173;
            if x.abs() < 80.0 {
                let e = exp_f32(x);
                // x·log2(e) is rounded to f32 first: the relative error grows with |x|.
                let tol = 1e-7 * (1.0 + x.abs()) * x.exp();
                assert!((e - x.exp()).abs() <= tol, "exp({x})");
            }
            assert!((sin_f32(x) - x.sin()).abs() < 1e-6, "sin({x})");
            assert!((cos_f32(x) - x.cos()).abs() < 1e-6, "cos({x})");
            let s = 1.0 / (1.0 + (-(x as f64)).exp());
            assert!((sigmoid_f32(x) as f64 - s).abs() < 1e-6, "sigmoid({x})");
        }
        assert_eq!(exp_f32(100.0), f32::INFINITY);
        assert_eq!(exp_f32(-100.0), 0.0);
        assert!((erf_f32(0.5) - 0.520_499_9).abs() < 1e-6);
        assert!((erfinv_f32(0.520_499_9) - 0.5).abs() < 1e-5);
    }
}
