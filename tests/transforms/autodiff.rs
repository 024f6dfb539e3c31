//! Derivative rules against central finite differences in float64.
//!
//! For each case `f` and random inputs `x`, directions `u` and output
//! weights `v`: the jvp must match `(f(x + h u) - f(x - h u)) / 2h` element
//! by element, and the vjp must satisfy `<vjp(v), u> = <v, jvp(u)>` with the
//! same finite difference on the right. Inputs come contiguous, transposed
//! (strided views) and pending (lazy), and several cases broadcast.

use crate::common::Lcg;
use mlx::primitives::shape::{Broadcast, BroadcastAxes};
use mlx::transforms::{grad, jvp, value_and_grad, vjp};
use mlx::{ops, Array, Complex64, Dtype, Error, Result};

/// How an input is laid out when it reaches the function.
#[derive(Clone, Copy, Debug)]
enum Layout {
    Contiguous,
    /// A transposed view (strides not row-major), already evaluated.
    Transposed,
    /// A lazy array (the graph above it is not evaluated).
    Pending,
}

fn make(vals: &[f64], shape: &[i32], layout: Layout) -> Array {
    match layout {
        Layout::Contiguous => Array::from_slice(vals, shape).unwrap(),
        Layout::Transposed => {
            // A row-major copy of the transpose, transposed back: the same
            // values seen through reversed strides.
            let a = Array::from_slice(vals, shape).unwrap();
            let back = ops::copy(&ops::transpose(&a, &[]).unwrap()).unwrap();
            let t = ops::transpose(&back, &[]).unwrap();
            t.eval().unwrap();
            t
        }
        Layout::Pending => {
            let base = Array::from_slice(vals, shape).unwrap();
            ops::multiply(&base, &Array::scalar(1.0f64)).unwrap()
        }
    }
}

/// The function a case differentiates.
type CaseFn = dyn Fn(&[Array]) -> Result<Array>;

/// One test case: a function of float64 arrays with input shapes and the
/// range the inputs are drawn from (chosen away from kinks and poles).
struct Case {
    name: &'static str,
    shapes: Vec<Vec<i32>>,
    range: (f64, f64),
    f: Box<CaseFn>,
    /// Step and tolerance (functions computed in float32 inside need more).
    h: f64,
    tol: f64,
    /// Some rules have no forward mode (as in MLX).
    jvp: bool,
}

fn case(
    name: &'static str,
    shapes: &[&[i32]],
    range: (f64, f64),
    f: impl Fn(&[Array]) -> Result<Array> + 'static,
) -> Case {
    Case {
        name,
        shapes: shapes.iter().map(|s| s.to_vec()).collect(),
        range,
        f: Box::new(f),
        h: 1e-5,
        tol: 1e-6,
        jvp: true,
    }
}

impl Case {
    /// For functions evaluated in float32 internally.
    fn lowp(mut self) -> Case {
        self.h = 1e-3;
        self.tol = 2e-3;
        self
    }
    fn no_jvp(mut self) -> Case {
        self.jvp = false;
        self
    }
}

fn vals(a: &Array) -> Vec<f64> {
    a.to_vec::<f64>().unwrap()
}

fn dot(a: &[f64], b: &[f64]) -> f64 {
    a.iter().zip(b).map(|(x, y)| x * y).sum()
}

fn close(got: f64, want: f64, tol: f64) -> bool {
    (got - want).abs() <= tol * (1.0 + got.abs().max(want.abs()))
}

