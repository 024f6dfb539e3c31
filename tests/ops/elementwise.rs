//! Element-wise ops against results computed by real MLX 0.32.4 (CPU):
//! tests/fixtures/elementwise/generate.py writes the inputs, MLX's outputs
//! and manifest.json. Results are compared bit for bit where MLX's
//! arithmetic is exact or uses its own formulas (exp, sin, cos, erf, erfinv,
//! sigmoid), and within a dtype-sized tolerance for libm and complex math.

use crate::common;

use common::{assert_bits_eq, assert_close, fixture, npy};
use mlx::{ops, Array, Dtype, Result};
use serde_json::Value;

const DIR: &str = "elementwise";

fn manifest() -> Value {
    let text = std::fs::read_to_string(fixture(&format!("{DIR}/manifest.json"))).unwrap();
    serde_json::from_str(&text).unwrap()
}

/// Loads a fixture; `dtype` says how to read it (bfloat16 is stored as uint16 bits).
fn load(name: &str, dtype: Dtype) -> Array {
    let a = npy(&format!("{DIR}/{name}.npy"));
    if dtype == Dtype::Bfloat16 && a.dtype() == Dtype::Uint16 {
        let bits = a.to_vec::<u16>().unwrap();
        let v: Vec<half::bf16> = bits.into_iter().map(half::bf16::from_bits).collect();
        return Array::from_slice(&v, a.shape()).unwrap();
    }
    assert_eq!(a.dtype(), dtype, "fixture {name}");
    a
}

/// Row `i` of a stacked result file.
fn row(all: &Array, i: usize) -> Array {
    let n = all.shape()[1] as usize;
    let flat = ops::reshape(all, &[-1]).unwrap();
    mlx::dispatch_dtype!(all.dtype(), T => {
        let v = flat.to_vec::<T>().unwrap();
        Array::from_slice(&v[i * n..(i + 1) * n], &[n as i32]).unwrap()
    })
}

/// The first `n` elements of a 1-d array.
fn prefix(a: &Array, n: usize) -> Array {
    mlx::dispatch_dtype!(a.dtype(), T => {
        let v = a.to_vec::<T>().unwrap();
        Array::from_slice(&v[..n], &[n as i32]).unwrap()
    })
}

type UnaryOp = fn(&Array) -> Result<Array>;

fn unary_op(name: &str) -> UnaryOp {
    match name {
        "abs" => ops::abs,
        "negative" => ops::negative,
        "sign" => ops::sign,
        "exp" => ops::exp,
        "expm1" => ops::expm1,
        "log" => ops::log,
        "log2" => ops::log2,
        "log10" => ops::log10,
        "log1p" => ops::log1p,
        "sin" => ops::sin,
        "cos" => ops::cos,
        "tan" => ops::tan,
        "sinh" => ops::sinh,
        "cosh" => ops::cosh,
        "tanh" => ops::tanh,
        "arcsin" => ops::arcsin,
        "arccos" => ops::arccos,
        "arctan" => ops::arctan,
        "arcsinh" => ops::arcsinh,
        "arccosh" => ops::arccosh,
        "arctanh" => ops::arctanh,
        "sigmoid" => ops::sigmoid,
        "sqrt" => ops::sqrt,
        "rsqrt" => ops::rsqrt,
        "square" => ops::square,
        "erf" => ops::erf,
        "erfinv" => ops::erfinv,
        "floor" => ops::floor,
        "ceil" => ops::ceil,
        "round" => |a: &Array| ops::round(a, 0),
        "round2" => |a: &Array| ops::round(a, 2),
        "round-1" => |a: &Array| ops::round(a, -1),
        "logical_not" => ops::logical_not,
        "real" => ops::real,
        "imag" => ops::imag,
        "conjugate" => ops::conjugate,
        "isnan" => ops::isnan,
        "isinf" => ops::isinf,
        "isfinite" => ops::isfinite,
        "reciprocal" => ops::reciprocal,
        other => panic!("no op for {other}"),
    }
}

