//! `mlx::nn` against real MLX 0.32.4: layer initialisation (same seed, same
//! draws), forward passes, losses and optimizer steps
//! (fixtures: tests/fixtures/nn/generate.py).

use crate::common;

use common::{assert_bits_eq, assert_close, npy, seeded};
use mlx::fast::Mask;
use mlx::nn::losses::{binary_cross_entropy, cross_entropy, mse_loss, Reduction};
use mlx::nn::optimizers::{Adam, AdamW, Optimizer, SGD};
use mlx::nn::{
    gelu, gelu_approx, relu, silu, AttentionDims, Conv1d, Conv2d, ConvOptions, Embedding,
    LayerNorm, Linear, Module, MultiHeadAttention, Parameters, RMSNorm, RoPE,
};
use mlx::{ops, random, Array, Dtype};

fn fx(name: &str) -> Array {
    npy(&format!("nn/{name}.npy"))
}

/// The same values laid out transposed in memory (a strided view).
fn strided(a: &Array) -> Array {
    let n = a.ndim() as i32;
    let rev: Vec<i32> = (0..n).rev().collect();
    let t = ops::copy(&ops::transpose(a, &rev).unwrap()).unwrap();
    let out = ops::transpose(&t, &rev).unwrap();
    out.eval().unwrap();
    out
}

/// Every parameter equals MLX's `<case>_<name>.npy` bit for bit.
fn assert_params(case: &str, m: &dyn Module) {
    let p = m.parameters();
    assert!(!p.is_empty());
    for (n, a) in &p {
        assert_bits_eq(a, &fx(&format!("{case}_{n}")));
    }
}

/// Parameters read from MLX's `<case>_<name>.npy` files.
fn load_params(case: &str, names: &[&str]) -> Parameters {
    let arrays: Vec<Array> = names.iter().map(|n| fx(&format!("{case}_{n}"))).collect();
    Parameters::from_arrays(names, &arrays).unwrap()
}

#[test]
fn activations() {
    let x = fx("act_x");
    type Act = fn(&Array) -> mlx::Result<Array>;
    let acts: [(&str, Act); 4] = [
        ("relu", relu),
        ("gelu", gelu),
        ("gelu_approx", gelu_approx),
        ("silu", silu),
    ];
    for (name, f) in acts {
        let want = fx(&format!("act_{name}"));
        assert_close(&f(&x).unwrap(), &want, 1e-5, 1e-6);
        assert_close(&f(&strided(&x)).unwrap(), &want, 1e-5, 1e-6);
        let h = f(&ops::astype(&x, Dtype::Float16).unwrap()).unwrap();
        assert_eq!(h.dtype(), Dtype::Float16, "{name}");
        assert_close(&h, &fx(&format!("act_{name}_f16")), 2e-3, 2e-3);
    }
    // Integer input: relu stays integer, as maximum(x, 0) does in MLX.
    let i = Array::from_slice(&[-2i32, 0, 3], &[3]).unwrap();
    assert_eq!(relu(&i).unwrap().to_vec::<i32>().unwrap(), vec![0, 0, 3]);
}

#[test]
fn linear_init_and_forward() {
    let (lin, nobias) = {
        let _g = seeded(3);
        let lin = Linear::new(5, 4, true).unwrap();
        random::seed(4);
        (lin, Linear::new(5, 3, false).unwrap())
    };
    assert_params("linear", &lin);
    assert_params("linear_nobias", &nobias);
    let names: Vec<String> = nobias.parameters().names().map(String::from).collect();
    assert_eq!(names, ["weight"]);
    let x = fx("linear_x");
    assert_close(&lin.forward(&x).unwrap(), &fx("linear_out"), 1e-5, 1e-6);
    assert_close(
        &lin.forward(&strided(&x)).unwrap(),
        &fx("linear_out"),
        1e-5,
        1e-6,
    );
    assert_close(
        &nobias.forward(&x).unwrap(),
        &fx("linear_nobias_out"),
        1e-5,
        1e-6,
    );
    // A wrong input width is an error, not a panic.
    assert!(lin
        .forward(&ops::zeros(&[2, 4], Dtype::Float32).unwrap())
        .is_err());
    assert!(Linear::new(0, 3, true).is_err());
}

