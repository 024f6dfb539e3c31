//! Convolution: strided, padded (even beyond the kernel), dilated, grouped, flipped.

use super::helpers::*;
use mlx::primitives::conv::Convolution;
use mlx::{ops, Array};

/// A Convolution with per-axis strides, padding (low, high), kernel and
/// input dilation, groups and flip.
pub(crate) fn conv(
    s: &[i32],
    lo: &[i32],
    hi: &[i32],
    kd: &[i32],
    id: &[i32],
    g: i32,
    flip: bool,
) -> Convolution {
    Convolution {
        kernel_strides: s.to_vec(),
        padding_lo: lo.to_vec(),
        padding_hi: hi.to_vec(),
        kernel_dilation: kd.to_vec(),
        input_dilation: id.to_vec(),
        groups: g,
        flip,
    }
}

#[test]
fn conv_finite_differences() {
    let cases = [
        // 1-D: stride, asymmetric padding, kernel dilation, groups.
        (
            conv(&[2], &[1], &[2], &[2], &[1], 2, false),
            vec![2, 9, 4],
            vec![4, 3, 2],
        ),
        // 1-D: input dilation (transposed conv), flip, stride remainder.
        (
            conv(&[2], &[2], &[0], &[1], &[3], 1, true),
            vec![1, 4, 2],
            vec![3, 3, 2],
        ),
        // 1-D: padding beyond the kernel extent (negative backward padding).
        (
            conv(&[3], &[4], &[0], &[1], &[2], 1, false),
            vec![1, 5, 1],
            vec![2, 2, 1],
        ),
        // 1-D: three groups, dilations on both sides and flip.
        (
            conv(&[1], &[0], &[3], &[2], &[2], 3, true),
            vec![1, 5, 6],
            vec![6, 2, 2],
        ),
        // 2-D with everything at once.
        (
            conv(&[2, 1], &[0, 3], &[2, 0], &[1, 2], &[2, 1], 2, true),
            vec![1, 4, 5, 4],
            vec![4, 2, 3, 2],
        ),
        // 3-D, and 3-D with groups (only reachable through the primitive).
        (
            conv(
                &[2, 1, 2],
                &[1, 0, 1],
                &[0, 1, 1],
                &[1, 1, 2],
                &[1, 2, 1],
                1,
                false,
            ),
            vec![1, 4, 3, 5, 2],
            vec![2, 2, 2, 2, 2],
        ),
        (
            conv(
                &[1, 2, 1],
                &[0, 1, 0],
                &[1, 0, 0],
                &[1, 1, 1],
                &[1, 1, 1],
                2,
                false,
            ),
            vec![1, 3, 3, 3, 4],
            vec![2, 2, 1, 2, 2],
        ),
    ];
    for (i, (p, xs, ws)) in cases.into_iter().enumerate() {
        let inputs = [f64s(&xs, 2 * i as u64), f64s(&ws, 2 * i as u64 + 1)];
        let f = apply(p);
        check_fd(&f, &inputs, &[0, 1], 1e-6, 1e-6, 1e-8);
        check_dual(&f, &inputs, &[0, 1], 1e-9);
    }
}

#[test]
fn conv_matches_mlx() {
    let c2 = |v: &[Array]| ops::conv2d(&v[0], &v[1], (2, 1), (1, 2), (1, 2), 2);
    check_mlx("conv2d_groups", &c2, 2, &[0, 1], 1e-4, 1e-4);
    let c1 = |v: &[Array]| ops::conv1d(&v[0], &v[1], 3, 2, 2, 3);
    check_mlx("conv1d_all", &c1, 2, &[0, 1], 1e-4, 1e-4);
    let c3 = |v: &[Array]| ops::conv3d(&v[0], &v[1], (1, 2, 1), (1, 0, 1), (1, 1, 1), 1);
    check_mlx("conv3d", &c3, 2, &[0, 1], 1e-4, 1e-4);
    let ct = |v: &[Array]| ops::conv_transpose2d(&v[0], &v[1], (2, 3), (1, 0), (1, 2), (1, 0), 1);
    check_mlx("conv_t2d", &ct, 2, &[0, 1], 1e-4, 1e-4);
    let cg = |v: &[Array]| {
        ops::conv_general(
            &v[0],
            &v[1],
            &[1, 2],
            &[2, 0],
            &[1, 3],
            &[2, 1],
            &[2, 3],
            1,
            true,
        )
    };
    check_mlx("conv_general", &cg, 2, &[0, 1], 1e-4, 1e-4);
}