fn check(c: &Case, layout: Layout, seed: u64) {
    let mut rng = Lcg::from_state(seed);
    let raw: Vec<Vec<f64>> = c
        .shapes
        .iter()
        .map(|s| rng.uniform(c.range.0, c.range.1, s.iter().product::<i32>() as usize))
        .collect();
    // Fresh inputs per call: evaluating one call's graph makes pending
    // inputs ready.
    let inputs = |layout: Layout| -> Vec<Array> {
        raw.iter()
            .zip(&c.shapes)
            .map(|(v, s)| make(v, s, layout))
            .collect()
    };
    let us: Vec<Vec<f64>> = c
        .shapes
        .iter()
        .map(|s| rng.uniform(-1.0, 1.0, s.iter().product::<i32>() as usize))
        .collect();
    let ua: Vec<Array> = us
        .iter()
        .zip(&c.shapes)
        .map(|(u, s)| Array::from_slice(u, s).unwrap())
        .collect();
    let f = |a: &[Array]| Ok(vec![(c.f)(a)?]);

    // Central difference of f along u.
    let shifted = |sign: f64| {
        let moved: Vec<Array> = raw
            .iter()
            .zip(&us)
            .zip(&c.shapes)
            .map(|((x, u), s)| {
                let v: Vec<f64> = x.iter().zip(u).map(|(x, u)| x + sign * c.h * u).collect();
                Array::from_slice(&v, s).unwrap()
            })
            .collect();
        vals(&(c.f)(&moved).unwrap())
    };
    let (plus, minus) = (shifted(1.0), shifted(-1.0));
    let fd: Vec<f64> = plus
        .iter()
        .zip(&minus)
        .map(|(p, m)| (p - m) / (2.0 * c.h))
        .collect();

    let y = (c.f)(&inputs(Layout::Contiguous)).unwrap();
    assert_eq!(y.dtype(), Dtype::Float64, "{}: output dtype", c.name);
    let v = rng.uniform(-1.0, 1.0, y.size());
    let va = Array::from_slice(&v, y.shape()).unwrap();

    let xs = inputs(layout);
    let (outs, grads) = vjp(f, &xs, &[va]).unwrap_or_else(|e| panic!("{}: vjp: {e}", c.name));
    let (o, w) = (vals(&outs[0]), vals(&y));
    assert!(
        o.iter().zip(&w).all(|(a, b)| close(*a, *b, 1e-12)),
        "{}: vjp outputs {o:?} vs {w:?}",
        c.name
    );
    let mut lhs = 0.0;
    for (g, (u, x)) in grads.iter().zip(us.iter().zip(&xs)) {
        assert_eq!(g.shape(), x.shape(), "{}: gradient shape", c.name);
        assert_eq!(g.dtype(), x.dtype(), "{}: gradient dtype", c.name);
        lhs += dot(&vals(g), u);
    }
    let rhs = dot(&v, &fd);
    assert!(
        close(lhs, rhs, c.tol * (1 + v.len()) as f64),
        "{} ({layout:?}): <vjp(v), u> = {lhs}, finite difference <v, J u> = {rhs}",
        c.name
    );

    if c.jvp {
        let (_, tans) =
            jvp(f, &inputs(layout), &ua).unwrap_or_else(|e| panic!("{}: jvp: {e}", c.name));
        assert_eq!(tans[0].shape(), y.shape(), "{}: tangent shape", c.name);
        for (i, (t, d)) in vals(&tans[0]).iter().zip(&fd).enumerate() {
            assert!(
                close(*t, *d, c.tol),
                "{} ({layout:?}): jvp element {i} = {t}, finite difference {d}",
                c.name
            );
        }
    }
}

fn run(cases: Vec<Case>) {
    for (k, c) in cases.iter().enumerate() {
        for (j, layout) in [Layout::Contiguous, Layout::Transposed, Layout::Pending]
            .into_iter()
            .enumerate()
        {
            check(c, layout, 17 + 3 * k as u64 + j as u64);
        }
    }
}

fn s(v: f64) -> Array {
    Array::scalar(v)
}