#[test]
fn embedding() {
    let emb = {
        let _g = seeded(5);
        Embedding::new(10, 6).unwrap()
    };
    assert_params("embedding", &emb);
    let out = emb.forward(&fx("embedding_ids")).unwrap();
    assert_bits_eq(&out, &fx("embedding_out"));
    assert_close(
        &emb.as_linear(&fx("embedding_h")).unwrap(),
        &fx("embedding_as_linear"),
        1e-5,
        1e-6,
    );
    let err = emb.forward(&Array::from_slice(&[1.0f32], &[1]).unwrap());
    assert!(err.unwrap_err().to_string().contains("integer"));
}

#[test]
fn norms() {
    let x = fx("norm_x");
    let mut ln = LayerNorm::new(8, 1e-5, true, true).unwrap();
    ln.update(&load_params("layernorm", &["weight", "bias"]))
        .unwrap();
    assert_close(&ln.forward(&x).unwrap(), &fx("layernorm_out"), 1e-5, 1e-5);
    assert_close(
        &ln.forward(&strided(&x)).unwrap(),
        &fx("layernorm_out"),
        1e-5,
        1e-5,
    );
    let plain = LayerNorm::new(8, 1e-3, false, true).unwrap();
    assert!(plain.parameters().is_empty());
    assert_close(
        &plain.forward(&x).unwrap(),
        &fx("layernorm_plain_out"),
        1e-5,
        1e-5,
    );
    let mut rms = RMSNorm::new(8, 1e-5).unwrap();
    rms.update(&load_params("rmsnorm", &["weight"])).unwrap();
    assert_close(&rms.forward(&x).unwrap(), &fx("rmsnorm_out"), 1e-5, 1e-5);
    assert!(RMSNorm::new(8, 0.0).is_err());
    assert!(LayerNorm::new(8, -1.0, true, true).is_err());
}

#[test]
fn rope() {
    let x = fx("rope_x");
    let r = RoPE::new(8, false, 10000.0, 1.0);
    assert!(r.parameters().is_empty());
    assert_close(&r.forward(&x).unwrap(), &fx("rope_out"), 1e-5, 1e-5);
    let t = RoPE::new(6, true, 500.0, 0.5);
    assert_close(
        &t.forward_offset(&x, 3).unwrap(),
        &fx("rope_trad_off3"),
        1e-5,
        1e-5,
    );
}

#[test]
fn multi_head_attention() {
    let (mha, mhab) = {
        let _g = seeded(6);
        let a = MultiHeadAttention::new(16, 4, false).unwrap();
        random::seed(8);
        let sizes = AttentionDims {
            query_input_dims: Some(6),
            key_input_dims: Some(5),
            value_dims: Some(12),
            value_output_dims: Some(4),
            ..Default::default()
        };
        (a, MultiHeadAttention::with_dims(8, 2, sizes, true).unwrap())
    };
    let names: Vec<String> = mha.parameters().names().map(String::from).collect();
    assert_eq!(
        names,
        [
            "query_proj.weight",
            "key_proj.weight",
            "value_proj.weight",
            "out_proj.weight"
        ]
    );
    assert_params("mha", &mha);
    assert_params("mhab", &mhab);
    assert_eq!(mhab.parameters().len(), 8);
    let (q, k, v) = (fx("mha_q"), fx("mha_k"), fx("mha_v"));
    let out = mha.attend(&q, &k, &v, None).unwrap();
    assert_close(&out, &fx("mha_out"), 1e-4, 1e-5);

    let mask = MultiHeadAttention::create_additive_causal_mask(5, Dtype::Float32).unwrap();
    assert_bits_eq(&mask, &fx("mha_causal_mask"));
    let xs = fx("mha_self_x");
    let masked = mha.attend(&xs, &xs, &xs, Some(Mask::Array(&mask))).unwrap();
    assert_close(&masked, &fx("mha_self_masked_out"), 1e-4, 1e-5);
    // The causal mask and MLX's `Causal` mode agree.
    let causal = mha.attend(&xs, &xs, &xs, Some(Mask::Causal)).unwrap();
    assert_close(&causal, &fx("mha_self_masked_out"), 1e-4, 1e-5);

    let (qb, kb) = (fx("mhab_q"), fx("mhab_k"));
    let outb = mhab.attend(&qb, &kb, &kb, None).unwrap();
    assert_close(&outb, &fx("mhab_out"), 1e-4, 1e-5);

    assert!(MultiHeadAttention::new(10, 3, false).is_err());
    assert!(mha.attend(&fx("norm_x"), &k, &v, None).is_err());
    assert!(mha
        .forward(&ops::zeros(&[3, 16], Dtype::Float32).unwrap())
        .is_err());
}

