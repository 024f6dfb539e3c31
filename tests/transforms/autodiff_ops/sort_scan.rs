//! Sort, Partition, ArgSort and every Scan.

use super::helpers::*;
use crate::common::as_f64;
use mlx::primitives::sort_scan::{Partition, Scan, ScanType};
use mlx::{ops, Array, Dtype, Result};

#[test]
fn sort_and_partition() {
    let s = |v: &[Array]| ops::sort(&v[0], Some(0));
    check_fd(&s, &[f64s(&[5, 2], 1)], &[0], 1e-6, 1e-6, 1e-9);
    check_dual(&s, &[f64s(&[5, 2], 1)], &[0], 1e-9);
    let p = apply(Partition { kth: 2, axis: 1 });
    check_fd(&p, &[f64s(&[2, 6], 2)], &[0], 1e-6, 1e-6, 1e-9);
    // Ties: MLX's stable order decides which tied element gets which cotangent.
    let s1 = |v: &[Array]| ops::sort(&v[0], Some(1));
    check_mlx("sort", &s1, 1, &[0], 1e-6, 1e-6);
    // Index outputs pass no gradient (MLX's rule).
    let am = |v: &[Array]| ops::argsort(&v[0], Some(0));
    let cot = ops::ones(&[4], Dtype::Uint32).unwrap();
    let g = vjp(&am, &[f64s(&[4], 3)], &[0], &cot).unwrap();
    assert_eq!(as_f64(&g[0]), [0.0; 4]);
}

fn scan(kind: ScanType, reverse: bool, inclusive: bool) -> impl Fn(&[Array]) -> Result<Array> {
    apply(Scan {
        reduce_type: kind,
        axis: 1,
        reverse,
        inclusive,
    })
}

#[test]
fn scans_finite_differences() {
    // A zero (and a second zero) in the rows exercises cumprod's special case.
    let with_zeros = arr(
        &[
            0.5, 0.0, 2.0, -1.5, 0.0, 1.2, -0.7, 0.9, 1.1, 0.3, -2.0, 0.8,
        ],
        &[2, 6],
        Dtype::Float64,
    );
    for (reverse, inclusive) in [(false, true), (true, true), (false, false), (true, false)] {
        for kind in [
            ScanType::Sum,
            ScanType::Prod,
            ScanType::Max,
            ScanType::Min,
            ScanType::LogAddExp,
        ] {
            let f = scan(kind, reverse, inclusive);
            // The float64 log-add-exp kernel is accurate to ~1e-8 only.
            let (eps, tol) = if kind == ScanType::LogAddExp {
                (1e-3, 1e-3)
            } else {
                (1e-6, 1e-6)
            };
            check_fd(&f, &[f64s(&[3, 5], 1)], &[0], eps, tol, 1e-8);
            if kind == ScanType::Prod {
                check_fd(
                    &f,
                    std::slice::from_ref(&with_zeros),
                    &[0],
                    1e-6,
                    1e-6,
                    1e-8,
                );
            }
        }
        check_dual(
            &scan(ScanType::Sum, reverse, inclusive),
            &[f64s(&[3, 5], 2)],
            &[0],
            1e-9,
        );
    }
}

#[test]
fn scans_match_mlx() {
    let cs = |v: &[Array]| ops::cumsum(&v[0], Some(1), true, false);
    check_mlx("cumsum", &cs, 1, &[0], 1e-5, 1e-5);
    let cp = |v: &[Array]| ops::cumprod(&v[0], Some(0), false, true);
    check_mlx("cumprod", &cp, 1, &[0], 1e-5, 1e-5);
    let cm = |v: &[Array]| ops::cummax(&v[0], Some(1), false, true);
    check_mlx("cummax", &cm, 1, &[0], 1e-5, 1e-5);
    let lc = |v: &[Array]| ops::logcumsumexp(&v[0], Some(1), true, true);
    check_mlx("logcumsumexp", &lc, 1, &[0], 1e-5, 1e-5);
}