fn binary_op(name: &str) -> fn(&Array, &Array) -> Result<Array> {
    match name {
        "add" => ops::add,
        "subtract" => ops::subtract,
        "multiply" => ops::multiply,
        "divide" => ops::divide,
        "floor_divide" => ops::floor_divide,
        "remainder" => ops::remainder,
        "power" => ops::power,
        "maximum" => ops::maximum,
        "minimum" => ops::minimum,
        "equal" => ops::equal,
        "not_equal" => ops::not_equal,
        "less" => ops::less,
        "less_equal" => ops::less_equal,
        "greater" => ops::greater,
        "greater_equal" => ops::greater_equal,
        "logical_and" => ops::logical_and,
        "logical_or" => ops::logical_or,
        "logaddexp" => ops::logaddexp,
        "arctan2" => ops::arctan2,
        "bitwise_and" => ops::bitwise_and,
        "bitwise_or" => ops::bitwise_or,
        "bitwise_xor" => ops::bitwise_xor,
        "left_shift" => ops::left_shift,
        "right_shift" => ops::right_shift,
        "divmod_q" => |a, b| ops::divmod(a, b).map(|(q, _)| q),
        "divmod_r" => |a, b| ops::divmod(a, b).map(|(_, r)| r),
        "divmod" => |a, b| ops::divmod(a, b).map(|(q, _)| q),
        other => panic!("no op for {other}"),
    }
}

/// Ops whose MLX result on real floats is reproducible bit for bit: exact
/// IEEE arithmetic, rounding, and MLX's own exp/sin/cos/erf/erfinv/sigmoid.
const EXACT: &[&str] = &[
    "abs",
    "negative",
    "sign",
    "square",
    "floor",
    "ceil",
    "round",
    "round2",
    "round-1",
    "sqrt",
    "rsqrt",
    "exp",
    "sin",
    "cos",
    "erf",
    "erfinv",
    "sigmoid",
    "reciprocal",
    "logical_not",
    "real",
    "imag",
    "conjugate",
    "isnan",
    "isinf",
    "isfinite",
    "add",
    "subtract",
    "multiply",
    "divide",
    "floor_divide",
    "remainder",
    "maximum",
    "minimum",
    "equal",
    "not_equal",
    "less",
    "less_equal",
    "greater",
    "greater_equal",
    "logical_and",
    "logical_or",
    "divmod_q",
    "divmod_r",
];

/// Complex results that are exact (no rounding involved).
const EXACT_COMPLEX: &[&str] = &[
    "negative",
    "conjugate",
    "real",
    "imag",
    "add",
    "subtract",
    "maximum",
    "minimum",
    "round",
    "isnan",
    "isinf",
    "isfinite",
    "logical_not",
    "equal",
    "not_equal",
    "less",
    "less_equal",
    "greater",
    "greater_equal",
    "logical_and",
    "logical_or",
    "abs",
];

/// Checks `got` against MLX's `want` for `op` on `input` dtype; returns the failure.
fn check(op: &str, input: Dtype, got: &Array, want: &Array, what: &str) -> Option<String> {
    assert_eq!(got.dtype(), want.dtype(), "{what}: result dtype");
    assert_eq!(got.shape(), want.shape(), "{what}: shape");
    let d = want.dtype();
    let exact = !d.is_inexact()
        || (!input.is_complex() && !d.is_complex() && EXACT.contains(&op))
        || ((input.is_complex() || d.is_complex()) && EXACT_COMPLEX.contains(&op))
        || op.starts_with("from_");
    let result = std::panic::catch_unwind(|| {
        if exact {
            assert_bits_eq(got, want);
        } else if d.is_complex() {
            let (r, i) = (ops::real(got).unwrap(), ops::imag(got).unwrap());
            let (wr, wi) = (ops::real(want).unwrap(), ops::imag(want).unwrap());
            assert_close(&r, &wr, 2e-5, 2e-6);
            assert_close(&i, &wi, 2e-5, 2e-6);
        } else {
            let (rtol, atol) = match d {
                Dtype::Float16 => (2e-3, 1e-6),
                Dtype::Bfloat16 => (1.6e-2, 1e-6),
                Dtype::Float64 => (1e-13, 1e-300),
                _ => (2e-6, 1e-37),
            };
            assert_close(got, want, rtol, atol);
        }
    });
    result.err().map(|e| {
        let msg = e
            .downcast_ref::<String>()
            .cloned()
            .or_else(|| e.downcast_ref::<&str>().map(|s| s.to_string()))
            .unwrap_or_default();
        format!("{what}: {msg}")
    })
}