#[test]
fn convolutions() {
    let (c1, c2) = {
        let _g = seeded(9);
        let o1 = ConvOptions {
            stride: 2,
            padding: 1,
            groups: 2,
            ..Default::default()
        };
        let c1 = Conv1d::new(4, 6, 3, o1).unwrap();
        random::seed(10);
        let o2 = ConvOptions {
            stride: (1, 2),
            padding: (1, 0),
            dilation: (2, 1),
            ..Default::default()
        };
        (c1, Conv2d::new(3, 5, (3, 2), o2).unwrap())
    };
    assert_params("conv1d", &c1);
    assert_params("conv2d", &c2);
    assert_close(
        &c1.forward(&fx("conv1d_x")).unwrap(),
        &fx("conv1d_out"),
        1e-5,
        1e-5,
    );
    assert_close(
        &c2.forward(&fx("conv2d_x")).unwrap(),
        &fx("conv2d_out"),
        1e-5,
        1e-5,
    );
    assert_close(
        &c2.forward(&strided(&fx("conv2d_x"))).unwrap(),
        &fx("conv2d_out"),
        1e-5,
        1e-5,
    );
    assert!(Conv1d::new(
        5,
        6,
        3,
        ConvOptions {
            groups: 2,
            ..Default::default()
        }
    )
    .is_err());
    assert!(c1.forward(&fx("conv2d_x")).is_err());
}

#[test]
fn cross_entropy_matches_mlx() {
    let (logits, targets) = (fx("ce_logits"), fx("ce_targets"));
    for (red, name) in [
        (Reduction::None, "none"),
        (Reduction::Mean, "mean"),
        (Reduction::Sum, "sum"),
    ] {
        let got = cross_entropy(&logits, &targets, None, -1, 0.0, red).unwrap();
        assert_close(&got, &fx(&format!("ce_{name}")), 1e-5, 1e-6);
    }
    let probs = cross_entropy(&logits, &fx("ce_probs"), None, -1, 0.0, Reduction::None).unwrap();
    assert_close(&probs, &fx("ce_probs_out"), 1e-5, 1e-6);
    let w = fx("ce_weights");
    let sw = cross_entropy(&logits, &targets, Some(&w), -1, 0.2, Reduction::Sum).unwrap();
    assert_close(&sw, &fx("ce_smooth_weighted"), 1e-5, 1e-5);
    let a0 = cross_entropy(
        &fx("ce_axis0_logits"),
        &fx("ce_axis0_targets"),
        None,
        0,
        0.0,
        Reduction::None,
    )
    .unwrap();
    assert_close(&a0, &fx("ce_axis0_out"), 1e-5, 1e-6);
    assert_close(
        &cross_entropy(&strided(&logits), &targets, None, -1, 0.0, Reduction::None).unwrap(),
        &fx("ce_none"),
        1e-5,
        1e-6,
    );

    // Errors: shapes, smoothing range, float class indices, weights shape.
    let bad_t = Array::from_slice(&[0i32, 1], &[2]).unwrap();
    let e = cross_entropy(&logits, &bad_t, None, -1, 0.0, Reduction::None).unwrap_err();
    assert!(e.to_string().contains("does not match"), "{e}");
    assert!(cross_entropy(&logits, &targets, None, -1, 1.0, Reduction::None).is_err());
    assert!(cross_entropy(&logits, &targets, None, 2, 0.0, Reduction::None).is_err());
    let ft = ops::astype(&targets, Dtype::Float32).unwrap();
    assert!(cross_entropy(&logits, &ft, None, -1, 0.0, Reduction::None).is_err());
    assert!(cross_entropy(&logits, &targets, Some(&logits), -1, 0.0, Reduction::None).is_err());
}

