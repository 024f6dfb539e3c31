//! RMSNorm, LayerNorm, RoPE and ScaledDotProductAttention.

use super::helpers::*;
use mlx::{fast, Array};

#[test]
fn fast_ops_finite_differences() {
    let (eps, rtol, atol) = (1e-2, 2e-2, 2e-3);
    let ln = |v: &[Array]| fast::layer_norm(&v[0], Some(&v[1]), Some(&v[2]), 1e-5);
    check_fd(
        &ln,
        &[f32s(&[3, 6], 1), f32s(&[6], 2), f32s(&[6], 3)],
        &[0, 1, 2],
        eps,
        rtol,
        atol,
    );
    let rms = |v: &[Array]| fast::rms_norm(&v[0], Some(&v[1]), 1e-5);
    check_fd(
        &rms,
        &[f32s(&[3, 6], 4), f32s(&[6], 5)],
        &[0, 1],
        eps,
        rtol,
        atol,
    );
    let rope = |v: &[Array]| fast::rope(&v[0], 4, false, Some(100.0), 1.0, 3, None);
    check_fd(&rope, &[f32s(&[1, 2, 3, 6], 6)], &[0], eps, rtol, atol);
    check_dual(&rope, &[f32s(&[1, 2, 3, 6], 6)], &[0], 1e-4);
    let mask = |v: &[Array]| {
        fast::scaled_dot_product_attention(&v[0], &v[1], &v[2], 0.7, Some(fast::Mask::Array(&v[3])))
    };
    let qkvm = [
        f32s(&[1, 4, 2, 3], 7),
        f32s(&[1, 2, 3, 3], 8),
        f32s(&[1, 2, 3, 2], 9),
        f32s(&[1, 4, 2, 3], 10),
    ];
    check_fd(&mask, &qkvm, &[0, 1, 2, 3], eps, rtol, atol);
    let causal = |v: &[Array]| {
        fast::scaled_dot_product_attention(&v[0], &v[1], &v[2], 0.5, Some(fast::Mask::Causal))
    };
    check_fd(&causal, &qkvm[..3], &[0, 1, 2], eps, rtol, atol);
    let sinks = |v: &[Array]| {
        fast::scaled_dot_product_attention_sinks(&v[0], &v[1], &v[2], 0.5, None, Some(&v[3]))
    };
    check_fd(
        &sinks,
        &[
            qkvm[0].clone(),
            qkvm[1].clone(),
            qkvm[2].clone(),
            f32s(&[4], 11),
        ],
        &[0, 1, 2, 3],
        eps,
        rtol,
        atol,
    );
}

#[test]
fn fast_ops_match_mlx() {
    let ln = |v: &[Array]| fast::layer_norm(&v[0], Some(&v[1]), Some(&v[2]), 1e-5);
    check_mlx("layer_norm", &ln, 3, &[0, 1, 2], 1e-4, 1e-4);
    let rms = |v: &[Array]| fast::rms_norm(&v[0], Some(&v[1]), 1e-5);
    check_mlx("rms_norm", &rms, 2, &[0, 1], 1e-4, 1e-4);
    let rope = |v: &[Array]| fast::rope(&v[0], 6, false, Some(10000.0), 1.0, 2, None);
    check_mlx("rope", &rope, 1, &[0], 1e-4, 1e-4);
    let rope_t = |v: &[Array]| fast::rope(&v[0], 8, true, Some(500.0), 0.5, 1, None);
    check_mlx("rope_trad", &rope_t, 1, &[0], 1e-4, 1e-4);
    let sm = |v: &[Array]| {
        fast::scaled_dot_product_attention(
            &v[0],
            &v[1],
            &v[2],
            0.35,
            Some(fast::Mask::Array(&v[3])),
        )
    };
    check_mlx("sdpa_mask", &sm, 4, &[0, 1, 2, 3], 1e-4, 1e-4);
    let sc = |v: &[Array]| {
        fast::scaled_dot_product_attention(&v[0], &v[1], &v[2], 0.5, Some(fast::Mask::Causal))
    };
    check_mlx("sdpa_causal", &sc, 3, &[0, 1, 2], 1e-4, 1e-4);
    let ss = |v: &[Array]| {
        fast::scaled_dot_product_attention_sinks(&v[0], &v[1], &v[2], 0.4, None, Some(&v[3]))
    };
    check_mlx("sdpa_sinks", &ss, 4, &[0, 1, 2, 3], 1e-4, 1e-4);
}

#[test]
fn fast_ops_forward_mode() {
    // <J t, c> = <t, Jᵀ c>: the forward rules against the reverse rules,
    // which the tests above check against finite differences and MLX.
    let ln = |v: &[Array]| fast::layer_norm(&v[0], Some(&v[1]), Some(&v[2]), 1e-5);
    check_dual(
        &ln,
        &[f32s(&[3, 6], 1), f32s(&[6], 2), f32s(&[6], 3)],
        &[0, 1, 2],
        1e-4,
    );
    let rms = |v: &[Array]| fast::rms_norm(&v[0], Some(&v[1]), 1e-5);
    check_dual(&rms, &[f32s(&[3, 6], 4), f32s(&[6], 5)], &[0, 1], 1e-4);
    let q = [
        f32s(&[1, 4, 2, 3], 7),
        f32s(&[1, 2, 3, 3], 8),
        f32s(&[1, 2, 3, 2], 9),
    ];
    let mask = |v: &[Array]| {
        fast::scaled_dot_product_attention(&v[0], &v[1], &v[2], 0.7, Some(fast::Mask::Array(&v[3])))
    };
    let with_mask = [
        q[0].clone(),
        q[1].clone(),
        q[2].clone(),
        f32s(&[1, 4, 2, 3], 10),
    ];
    check_dual(&mask, &with_mask, &[0, 1, 2, 3], 1e-4);
    let causal = |v: &[Array]| {
        fast::scaled_dot_product_attention(&v[0], &v[1], &v[2], 0.5, Some(fast::Mask::Causal))
    };
    check_dual(&causal, &q, &[0, 1, 2], 1e-4);
    let sinks = |v: &[Array]| {
        fast::scaled_dot_product_attention_sinks(&v[0], &v[1], &v[2], 0.5, None, Some(&v[3]))
    };
    let with_sinks = [q[0].clone(), q[1].clone(), q[2].clone(), f32s(&[4], 11)];
    check_dual(&sinks, &with_sinks, &[0, 1, 2, 3], 1e-4);
}