/// Panics listing every failure.
fn report(failures: Vec<String>) {
    assert!(
        failures.is_empty(),
        "{} mismatches with MLX:\n{}",
        failures.len(),
        failures.join("\n")
    );
}

/// (kind, input dtype, n) from a result file name `out__<kind>__<in>__<out>__<n>`.
fn parse_name(name: &str) -> (String, String, Dtype, usize) {
    let p: Vec<&str> = name.split("__").collect();
    let out = Dtype::from_name(p[3]).unwrap();
    (
        p[1].to_string(),
        p[2].to_string(),
        out,
        p[4].parse().unwrap(),
    )
}

fn for_each_result(kind: &str, mut f: impl FnMut(&str, &str, Array)) {
    let m = manifest();
    for (file, rows) in m["files"].as_object().unwrap() {
        let (k, input, out_dtype, _) = parse_name(file);
        if k != kind {
            continue;
        }
        let all = load(file, out_dtype);
        for (i, op) in rows.as_array().unwrap().iter().enumerate() {
            f(op.as_str().unwrap(), &input, row(&all, i));
        }
    }
}

#[test]
fn unary_ops_match_mlx() {
    let (mut count, mut failures) = (0, Vec::new());
    for_each_result("unary", |op, input, want| {
        let d = Dtype::from_name(input).unwrap();
        let x = prefix(&load(&format!("in_{input}"), d), want.size());
        let got = unary_op(op)(&x).unwrap_or_else(|e| panic!("{op} on {input}: {e}"));
        failures.extend(check(op, d, &got, &want, &format!("{op}({input})")));
        count += 1;
    });
    report(failures);
    assert!(count > 400, "only {count} unary cases");
}

#[test]
fn binary_ops_match_mlx() {
    let (mut count, mut failures) = (0, Vec::new());
    for_each_result("binary", |op, input, want| {
        let d = Dtype::from_name(input).unwrap();
        let a = load(&format!("bin_{input}_a"), d);
        let b_name = match op {
            "left_shift" | "right_shift" => "s",
            "floor_divide" | "remainder" => "fb",
            "divmod_q" | "divmod_r" => "divmod_b",
            _ => "b",
        };
        let b = load(&format!("bin_{input}_{b_name}"), d);
        let got = binary_op(op)(&a, &b).unwrap_or_else(|e| panic!("{op} on {input}: {e}"));
        failures.extend(check(op, d, &got, &want, &format!("{op}({input})")));
        count += 1;
    });
    report(failures);
    assert!(count > 250, "only {count} binary cases");
}

#[test]
fn astype_matches_mlx() {
    let (mut count, mut failures) = (0, Vec::new());
    for_each_result("astype", |op, _, want| {
        let src = Dtype::from_name(op.trim_start_matches("from_")).unwrap();
        let x = load(&format!("astype_in__{}", src.name()), src);
        let got = ops::astype(&x, want.dtype()).unwrap();
        let what = format!("astype {src} -> {}", want.dtype());
        failures.extend(check(op, src, &got, &want, &what));
        count += 1;
    });
    report(failures);
    assert_eq!(count, 14 * 14);
}