#[test]
fn mse_and_binary_cross_entropy() {
    let (p, t) = (fx("mse_pred"), fx("mse_tgt"));
    for (red, name) in [
        (Reduction::None, "none"),
        (Reduction::Mean, "mean"),
        (Reduction::Sum, "sum"),
    ] {
        assert_close(
            &mse_loss(&p, &t, red).unwrap(),
            &fx(&format!("mse_{name}")),
            1e-5,
            1e-6,
        );
    }
    assert!(mse_loss(&p, &fx("bce_logits"), Reduction::Mean).is_err());

    let (bl, bt) = (fx("bce_logits"), fx("bce_targets"));
    let mean = binary_cross_entropy(&bl, &bt, None, true, Reduction::Mean).unwrap();
    assert_close(&mean, &fx("bce_mean"), 1e-5, 1e-6);
    let none = binary_cross_entropy(&bl, &bt, None, true, Reduction::None).unwrap();
    assert_close(&none, &fx("bce_none"), 1e-5, 1e-6);
    let probs = binary_cross_entropy(&fx("bce_probs"), &bt, None, false, Reduction::Sum).unwrap();
    assert_close(&probs, &fx("bce_probs_sum"), 1e-5, 1e-5);
    // Probabilities of exactly 0 and 1: the logs are clipped at -100.
    let edge = binary_cross_entropy(
        &fx("bce_edge_p"),
        &fx("bce_edge_t"),
        None,
        false,
        Reduction::None,
    )
    .unwrap();
    assert_close(&edge, &fx("bce_edge_none"), 1e-5, 1e-6);
    assert!(binary_cross_entropy(&bl, &p, None, true, Reduction::Mean).is_err());
}

/// Runs `opt` for three steps on MLX's parameters and gradients and
/// compares parameters and state slots with MLX's after every step.
fn check_optimizer(name: &str, opt: &dyn Optimizer, slots: &[&str]) {
    let mut params = load_params("opt_param", &["a", "b"]);
    let mut state = opt.init(&params).unwrap();
    let mut want_names = vec!["step".to_string(), "learning_rate".to_string()];
    for p in ["a", "b"] {
        for s in slots {
            want_names.push(format!("{p}.{s}"));
        }
    }
    assert_eq!(state.names().collect::<Vec<_>>(), want_names, "{name}");
    for i in 0..3 {
        let grads = load_params(&format!("opt_grad{i}"), &["a", "b"]);
        (params, state) = opt.apply_gradients(&grads, &params, &state).unwrap();
        for (n, a) in &params {
            let want = fx(&format!("opt_{name}_step{i}_{n}"));
            assert_close(a, &want, 1e-6, 1e-7);
        }
        for (n, a) in &state {
            if n == "step" {
                assert_eq!(a.dtype(), Dtype::Uint64);
                assert_eq!(a.item::<u64>().unwrap(), i as u64 + 1);
            } else if n != "learning_rate" {
                let want = fx(&format!("opt_{name}_step{i}_state_{n}"));
                assert_close(a, &want, 1e-6, 1e-7);
            }
        }
    }
}

#[test]
fn optimizers_match_mlx() {
    check_optimizer("sgd", &SGD::new(0.1), &["v"]);
    let sgd_mom = SGD {
        momentum: 0.9,
        weight_decay: 0.01,
        dampening: 0.1,
        ..SGD::new(0.05)
    };
    check_optimizer("sgd_mom", &sgd_mom, &["v"]);
    let nesterov = SGD {
        momentum: 0.8,
        nesterov: true,
        ..SGD::new(0.05)
    };
    check_optimizer("sgd_nesterov", &nesterov, &["v"]);
    check_optimizer("adam", &Adam::new(0.01), &["m", "v"]);
    let adam_bc = Adam {
        betas: (0.8, 0.95),
        eps: 1e-6,
        bias_correction: true,
        ..Adam::new(0.01)
    };
    check_optimizer("adam_bc", &adam_bc, &["m", "v"]);
    let adamw = AdamW {
        weight_decay: 0.05,
        ..AdamW::new(0.01)
    };
    check_optimizer("adamw", &adamw, &["m", "v"]);
}

