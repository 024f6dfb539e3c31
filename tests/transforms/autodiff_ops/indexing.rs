//! Gather, GatherAxis, Scatter, ScatterAxis and MaskedScatter.

use super::helpers::*;
use mlx::primitives::indexing::{
    MaskedScatter, Scatter, ScatterAxis, ScatterAxisType, ScatterType,
};
use mlx::{ops, Array, Error, Result};

#[test]
fn gathers_with_repeated_indices() {
    // Gather over two axes; index pairs repeat, so gradients accumulate.
    let g = |v: &[Array]| ops::gather(&v[0], &[v[1].clone(), v[2].clone()], &[0, 2], &[1, 2, 1]);
    let inputs = [
        f64s(&[3, 2, 4], 1),
        ints(&[2, 0, 2, 2], &[4]),
        ints(&[1, 3, 1, -1], &[4]),
    ];
    check_fd(&g, &inputs, &[0], 1e-6, 1e-6, 1e-9);
    check_dual(&g, &inputs, &[0], 1e-9);
    let ga = |v: &[Array]| ops::take_along_axis(&v[0], &v[1], Some(0));
    let inputs = [f64s(&[3, 4], 2), ints(&[0, 0, 2, 2, 2, 1, 0, 0], &[2, 4])];
    check_fd(&ga, &inputs, &[0], 1e-6, 1e-6, 1e-9);
    check_dual(&ga, &inputs, &[0], 1e-9);
    // MLX: take on axis 0 squeezes the slice axis; we feed the cotangent
    // of the Gather node itself.
    let take = |v: &[Array]| ops::gather(&v[0], std::slice::from_ref(&v[1]), &[0], &[1, 3]);
    check_mlx("take0", &take, 2, &[0], 1e-6, 1e-6);
    let tal = |v: &[Array]| ops::take_along_axis(&v[0], &v[1], Some(1));
    check_mlx("take_along", &tal, 2, &[0], 1e-6, 1e-6);
}

fn scatter(kind: ScatterType, axes: &[i32]) -> impl Fn(&[Array]) -> Result<Array> {
    apply(Scatter {
        reduce_type: kind,
        axes: axes.to_vec(),
    })
}

#[test]
fn scatters() {
    let dst = f64s(&[4, 3], 1);
    // Assignment needs distinct positions to be a function of the inputs.
    let distinct = [dst.clone(), ints(&[2, 0], &[2]), f64s(&[2, 1, 3], 2)];
    let repeated = [dst.clone(), ints(&[1, 3, 1], &[3]), f64s(&[3, 1, 2], 3)];
    for kind in [ScatterType::None, ScatterType::Sum] {
        let f = scatter(kind, &[0]);
        check_fd(&f, &distinct, &[0, 2], 1e-6, 1e-6, 1e-9);
        check_dual(&f, &distinct, &[0, 2], 1e-9);
    }
    let sum = scatter(ScatterType::Sum, &[0]);
    check_fd(&sum, &repeated, &[0, 2], 1e-6, 1e-6, 1e-9);
    // Max/min: the cotangent goes to whichever side produced the result.
    for kind in [ScatterType::Max, ScatterType::Min] {
        check_fd(&scatter(kind, &[0]), &distinct, &[0, 2], 1e-6, 1e-6, 1e-9);
    }
    let err = vjp(
        &scatter(ScatterType::Prod, &[0]),
        &distinct,
        &[0],
        &f64s(&[4, 3], 4),
    )
    .unwrap_err();
    assert!(
        matches!(err, Error::NotDifferentiable(ref m) if m.contains("Scatter")),
        "{err}"
    );

    for kind in [ScatterAxisType::None, ScatterAxisType::Sum] {
        let p = ScatterAxis {
            reduce_type: kind,
            axis: 1,
        };
        let f = apply(p);
        let inputs = [
            f64s(&[2, 4], 5),
            ints(&[3, 0, 2, 1], &[2, 2]),
            f64s(&[2, 2], 6),
        ];
        check_fd(&f, &inputs, &[0, 2], 1e-6, 1e-6, 1e-9);
        check_dual(&f, &inputs, &[0, 2], 1e-9);
    }
}

#[test]
fn masked_scatter() {
    let f = apply(MaskedScatter {});
    let mask = Array::from_slice(
        &[true, false, true, true, false, false, true, false],
        &[2, 4],
    )
    .unwrap();
    let inputs = [f64s(&[2, 4], 1), mask, f64s(&[2, 3], 2)];
    check_fd(&f, &inputs, &[0, 2], 1e-6, 1e-6, 1e-9);
    check_dual(&f, &inputs, &[0, 2], 1e-9);
}