#[test]
fn ops_reject_what_mlx_rejects() {
    let m = manifest();
    for (op, dtypes) in m["errors"].as_object().unwrap() {
        for d in dtypes.as_array().unwrap() {
            let d = Dtype::from_name(d.as_str().unwrap()).unwrap();
            let x = ops::astype(&Array::from_slice(&[1i32, 2], &[2]).unwrap(), d).unwrap();
            let r = if matches!(
                op.as_str(),
                "arctan2"
                    | "bitwise_and"
                    | "bitwise_or"
                    | "bitwise_xor"
                    | "left_shift"
                    | "right_shift"
                    | "remainder"
                    | "divmod"
            ) {
                binary_op(op)(&x, &x)
            } else {
                unary_op(op)(&x)
            };
            assert!(r.is_err(), "{op} on {d} should be an error, as in MLX");
        }
    }
}

#[test]
fn promotion_table_matches_mlx() {
    let m = manifest();
    for a in Dtype::ALL {
        for b in Dtype::ALL {
            let want = m["promote"][a.name()][b.name()].as_str().unwrap();
            assert_eq!(
                mlx::promote_types(a, b).name(),
                want,
                "promote_types({a}, {b})"
            );
            let x = ops::add(
                &ops::astype(&Array::scalar(0i32), a).unwrap(),
                &ops::astype(&Array::scalar(0i32), b).unwrap(),
            )
            .unwrap();
            assert_eq!(x.dtype().name(), want, "add({a}, {b})");
        }
    }
}

/// bfloat16 widens as MLX widens it, the top half of a float32: every NaN
/// keeps its payload and a signaling NaN stays signaling in float32 and in
/// complex64's real part (MLX 0.32.4's results:
/// tests/fixtures/elementwise/widen_bfloat16.py).
#[test]
fn bfloat16_widens_with_mlx_nan_payloads() {
    let bits = npy(&format!("{DIR}/widen_in__bfloat16.npy"));
    let x = load("widen_in__bfloat16", Dtype::Bfloat16);
    assert!(bits.size() >= 2 * 127, "every NaN pattern of both signs");
    let targets = [
        Dtype::Float32,
        Dtype::Float64,
        Dtype::Float16,
        Dtype::Complex64,
    ];
    assert_casts_give_mlx_bits(&x, "widen_out", targets);
}

/// `x` cast to each target has the bits of MLX's results in
/// `{prefix}__{dtype}.npy` (unsigned integers of the element's width;
/// complex64 as its two float32 parts).
fn assert_casts_give_mlx_bits(x: &Array, prefix: &str, targets: [Dtype; 4]) {
    for dtype in targets {
        let as_bits = match dtype {
            Dtype::Float64 => Dtype::Uint64,
            Dtype::Float16 | Dtype::Bfloat16 => Dtype::Uint16,
            _ => Dtype::Uint32,
        };
        let want = npy(&format!("{DIR}/{prefix}__{}.npy", dtype.name()));
        let got = ops::view(&ops::astype(x, dtype).unwrap(), as_bits).unwrap();
        assert_bits_eq(&got, &want);
    }
}

/// float32 NaNs cast as MLX casts them: complex64's real part keeps the
/// bits (a signaling NaN stays signaling), float64 quiets them, the half
/// types give their one NaN (MLX 0.32.4's results:
/// tests/fixtures/elementwise/cast_float32_nans.py).
#[test]
fn float32_casts_keep_mlx_nan_bits() {
    let bits = npy(&format!("{DIR}/f32cast_in.npy"));
    let x = ops::view(&bits, Dtype::Float32).unwrap();
    let targets = [
        Dtype::Complex64,
        Dtype::Float64,
        Dtype::Float16,
        Dtype::Bfloat16,
    ];
    assert_casts_give_mlx_bits(&x, "f32cast_out", targets);
}