#[test]
fn optimizer_errors() {
    let params = load_params("opt_param", &["a", "b"]);
    let grads = load_params("opt_grad0", &["a", "b"]);
    let bad = SGD {
        nesterov: true,
        ..SGD::new(0.1)
    };
    let state = bad.init(&params).unwrap();
    let e = bad.apply_gradients(&grads, &params, &state).unwrap_err();
    assert!(e.to_string().contains("Nesterov"), "{e}");
    let adam = Adam {
        betas: (1.0, 0.9),
        ..Adam::new(0.1)
    };
    assert!(adam.apply_gradients(&grads, &params, &state).is_err());
    // A gradient for a parameter that does not exist.
    let extra = load_params("opt_grad0", &["a"]);
    let only_b = load_params("opt_param", &["b"]);
    let e = SGD::new(0.1)
        .apply_gradients(&extra, &only_b, &Parameters::new())
        .unwrap_err();
    assert!(e.to_string().contains("\"a\""), "{e}");
}

#[test]
fn parameters_and_update() {
    let mut lin = {
        let _g = seeded(1);
        Linear::new(3, 2, true).unwrap()
    };
    let p = lin.parameters();
    assert_eq!(p.names().collect::<Vec<_>>(), ["weight", "bias"]);
    // Round trip through a flat list (what an exported function sees).
    let names: Vec<String> = p.names().map(String::from).collect();
    let back = Parameters::from_arrays(&names, &p.arrays()).unwrap();
    assert!(back.get("bias").unwrap().same(p.get("bias").unwrap()));
    assert!(Parameters::from_arrays(&names, &p.arrays()[..1]).is_err());
    assert!(Parameters::from_arrays(&["w", "w"], &p.arrays()).is_err());

    let mut nested = Parameters::new();
    nested.extend_prefixed("layers.0", p.clone());
    assert_eq!(
        nested.names().collect::<Vec<_>>(),
        ["layers.0.weight", "layers.0.bias"]
    );
    assert_eq!(nested.under("layers.0").len(), 2);
    assert!(nested.under("layers.1").is_empty());

    let mut new_bias = Parameters::new();
    new_bias.insert("bias", ops::zeros(&[2], Dtype::Float32).unwrap());
    lin.update(&new_bias).unwrap();
    assert_eq!(
        lin.bias.as_ref().unwrap().to_vec::<f32>().unwrap(),
        [0.0, 0.0]
    );
    assert!(lin.weight.same(p.get("weight").unwrap()));
    let mut unknown = Parameters::new();
    unknown.insert("gain", ops::zeros(&[2], Dtype::Float32).unwrap());
    let e = lin.update(&unknown).unwrap_err();
    assert!(e.to_string().contains("gain"), "{e}");
}

/// Two linear layers with relu between, as the fixture's `TinyMLP`.
#[derive(Clone)]
struct TinyMlp {
    layers: Vec<Linear>,
}

impl Module for TinyMlp {
    fn visit_parameters(&self, f: &mut dyn FnMut(&str, &Array)) {
        for (i, l) in self.layers.iter().enumerate() {
            mlx::nn::visit_child(&format!("layers.{i}"), l, f);
        }
    }

    fn visit_parameters_mut(&mut self, f: &mut dyn FnMut(&str, &mut Array)) {
        for (i, l) in self.layers.iter_mut().enumerate() {
            mlx::nn::visit_child_mut(&format!("layers.{i}"), l, f);
        }
    }

    fn forward(&self, x: &Array) -> mlx::Result<Array> {
        self.layers[1].forward(&relu(&self.layers[0].forward(x)?)?)
    }
}