#[test]
fn binary_rules_match_finite_differences() {
    run(vec![
        case("add", &[&[3, 4], &[3, 4]], (-2.0, 2.0), |x| {
            ops::add(&x[0], &x[1])
        }),
        case("add broadcast", &[&[3, 1], &[4]], (-2.0, 2.0), |x| {
            ops::add(&x[0], &x[1])
        }),
        case(
            "subtract broadcast",
            &[&[2, 3, 4], &[3, 1]],
            (-2.0, 2.0),
            |x| ops::subtract(&x[0], &x[1]),
        ),
        case("multiply broadcast", &[&[4], &[3, 4]], (-2.0, 2.0), |x| {
            ops::multiply(&x[0], &x[1])
        }),
        case("divide", &[&[3, 4], &[3, 4]], (0.5, 2.0), |x| {
            ops::divide(&x[0], &x[1])
        }),
        case("divide broadcast", &[&[3, 4], &[3, 1]], (0.5, 2.0), |x| {
            ops::divide(&x[0], &x[1])
        }),
        // Distinct values: maximum/minimum away from ties.
        case("maximum", &[&[3, 4], &[3, 4]], (-2.0, 2.0), |x| {
            ops::maximum(&x[0], &x[1])
        }),
        case("minimum", &[&[3, 4], &[4]], (-2.0, 2.0), |x| {
            ops::minimum(&x[0], &x[1])
        }),
        case("power", &[&[3, 4], &[3, 4]], (0.5, 2.0), |x| {
            ops::power(&x[0], &x[1])
        }),
        case("logaddexp", &[&[3, 4], &[3, 4]], (-2.0, 2.0), |x| {
            ops::logaddexp(&x[0], &x[1])
        })
        .lowp(),
        case("arctan2", &[&[3, 4], &[3, 4]], (0.3, 2.0), |x| {
            ops::arctan2(&x[0], &x[1])
        }),
        // a / b stays inside (1, 2): away from the remainder's jumps.
        case("remainder", &[&[3, 4]], (1.2, 1.8), |x| {
            ops::remainder(&ops::multiply(&x[0], &s(3.0))?, &s(2.0))
        }),
        case("remainder divisor", &[&[3, 4]], (2.2, 2.8), |x| {
            ops::remainder(&s(7.0), &x[0])
        }),
        case("where", &[&[3, 4], &[3, 4]], (-2.0, 2.0), |x| {
            let cond = ops::greater(&x[0], &s(0.0))?;
            ops::where_(&cond, &ops::square(&x[0])?, &ops::multiply(&x[1], &x[0])?)
        }),
        case("where broadcast", &[&[3, 1], &[4]], (-2.0, 2.0), |x| {
            let cond = Array::from_slice(&[true, false, true, true], &[4])?;
            ops::where_(&cond, &x[0], &x[1])
        }),
        case("astype round trip", &[&[3, 4]], (-2.0, 2.0), |x| {
            let y = ops::astype(&ops::astype(&x[0], Dtype::Float32)?, Dtype::Float64)?;
            ops::multiply(&y, &y)
        })
        .lowp(),
        // Comparisons are piecewise constant: zero derivative.
        case("comparison", &[&[3, 4], &[3, 4]], (-2.0, 2.0), |x| {
            let m = ops::astype(&ops::less(&x[0], &x[1])?, Dtype::Float64)?;
            ops::add(&m, &x[0])
        }),
    ]);
}