#[test]
fn mlp_training_with_value_and_grad_matches_mlx() {
    let model = {
        let _g = seeded(0);
        TinyMlp {
            layers: vec![
                Linear::new(4, 8, true).unwrap(),
                Linear::new(8, 3, true).unwrap(),
            ],
        }
    };
    assert_params("mlp", &model);
    let (x, y) = (fx("mlp_x"), fx("mlp_y"));
    let names: Vec<String> = model.parameters().names().map(String::from).collect();
    let np = names.len();
    let loss_fn = |args: &[Array]| -> mlx::Result<Vec<Array>> {
        let mut m = model.clone();
        m.update(&Parameters::from_arrays(&names, &args[..np])?)?;
        let logits = m.forward(&args[np])?;
        Ok(vec![cross_entropy(
            &logits,
            &args[np + 1],
            None,
            -1,
            0.0,
            Reduction::Mean,
        )?])
    };
    let argnums: Vec<usize> = (0..np).collect();
    let vg = mlx::transforms::value_and_grad(loss_fn, &argnums);
    let opt = SGD {
        momentum: 0.5,
        ..SGD::new(0.5)
    };
    let mut params = model.parameters();
    let mut state = opt.init(&params).unwrap();
    let mut losses = Vec::new();
    for _ in 0..5 {
        let mut args = params.arrays();
        args.extend([x.clone(), y.clone()]);
        let (v, g) = vg(&args).unwrap();
        let grads = Parameters::from_arrays(&names, &g).unwrap();
        (params, state) = opt.apply_gradients(&grads, &params, &state).unwrap();
        params.eval().unwrap();
        state.eval().unwrap();
        losses.push(v[0].item::<f32>().unwrap());
    }
    let want = Array::from_slice(&losses, &[5]).unwrap();
    assert_close(&want, &fx("mlp_losses"), 1e-5, 1e-6);
    for (n, a) in &params {
        assert_close(a, &fx(&format!("mlp_final_{n}")), 1e-5, 1e-6);
    }
}

#[test]
fn exported_block_takes_parameters_as_inputs() {
    // A small pre-norm attention block; its parameters are the exported
    // function's first inputs, so one file serves any weights.
    let (norm, mha, proj) = {
        let _g = seeded(12);
        (
            LayerNorm::new(16, 1e-5, true, true).unwrap(),
            MultiHeadAttention::new(16, 4, true).unwrap(),
            Linear::new(16, 8, true).unwrap(),
        )
    };
    let mut params = Parameters::new();
    params.extend_prefixed("norm", norm.parameters());
    params.extend_prefixed("attn", mha.parameters());
    params.extend_prefixed("proj", proj.parameters());
    let names: Vec<String> = params.names().map(String::from).collect();
    let np = names.len();
    let block = move |a: &[Array]| -> mlx::Result<Vec<Array>> {
        let p = Parameters::from_arrays(&names, &a[..np])?;
        let (mut norm, mut mha, mut proj) = (norm.clone(), mha.clone(), proj.clone());
        norm.update(&p.under("norm"))?;
        mha.update(&p.under("attn"))?;
        proj.update(&p.under("proj"))?;
        let h = norm.forward(&a[np])?;
        let h = ops::add(&a[np], &mha.forward(&h)?)?;
        Ok(vec![gelu_approx(&proj.forward(&h)?)?])
    };
    let x = fx("mha_self_x");
    let mut args = params.arrays();
    args.push(x.clone());
    let eager = block(&args).unwrap();

    let path = std::env::temp_dir().join(format!("nn-block-{}.mlxfn", std::process::id()));
    mlx::export_function(&path, &block, &args, &mlx::ExportOptions::default()).unwrap();
    let f = mlx::import_function(&path).unwrap();
    std::fs::remove_file(&path).ok();
    assert_close(&f.call(&args).unwrap()[0], &eager[0], 1e-6, 1e-6);
    // Other weights through the same file: scaled parameters change the output.
    let mut scaled = params
        .map(|_, a| ops::multiply(a, &Array::scalar(0.5f32)))
        .unwrap()
        .arrays();
    scaled.push(x);
    let want = block(&scaled).unwrap();
    assert_close(&f.call(&scaled).unwrap()[0], &want[0], 1e-6, 1e-6);
}