#[test]
fn unary_rules_match_finite_differences() {
    type Op = fn(&Array) -> Result<Array>;
    let plain: [(&'static str, Op, (f64, f64)); 20] = [
        ("expm1", ops::expm1, (-1.0, 1.0)),
        ("log", ops::log, (0.5, 3.0)),
        ("log2", ops::log2, (0.5, 3.0)),
        ("log10", ops::log10, (0.5, 3.0)),
        ("log1p", ops::log1p, (-0.5, 3.0)),
        ("tan", ops::tan, (-1.2, 1.2)),
        ("sinh", ops::sinh, (-2.0, 2.0)),
        ("cosh", ops::cosh, (-2.0, 2.0)),
        ("tanh", ops::tanh, (-2.0, 2.0)),
        ("arcsin", ops::arcsin, (-0.9, 0.9)),
        ("arccos", ops::arccos, (-0.9, 0.9)),
        ("arctan", ops::arctan, (-3.0, 3.0)),
        ("arcsinh", ops::arcsinh, (-3.0, 3.0)),
        ("arccosh", ops::arccosh, (1.2, 3.0)),
        ("arctanh", ops::arctanh, (-0.9, 0.9)),
        ("sqrt", ops::sqrt, (0.5, 3.0)),
        ("rsqrt", ops::rsqrt, (0.5, 3.0)),
        ("square", ops::square, (-3.0, 3.0)),
        ("negative", ops::negative, (-3.0, 3.0)),
        ("abs", ops::abs, (0.2, 3.0)),
    ];
    let mut cases: Vec<Case> = plain
        .into_iter()
        .map(|(name, op, range)| case(name, &[&[3, 4]], range, move |x| op(&x[0])))
        .collect();
    cases.push(case("abs negative", &[&[3, 4]], (-3.0, -0.2), |x| {
        ops::abs(&x[0])
    }));
    // Computed through MLX's float32 formulas: coarser differences.
    let lowp: [(&'static str, Op, (f64, f64)); 6] = [
        ("sigmoid", ops::sigmoid, (-3.0, 3.0)),
        ("sin", ops::sin, (-3.0, 3.0)),
        ("cos", ops::cos, (-3.0, 3.0)),
        ("exp", ops::exp, (-2.0, 2.0)),
        ("erf", ops::erf, (-2.0, 2.0)),
        ("erfinv", ops::erfinv, (-0.8, 0.8)),
    ];
    for (name, op, range) in lowp {
        cases.push(case(name, &[&[3, 4]], range, move |x| op(&x[0])).lowp());
    }
    // Rounding and sign are piecewise constant: zero derivative (MLX).
    let steps: [(&'static str, Op); 4] = [
        ("floor", ops::floor),
        ("ceil", ops::ceil),
        ("round", |a| ops::round(a, 0)),
        ("sign", ops::sign),
    ];
    for (name, op) in steps {
        cases.push(case(name, &[&[3, 4]], (0.1, 0.4), move |x| {
            ops::add(&op(&ops::multiply(&x[0], &s(10.0))?)?, &x[0])
        }));
    }
    run(cases);
}

#[test]
fn reduction_rules_match_finite_differences() {
    run(vec![
        case("sum all", &[&[3, 4]], (-2.0, 2.0), |x| {
            ops::sum(&ops::square(&x[0])?, &[], false)
        }),
        case("sum axis", &[&[2, 3, 4]], (-2.0, 2.0), |x| {
            ops::sum(&x[0], &[1], false)
        }),
        case("sum keepdims", &[&[2, 3, 4]], (-2.0, 2.0), |x| {
            ops::sum(&x[0], &[0, 2], true)
        }),
        case("prod axis", &[&[3, 4]], (-2.0, 2.0), |x| {
            ops::prod(&x[0], &[1], false)
        }),
        case("prod two axes", &[&[2, 3, 2]], (0.5, 1.5), |x| {
            ops::prod(&x[0], &[0, 2], false)
        }),
        case("prod all", &[&[2, 3]], (0.5, 1.5), |x| {
            ops::prod(&x[0], &[], false)
        }),
        case("max axis", &[&[3, 4]], (-2.0, 2.0), |x| {
            ops::max(&x[0], &[1], false)
        }),
        case("min two axes", &[&[2, 3, 2]], (-2.0, 2.0), |x| {
            ops::min(&x[0], &[0, 1], true)
        }),
        case("mean", &[&[3, 4]], (-2.0, 2.0), |x| {
            ops::mean(&x[0], &[0], false)
        }),
        case("var", &[&[3, 4]], (-2.0, 2.0), |x| {
            ops::var(&x[0], &[1], false, 1)
        }),
        case("logsumexp last", &[&[3, 4]], (-2.0, 2.0), |x| {
            ops::logsumexp(&x[0], &[-1], false)
        })
        .lowp(),
        case("logsumexp first", &[&[3, 4]], (-2.0, 2.0), |x| {
            ops::logsumexp(&x[0], &[0], true)
        })
        .lowp(),
        case("softmax last", &[&[3, 4]], (-2.0, 2.0), |x| {
            ops::softmax(&x[0], &[-1])
        })
        .lowp(),
        case("softmax precise", &[&[3, 4]], (-2.0, 2.0), |x| {
            ops::softmax_precise(&x[0], &[-1])
        })
        .lowp(),
        case("softmax first", &[&[3, 4]], (-2.0, 2.0), |x| {
            ops::softmax(&x[0], &[0])
        })
        .lowp(),
        case("argmax is constant", &[&[3, 4]], (-2.0, 2.0), |x| {
            let i = ops::astype(&ops::argmax(&x[0], Some(1), true)?, Dtype::Float64)?;
            ops::multiply(&i, &x[0])
        }),
    ]);
}

#[test]
fn shape_rules_match_finite_differences() {
    run(vec![
        case("broadcast_to", &[&[3, 1]], (-2.0, 2.0), |x| {
            ops::broadcast_to(&x[0], &[2, 3, 4])
        }),
        case("reshape", &[&[3, 4]], (-2.0, 2.0), |x| {
            ops::reshape(&ops::square(&x[0])?, &[2, 6])
        }),
        case("transpose", &[&[2, 3, 4]], (-2.0, 2.0), |x| {
            ops::transpose(&x[0], &[2, 0, 1])
        }),
        case("squeeze", &[&[3, 1, 4]], (-2.0, 2.0), |x| {
            ops::squeeze(&x[0], &[1])
        }),
        case("expand_dims", &[&[3, 4]], (-2.0, 2.0), |x| {
            ops::expand_dims(&x[0], &[0, 2])
        }),
        case("flatten", &[&[2, 3, 4]], (-2.0, 2.0), |x| {
            ops::flatten(&x[0], 1, 2)
        }),
        case("unflatten", &[&[3, 4]], (-2.0, 2.0), |x| {
            ops::unflatten(&x[0], 1, &[2, 2])
        }),
        case("slice", &[&[5, 6]], (-2.0, 2.0), |x| {
            ops::slice(&x[0], &[1, 0], &[4, 6], &[1, 2])
        }),
        case("slice reversed", &[&[5, 6]], (-2.0, 2.0), |x| {
            ops::slice(&x[0], &[4, 5], &[-6, 0], &[-2, -1])
        }),
        case("slice_update", &[&[4, 5], &[2, 5]], (-2.0, 2.0), |x| {
            ops::slice_update(&x[0], &ops::square(&x[1])?, &[1, 0], &[3, 5], &[])
        }),
        case(
            "slice_update strided",
            &[&[4, 5], &[2, 3]],
            (-2.0, 2.0),
            |x| ops::slice_update(&x[0], &x[1], &[0, 0], &[4, 5], &[2, 2]),
        ),
        case("slice_update_add", &[&[4, 5], &[2, 5]], (-2.0, 2.0), |x| {
            ops::slice_update_add(&x[0], &x[1], &[2, 0], &[4, 5], &[])
        }),
        case("slice_update_prod", &[&[4, 5], &[2, 5]], (-2.0, 2.0), |x| {
            ops::slice_update_prod(&x[0], &x[1], &[2, 0], &[4, 5], &[])
        })
        .no_jvp(),
        case("slice_update_max", &[&[4, 5], &[2, 5]], (-2.0, 2.0), |x| {
            ops::slice_update_max(&x[0], &x[1], &[2, 0], &[4, 5], &[])
        })
        .no_jvp(),
        case("slice_update_min", &[&[4, 5], &[2, 5]], (-2.0, 2.0), |x| {
            ops::slice_update_min(&x[0], &x[1], &[0, 0], &[2, 5], &[])
        })
        .no_jvp(),
        case("slice_dynamic", &[&[4, 5]], (-2.0, 2.0), |x| {
            let start = Array::from_slice(&[1i32, 2], &[2])?;
            ops::slice_dynamic(&x[0], &start, &[0, 1], &[2, 3])
        }),
        case(
            "slice_update_dynamic",
            &[&[4, 5], &[2, 3]],
            (-2.0, 2.0),
            |x| {
                let start = Array::from_slice(&[2i32], &[1])?;
                let y = ops::slice_update_dynamic(&x[0], &x[1], &start, &[1])?;
                ops::multiply(&y, &y)
            },
        ),
        case(
            "concatenate",
            &[&[2, 3], &[4, 3], &[1, 3]],
            (-2.0, 2.0),
            |x| ops::concatenate(&[x[0].clone(), ops::square(&x[1])?, x[2].clone()], 0),
        ),
        case("split", &[&[3, 6]], (-2.0, 2.0), |x| {
            let parts = ops::split_at(&x[0], &[1, 4], 1)?;
            ops::add(
                &ops::multiply(&parts[0], &parts[2])?,
                &ops::sum(&parts[1], &[1], true)?,
            )
        }),
        case("pad", &[&[2, 3], &[]], (-2.0, 2.0), |x| {
            ops::pad(&x[0], &[(1, 2), (0, 1)], &x[1])
        }),
        case("copy", &[&[3, 4]], (-2.0, 2.0), |x| {
            ops::copy(&ops::square(&x[0])?)
        }),
        case("full", &[&[3]], (-2.0, 2.0), |x| {
            ops::full(&[2, 3], &x[0], None)
        }),
        case(
            "broadcast against a donor",
            &[&[3, 1], &[4]],
            (-2.0, 2.0),
            |x| {
                let p = Broadcast { shape: vec![3, 4] };
                Array::from_primitive(p, vec![x[0].clone(), x[1].clone()])
            },
        ),
        case(
            "broadcast_axes",
            &[&[1, 3, 4], &[5, 2, 2]],
            (-2.0, 2.0),
            |x| {
                let p = BroadcastAxes {
                    ignore_axes: vec![-2, -1],
                };
                Array::from_primitive(p, vec![x[0].clone(), x[1].clone()])
            },
        ),
        case("as_strided", &[&[3, 4]], (-2.0, 2.0), |x| {
            // Overlapping windows: some positions are read twice.
            ops::as_strided(&x[0], &[5, 3], &[2, 1], 1)
        }),
        case("tile and repeat", &[&[2, 3]], (-2.0, 2.0), |x| {
            ops::add(
                &ops::tile(&x[0], &[2, 1])?,
                &ops::repeat(&ops::sum(&x[0], &[0], true)?, 4, Some(0))?,
            )
        }),
        case("depends", &[&[3], &[3]], (-2.0, 2.0), |x| {
            let out = ops::depends(&[ops::square(&x[0])?], &[x[1].clone()])?;
            ops::add(&out[0], &x[1])
        }),
    ]);
}

#[test]
fn matmul_rules_match_finite_differences() {
    run(vec![
        case("matmul", &[&[3, 4], &[4, 2]], (-2.0, 2.0), |x| {
            ops::matmul(&x[0], &x[1])
        }),
        case("matmul batched", &[&[2, 3, 4], &[4, 2]], (-2.0, 2.0), |x| {
            ops::matmul(&x[0], &x[1])
        }),
        case(
            "matmul batch broadcast",
            &[&[2, 1, 3, 4], &[3, 4, 2]],
            (-2.0, 2.0),
            |x| ops::matmul(&x[0], &x[1]),
        ),
        case("matmul vectors", &[&[4], &[4, 3]], (-2.0, 2.0), |x| {
            ops::matmul(&x[0], &x[1])
        }),
        case("addmm", &[&[3, 2], &[3, 4], &[4, 2]], (-2.0, 2.0), |x| {
            ops::addmm(&x[0], &x[1], &x[2], 0.5, 2.0)
        }),
        case(
            "addmm broadcast c",
            &[&[2], &[3, 4], &[4, 2]],
            (-2.0, 2.0),
            |x| ops::addmm(&x[0], &x[1], &x[2], 1.0, -1.5),
        ),
        case(
            "addmm batched",
            &[&[2], &[2, 3, 4], &[4, 2]],
            (-2.0, 2.0),
            |x| ops::addmm(&x[0], &x[1], &x[2], 1.0, 1.0),
        ),
    ]);
}

#[test]
fn non_differentiable_primitives_name_themselves() {
    let x = Array::from_slice(&[1.5f32, 2.5], &[2]).unwrap();
    let f = |a: &[Array]| {
        Ok(vec![ops::sum(
            &ops::floor_divide(&a[0], &Array::scalar(2.0f32))?,
            &[],
            false,
        )?])
    };
    let err = grad(f, &[0])(std::slice::from_ref(&x)).unwrap_err();
    assert!(
        matches!(&err, Error::NotDifferentiable(n) if n == "FloorDivide"),
        "{err}"
    );
    assert!(err.to_string().contains("FloorDivide"), "{err}");
    // Forward mode too.
    let t = Array::from_slice(&[1.0f32, 1.0], &[2]).unwrap();
    let err = jvp(f, &[x], &[t]).unwrap_err();
    assert!(err.to_string().contains("FloorDivide"), "{err}");
}

#[test]
fn forward_mode_of_max_update_is_an_error_naming_slice_update() {
    let x = Array::from_slice(&[1.0f32, 2.0, 3.0, 4.0], &[4]).unwrap();
    let f = |a: &[Array]| {
        let u = Array::from_slice(&[9.0f32, 0.0], &[2])?;
        Ok(vec![ops::slice_update_max(&a[0], &u, &[1], &[3], &[])?])
    };
    let err = jvp(f, std::slice::from_ref(&x), std::slice::from_ref(&x)).unwrap_err();
    assert!(err.to_string().contains("SliceUpdate"), "{err}");
}

#[test]
fn grad_of_a_closed_form() {
    // f(x, w) = sum(tanh(x @ w)); df/dw = x^T (1 - tanh^2(x w)).
    let x = Array::from_slice(&[0.5f64, -1.0, 2.0, 0.25, 1.5, -0.5], &[2, 3]).unwrap();
    let w = Array::from_slice(&[0.1f64, -0.2, 0.3], &[3, 1]).unwrap();
    let f = |a: &[Array]| {
        Ok(vec![ops::sum(
            &ops::tanh(&ops::matmul(&a[0], &a[1])?)?,
            &[],
            false,
        )?])
    };
    let (vals_, g) = value_and_grad(f, &[1])(&[x.clone(), w.clone()]).unwrap();
    let xv = vals(&x);
    let wv = vals(&w);
    let z: Vec<f64> = (0..2)
        .map(|i| (0..3).map(|k| xv[i * 3 + k] * wv[k]).sum::<f64>())
        .collect();
    let want_loss: f64 = z.iter().map(|z| z.tanh()).sum();
    assert!((vals(&vals_[0])[0] - want_loss).abs() < 1e-12);
    let want: Vec<f64> = (0..3)
        .map(|k| {
            (0..2)
                .map(|i| xv[i * 3 + k] * (1.0 - z[i].tanh().powi(2)))
                .sum()
        })
        .collect();
    assert_eq!(g.len(), 1);
    assert_eq!(g[0].shape(), &[3, 1]);
    for (a, b) in vals(&g[0]).iter().zip(&want) {
        assert!((a - b).abs() < 1e-12, "{a} vs {b}");
    }
}

#[test]
fn second_order_gradient_of_a_cubic() {
    // d/dx sum(x^3) = 3x^2; its gradient (of the sum) is 6x.
    let x = Array::from_slice(&[1.0f64, -2.0, 0.5], &[3]).unwrap();
    let inner = |a: &[Array]| {
        Ok(vec![ops::sum(
            &ops::multiply(&ops::square(&a[0])?, &a[0])?,
            &[],
            false,
        )?])
    };
    let outer = move |a: &[Array]| {
        let g = grad(inner, &[0])(a)?;
        Ok(vec![ops::sum(&g[0], &[], false)?])
    };
    let g2 = grad(outer, &[0])(&[x]).unwrap();
    assert_eq!(vals(&g2[0]), vec![6.0, -12.0, 3.0]);
}

#[test]
fn gradient_of_a_pending_primal_does_not_evaluate_it_early() {
    // The primal is lazy: its graph stays connected and is evaluated once.
    let base = Array::from_slice(&[1.0f32, 2.0, 3.0], &[3]).unwrap();
    let x = ops::multiply(&base, &Array::scalar(2.0f32)).unwrap();
    let f = |a: &[Array]| Ok(vec![ops::sum(&ops::square(&a[0])?, &[], false)?]);
    let g = grad(f, &[0])(std::slice::from_ref(&x)).unwrap();
    assert!(!x.is_ready(), "grad evaluated its primal");
    assert_eq!(g[0].to_vec::<f32>().unwrap(), vec![4.0, 8.0, 12.0]);
}

#[test]
fn stop_gradient_cuts_the_gradient() {
    // f(x) = stop_gradient(x^2) + 3x: the gradient is 3 (finite differences
    // would see 2x + 3, which is why this is not one of the cases above).
    let x = Array::from_slice(&[1.0f64, -2.0, 0.5], &[3]).unwrap();
    let f = |a: &[Array]| {
        let y = ops::add(
            &ops::stop_gradient(&ops::square(&a[0])?)?,
            &ops::multiply(&a[0], &s(3.0))?,
        )?;
        Ok(vec![ops::sum(&y, &[], false)?])
    };
    assert_eq!(
        vals(&grad(f, &[0])(std::slice::from_ref(&x)).unwrap()[0]),
        vec![3.0; 3]
    );
    let t = Array::from_slice(&[1.0f64, 1.0, 1.0], &[3]).unwrap();
    assert_eq!(vals(&jvp(f, &[x], &[t]).unwrap().1[0]), vec![9.0]);
}

#[test]
fn gradients_keep_each_float_dtype() {
    // d/dx sum(x sigmoid(x) + x^2) = s + x s (1 - s) + 2x.
    let xs = [0.5f64, -1.0, 2.0, 0.25];
    let want: Vec<f64> = xs
        .iter()
        .map(|&x| {
            let s = 1.0 / (1.0 + (-x).exp());
            s + x * s * (1.0 - s) + 2.0 * x
        })
        .collect();
    let f = |a: &[Array]| {
        let y = ops::add(
            &ops::multiply(&a[0], &ops::sigmoid(&a[0])?)?,
            &ops::square(&a[0])?,
        )?;
        Ok(vec![ops::sum(&y, &[], false)?])
    };
    for (dtype, tol) in [
        (Dtype::Float64, 1e-6),
        (Dtype::Float32, 1e-5),
        (Dtype::Float16, 2e-2),
        (Dtype::Bfloat16, 5e-2),
    ] {
        let x = ops::astype(&Array::from_slice(&xs, &[4]).unwrap(), dtype).unwrap();
        let g = grad(f, &[0])(&[x]).unwrap();
        assert_eq!(g[0].dtype(), dtype);
        let got = vals(&ops::astype(&g[0], Dtype::Float64).unwrap());
        for (a, b) in got.iter().zip(&want) {
            assert!(
                (a - b).abs() <= tol * (1.0 + b.abs()),
                "{dtype}: {a} vs {b}"
            );
        }
    }
}

#[test]
fn complex_parts_pull_back_into_the_complex_plane() {
    // f(z) = sum(2 re(z) + 3 im(z) + re(conj(z) * w)): the gradient (MLX's
    // convention, df/dre + i df/dim) is 2 + 3i + w.
    let z = Array::from_slice(
        &[Complex64::new(1.0, 2.0), Complex64::new(-0.5, 0.25)],
        &[2],
    )
    .unwrap();
    let w = Complex64::new(0.5, -1.0);
    let f = move |a: &[Array]| {
        let re = ops::multiply(&ops::real(&a[0])?, &Array::scalar(2.0f32))?;
        let im = ops::multiply(&ops::imag(&a[0])?, &Array::scalar(3.0f32))?;
        let cw = ops::real(&ops::multiply(&ops::conjugate(&a[0])?, &Array::scalar(w))?)?;
        Ok(vec![ops::sum(
            &ops::add(&ops::add(&re, &im)?, &cw)?,
            &[],
            false,
        )?])
    };
    let g = grad(f, &[0])(&[z]).unwrap();
    assert_eq!(g[0].dtype(), Dtype::Complex64);
    for v in g[0].to_vec::<Complex64>().unwrap() {
        assert!((v - Complex64::new(2.5, 2.0)).norm() < 1e-6, "{v}");
    }
}

#[test]
fn bad_cotangents_and_arguments_are_errors() {
    let x = Array::from_slice(&[1.0f32, 2.0], &[2]).unwrap();
    let f = |a: &[Array]| Ok(vec![ops::square(&a[0])?]);
    let err = vjp(f, std::slice::from_ref(&x), &[]).unwrap_err();
    assert!(
        err.to_string().contains("0 cotangents for 1 outputs"),
        "{err}"
    );
    let wrong = Array::from_slice(&[1.0f32, 2.0, 3.0], &[3]).unwrap();
    let err = vjp(f, std::slice::from_ref(&x), std::slice::from_ref(&wrong)).unwrap_err();
    assert!(
        err.to_string().contains("[3]") && err.to_string().contains("[2]"),
        "{err}"
    );
    let err = jvp(f, std::slice::from_ref(&x), &[wrong]).unwrap_err();
    assert!(err.to_string().contains("tangent of shape [3]"), "{err}");
    let err = grad(f, &[0])(std::slice::from_ref(&x)).unwrap_err();
    assert!(err.to_string().contains("must be a scalar"), "{err}");
    let err = grad(f, &[1])(&[x]).unwrap_err();
    assert!(
        err.to_string().contains("argnum 1 is out of range"),
        "{err}"
    );
}
