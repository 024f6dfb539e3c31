//! The scenarios of MLX's own export/import test suites
//! (`python/tests/test_export_import.py`, `tests/export_import_tests.cpp`),
//! restated for this crate and run in both file formats. Expected values are
//! closed forms or eager results of ops that are tested against MLX fixtures
//! elsewhere; the point here is that export and import keep them.

use mlx::export::{export_with_callback, ExportEvent};
use mlx::{ops, random, Array, Dtype, ExportOptions, Format, Kwargs, StateValue};
use std::path::PathBuf;

fn tmp(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("mlx-scenarios-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    dir.join(name)
}

fn f32s(v: &[f32], shape: &[i32]) -> Array {
    Array::from_slice(v, shape).unwrap()
}

fn i32s(v: &[i32], shape: &[i32]) -> Array {
    Array::from_slice(v, shape).unwrap()
}

fn opts(format: Format, shapeless: bool) -> ExportOptions {
    ExportOptions {
        format,
        shapeless,
        ..ExportOptions::default()
    }
}

const FORMATS: [Format; 2] = [Format::Native, Format::Mlx];

fn kw(pairs: &[(&str, &Array)]) -> Kwargs {
    pairs
        .iter()
        .map(|(k, v)| (k.to_string(), (*v).clone()))
        .collect()
}

fn max_abs_diff(a: &Array, b: &Array) -> f32 {
    assert_eq!(a.shape(), b.shape());
    a.to_vec::<f32>()
        .unwrap()
        .iter()
        .zip(b.to_vec::<f32>().unwrap())
        .map(|(x, y)| (x - y).abs())
        .fold(0.0, f32::max)
}

#[test]
fn no_inputs_and_an_elementwise_function() {
    for fmt in FORMATS {
        let path = tmp(&format!("basic-{fmt:?}.mlxfn"));
        mlx::export_function(
            &path,
            |_| Ok(vec![ops::zeros(&[3, 3], Dtype::Float32)?]),
            &[],
            &opts(fmt, false),
        )
        .unwrap();
        let out = mlx::import_function(&path).unwrap().call(&[]).unwrap();
        assert_eq!(out[0].shape(), &[3, 3]);
        assert_eq!(out[0].to_vec::<f32>().unwrap(), vec![0.0; 9]);

        let x = f32s(&[1.0, 2.0, 3.0, 4.0, 5.0], &[5]);
        mlx::export_function(
            &path,
            |a| Ok(vec![ops::abs(&ops::sin(&a[0])?)?]),
            std::slice::from_ref(&x),
            &opts(fmt, false),
        )
        .unwrap();
        let f = mlx::import_function(&path).unwrap();
        let got = f.call(std::slice::from_ref(&x)).unwrap()[0]
            .to_vec::<f32>()
            .unwrap();
        for (g, v) in got.iter().zip([1.0f32, 2.0, 3.0, 4.0, 5.0]) {
            assert!((g - v.sin().abs()).abs() < 1e-6, "{g} vs |sin({v})|");
        }
        // Wrong arity is an error, not a crash or a partial result.
        assert!(f.call(&[x.clone(), x.clone()]).is_err());
        assert!(f.call(&[]).is_err());
    }
}

#[test]
fn two_scalar_inputs_reject_extra_or_missing_arguments() {
    for fmt in FORMATS {
        let path = tmp(&format!("xy-{fmt:?}.mlxfn"));
        let one = Array::scalar(1.0f32);
        mlx::export_function(
            &path,
            |a| Ok(vec![ops::add(&a[0], &a[1])?]),
            &[one.clone(), one.clone()],
            &opts(fmt, false),
        )
        .unwrap();
        let f = mlx::import_function(&path).unwrap();
        assert_eq!(
            f.call(&[one.clone(), Array::scalar(2.5f32)]).unwrap()[0]
                .to_vec::<f32>()
                .unwrap(),
            vec![3.5]
        );
        assert!(f.call(&[one.clone(), one.clone(), one.clone()]).is_err());
        assert!(f.call(std::slice::from_ref(&one)).is_err());
        // A different dtype does not match the float32 trace.
        assert!(f.call(&[one.clone(), Array::scalar(1i32)]).is_err());
    }
}

#[test]
fn a_random_sample_replays_its_captured_key() {
    for fmt in FORMATS {
        let path = tmp(&format!("random-{fmt:?}.mlxfn"));
        let _rng = crate::common::seeded(5);
        mlx::export_function(
            &path,
            |_| Ok(vec![random::uniform_unit(&[3], Dtype::Float32, None)?]),
            &[],
            &opts(fmt, false),
        )
        .unwrap();
        let imported = mlx::import_function(&path).unwrap().call(&[]).unwrap();
        mlx::random::seed(5);
        let eager = random::uniform_unit(&[3], Dtype::Float32, None).unwrap();
        assert_eq!(
            imported[0].to_vec::<f32>().unwrap(),
            eager.to_vec::<f32>().unwrap()
        );
    }
}

#[test]
fn keyword_inputs_must_be_passed_by_name() {
    let (x, y, z) = (
        i32s(&[1, 2, 3], &[3]),
        i32s(&[1, 1, 0], &[3]),
        i32s(&[2, 2, 2], &[3]),
    );
    // out = x (+ z when given)
    let fun = |a: &[Array], k: &Kwargs| -> mlx::Result<Vec<Array>> {
        let x = a.first().or_else(|| k.get("x")).expect("x");
        Ok(vec![match k.get("z") {
            Some(z) => ops::add(x, z)?,
            None => x.clone(),
        }])
    };
    for fmt in FORMATS {
        let path = tmp(&format!("kwargs-{fmt:?}.mlxfn"));
        mlx::export_function_kwargs(
            &path,
            fun,
            std::slice::from_ref(&x),
            &kw(&[("z", &z)]),
            &opts(fmt, false),
        )
        .unwrap();
        let f = mlx::import_function(&path).unwrap();
        // z passed positionally, or under another name: no trace matches.
        assert!(f.call(&[x.clone(), z.clone()]).is_err());
        assert!(f
            .call_kwargs(std::slice::from_ref(&x), &kw(&[("y", &z)]))
            .is_err());
        let out = f
            .call_kwargs(std::slice::from_ref(&x), &kw(&[("z", &z)]))
            .unwrap();
        assert_eq!(out[0].to_vec::<i32>().unwrap(), vec![3, 4, 5]);

        // Only keyword inputs: a positional call does not match.
        mlx::export_function_kwargs(
            &path,
            fun,
            &[],
            &kw(&[("x", &x), ("z", &z)]),
            &opts(fmt, false),
        )
        .unwrap();
        let f = mlx::import_function(&path).unwrap();
        assert!(f
            .call_kwargs(std::slice::from_ref(&x), &kw(&[("z", &z)]))
            .is_err());
        let out = f.call_kwargs(&[], &kw(&[("x", &x), ("z", &z)])).unwrap();
        assert_eq!(out[0].to_vec::<i32>().unwrap(), vec![3, 4, 5]);
        let _ = &y;
    }
}

#[test]
fn keyword_order_at_the_call_does_not_matter() {
    for fmt in FORMATS {
        let path = tmp(&format!("kworder-{fmt:?}.mlxfn"));
        let one = Array::scalar(1.0f32);
        mlx::export_function_kwargs(
            &path,
            |_, k| Ok(vec![ops::subtract(&k["x"], &k["y"])?]),
            &[],
            &kw(&[("x", &one), ("y", &one)]),
            &opts(fmt, false),
        )
        .unwrap();
        let f = mlx::import_function(&path).unwrap();
        let (two, three) = (Array::scalar(2.0f32), Array::scalar(3.0f32));
        let a = f
            .call_kwargs(&[], &kw(&[("x", &two), ("y", &three)]))
            .unwrap();
        assert_eq!(a[0].to_vec::<f32>().unwrap(), vec![-1.0]);
        let b = f
            .call_kwargs(&[], &kw(&[("y", &two), ("x", &three)]))
            .unwrap();
        assert_eq!(b[0].to_vec::<f32>().unwrap(), vec![1.0]);
    }
}

#[test]
fn several_traces_with_optional_keyword_and_a_shared_large_constant() {
    // out = x + y (+ z)
    let fun = |a: &[Array], k: &Kwargs| -> mlx::Result<Vec<Array>> {
        let mut out = ops::add(&a[0], &a[1])?;
        if let Some(z) = k.get("z") {
            out = ops::add(&out, z)?;
        }
        Ok(vec![out])
    };
    for fmt in FORMATS {
        let path = tmp(&format!("variable-{fmt:?}.mlxfn"));
        let (x, ones) = (i32s(&[1, 2, 3], &[3]), i32s(&[1, 1, 1], &[3]));
        let mut ex = mlx::exporter(&path, fun, &opts(fmt, false)).unwrap();
        ex.export(&[x.clone(), ones.clone()], &Kwargs::new())
            .unwrap();
        ex.export(&[x.clone(), ones.clone()], &kw(&[("z", &i32s(&[2], &[1]))]))
            .unwrap();
        ex.finish().unwrap();
        let f = mlx::import_function(&path).unwrap();
        assert_eq!(
            f.call(&[x.clone(), ones.clone()]).unwrap()[0]
                .to_vec::<i32>()
                .unwrap(),
            vec![2, 3, 4]
        );
        let with_z = f
            .call_kwargs(&[x.clone(), ones.clone()], &kw(&[("z", &i32s(&[2], &[1]))]))
            .unwrap();
        assert_eq!(with_z[0].to_vec::<i32>().unwrap(), vec![4, 5, 6]);
        // Not a traced shape.
        let four = i32s(&[1, 2, 3, 4], &[4]);
        assert!(f.call(&[four.clone(), four]).is_err());

        // constant + sum(args) for 0..5 scalar args: five traces, one copy
        // of the 128 KiB constant in the file.
        let constant = ops::zeros(&[16, 2048], Dtype::Float32).unwrap();
        constant.eval().unwrap();
        let c = constant.clone();
        let sum_fun = move |a: &[Array], _: &Kwargs| -> mlx::Result<Vec<Array>> {
            let mut out = c.clone();
            for x in a {
                out = ops::add(&out, x)?;
            }
            Ok(vec![out])
        };
        let path = tmp(&format!("constant-{fmt:?}.mlxfn"));
        let mut ex = mlx::exporter(&path, sum_fun, &opts(fmt, false)).unwrap();
        for n in 0..5 {
            let args = vec![Array::scalar(1.0f32); n];
            ex.export(&args, &Kwargs::new()).unwrap();
        }
        ex.finish().unwrap();
        let size = std::fs::metadata(&path).unwrap().len() as usize;
        assert!(
            size < constant.nbytes() + 8192,
            "{fmt:?}: file of {size} bytes for a {} byte constant",
            constant.nbytes()
        );
        let f = mlx::import_function(&path).unwrap();
        let three = vec![Array::scalar(1.0f32); 3];
        let out = f.call(&three).unwrap()[0].to_vec::<f32>().unwrap();
        assert_eq!(out.len(), 16 * 2048);
        assert!(out.iter().all(|&v| v == 3.0));
    }
}

#[test]
fn shapeless_traces_by_input_count() {
    let sum = |a: &[Array], _: &Kwargs| -> mlx::Result<Vec<Array>> {
        let mut out = a[0].clone();
        for x in &a[1..] {
            out = ops::add(&out, x)?;
        }
        Ok(vec![out])
    };
    for fmt in FORMATS {
        let path = tmp(&format!("shapeless-sum-{fmt:?}.mlxfn"));
        let mut ex = mlx::exporter(&path, sum, &opts(fmt, true)).unwrap();
        for n in 1..=3 {
            ex.export(&vec![Array::scalar(1i32); n], &Kwargs::new())
                .unwrap();
        }
        ex.finish().unwrap();
        let f = mlx::import_function(&path).unwrap();
        for n in 1..=3 {
            let out = f.call(&vec![Array::scalar(1i32); n]).unwrap();
            assert_eq!(out[0].to_vec::<i32>().unwrap(), vec![n as i32]);
        }
        // Shapeless keeps ranks: a vector where a scalar was traced fails.
        assert!(f
            .call(&[Array::scalar(10i32), i32s(&[5, 10, 20], &[3])])
            .is_err());
    }
}

#[test]
fn gathers_and_scatters_round_trip() {
    let x = f32s(&(0..16).map(|i| i as f32).collect::<Vec<_>>(), &[4, 4]);
    let idx = i32s(&[0, 1, 2, 3, 1, 2, 0, 3], &[2, 4]);
    let upd = f32s(&[-1.0, -2.0, -3.0, -4.0, -5.0, -6.0, -7.0, -8.0], &[2, 4]);
    for fmt in FORMATS {
        let path = tmp(&format!("take-{fmt:?}.mlxfn"));
        mlx::export_function(
            &path,
            |a| Ok(vec![ops::take_along_axis(&a[0], &a[1], Some(0))?]),
            &[x.clone(), idx.clone()],
            &opts(fmt, false),
        )
        .unwrap();
        let out = mlx::import_function(&path)
            .unwrap()
            .call(&[x.clone(), idx.clone()])
            .unwrap();
        // out[i][j] = x[idx[i][j]][j] = 4 * idx + j
        assert_eq!(
            out[0].to_vec::<f32>().unwrap(),
            vec![0.0, 5.0, 10.0, 15.0, 4.0, 9.0, 2.0, 15.0]
        );

        let path = tmp(&format!("put-{fmt:?}.mlxfn"));
        mlx::export_function(
            &path,
            |a| Ok(vec![ops::put_along_axis(&a[0], &a[1], &a[2], Some(0))?]),
            &[x.clone(), idx.clone(), upd.clone()],
            &opts(fmt, false),
        )
        .unwrap();
        let out = mlx::import_function(&path)
            .unwrap()
            .call(&[x.clone(), idx.clone(), upd.clone()])
            .unwrap()[0]
            .to_vec::<f32>()
            .unwrap();
        let mut expected: Vec<f32> = (0..16).map(|i| i as f32).collect();
        for (k, (&i, &u)) in [0, 1, 2, 3, 1, 2, 0, 3]
            .iter()
            .zip(&[-1.0, -2.0, -3.0, -4.0, -5.0, -6.0, -7.0, -8.0])
            .enumerate()
        {
            expected[i * 4 + k % 4] = u;
        }
        assert_eq!(out, expected);

        // x.at[y].add(z) with a repeated index.
        let path = tmp(&format!("scatter-add-{fmt:?}.mlxfn"));
        let (v, at, by) = (
            i32s(&[1, 2, 3], &[3]),
            i32s(&[0, 0, 1], &[3]),
            i32s(&[1, 1, 1], &[3]),
        );
        mlx::export_function(
            &path,
            |a| {
                let upd = ops::reshape(&a[2], &[3, 1])?;
                Ok(vec![ops::scatter_add(&a[0], &[a[1].clone()], &upd, &[0])?])
            },
            &[v.clone(), at.clone(), by.clone()],
            &opts(fmt, false),
        )
        .unwrap();
        let out = mlx::import_function(&path)
            .unwrap()
            .call(&[v, at, by])
            .unwrap();
        assert_eq!(out[0].to_vec::<i32>().unwrap(), vec![3, 3, 3]);
    }
}

/// A deterministic array of `shape` with values in [-1, 1).
fn values(shape: &[i32], seed: u64) -> Array {
    let n = shape.iter().product::<i32>() as usize;
    let v: Vec<f32> = crate::common::Lcg::new(seed)
        .uniform(-1.0, 1.0, n)
        .into_iter()
        .map(|x| x as f32)
        .collect();
    f32s(&v, shape)
}

#[test]
fn shapeless_convolutions_at_other_sizes() {
    // (input shape at export, other shapes, weight shape, stride, padding, groups)
    type Case = (
        &'static [i32],
        &'static [&'static [i32]],
        &'static [i32],
        i32,
        i32,
        i32,
    );
    let cases: [Case; 3] = [
        (
            &[4, 64, 3],
            &[&[1, 33, 3], &[2, 128, 3]],
            &[8, 3, 3],
            2,
            1,
            1,
        ),
        (
            &[2, 32, 32, 3],
            &[&[1, 31, 31, 3], &[4, 64, 48, 3]],
            &[6, 3, 3, 3],
            2,
            1,
            1,
        ),
        (
            &[2, 32, 32, 4],
            &[&[1, 32, 32, 4], &[3, 15, 20, 4]],
            &[6, 3, 3, 2],
            2,
            1,
            2,
        ),
    ];
    for fmt in FORMATS {
        for (k, (traced, others, wshape, stride, pad, groups)) in cases.iter().enumerate() {
            let w = values(wshape, 7 + k as u64);
            let conv = {
                let w = w.clone();
                move |x: &Array| -> mlx::Result<Array> {
                    if x.ndim() == 3 {
                        ops::conv1d(x, &w, *stride, *pad, 1, *groups)
                    } else {
                        ops::conv2d(x, &w, (*stride, *stride), (*pad, *pad), (1, 1), *groups)
                    }
                }
            };
            let path = tmp(&format!("conv-{k}-{fmt:?}.mlxfn"));
            let c = conv.clone();
            mlx::export_function(
                &path,
                move |a| Ok(vec![c(&a[0])?]),
                &[values(traced, 1)],
                &opts(fmt, true),
            )
            .unwrap();
            let f = mlx::import_function(&path).unwrap();
            for (j, shape) in std::iter::once(*traced)
                .chain(others.iter().copied())
                .enumerate()
            {
                let x = values(shape, 100 + j as u64);
                let got = f.call(std::slice::from_ref(&x)).unwrap();
                let want = conv(&x).unwrap();
                assert_eq!(
                    got[0].shape(),
                    want.shape(),
                    "case {k} {fmt:?} at {shape:?}"
                );
                let d = max_abs_diff(&got[0], &want);
                assert!(d < 1e-5, "case {k} {fmt:?} at {shape:?}: max |diff| {d}");
            }
        }
    }
}

#[test]
fn shape_dependent_branches_are_fixed_at_trace_time() {
    // x + y when y has at most 2 elements, else x + 2y.
    let fun = |a: &[Array]| -> mlx::Result<Vec<Array>> {
        let y = if a[1].shape()[0] <= 2 {
            a[1].clone()
        } else {
            ops::multiply(&a[1], &Array::scalar(2i32))?
        };
        Ok(vec![ops::add(&a[0], &y)?])
    };
    for fmt in FORMATS {
        for shapeless in [false, true] {
            for (y, want) in [
                (i32s(&[1, 2, 3], &[3]), vec![3, 5, 7]),
                (i32s(&[1, 2], &[2]), vec![2, 3]),
            ] {
                let path = tmp(&format!("branch-{fmt:?}-{shapeless}.mlxfn"));
                let x = Array::scalar(1i32);
                mlx::export_function(&path, fun, &[x.clone(), y.clone()], &opts(fmt, shapeless))
                    .unwrap();
                let out = mlx::import_function(&path).unwrap().call(&[x, y]).unwrap();
                assert_eq!(out[0].to_vec::<i32>().unwrap(), want);
            }
        }
    }
}

#[test]
fn quantized_linear_layers() {
    let (w1, w2) = (values(&[64, 128], 3), values(&[128, 64], 4));
    let (q1, s1, b1) = ops::quantize(&w1, 64, 4).unwrap();
    let (q2, s2, b2) = ops::quantize(&w2, 64, 4).unwrap();
    let model = move |a: &[Array]| -> mlx::Result<Vec<Array>> {
        let h = ops::quantized_matmul(&a[0], &q1, &s1, &b1, true, 64, 4)?;
        let h = ops::maximum(&h, &Array::scalar(0.0f32))?;
        Ok(vec![ops::quantized_matmul(&h, &q2, &s2, &b2, true, 64, 4)?])
    };
    let x = values(&[8, 128], 5);
    let eager = model(std::slice::from_ref(&x)).unwrap();
    for fmt in FORMATS {
        for shapeless in [false, true] {
            let path = tmp(&format!("qlinear-{fmt:?}-{shapeless}.mlxfn"));
            mlx::export_function(
                &path,
                model.clone(),
                std::slice::from_ref(&x),
                &opts(fmt, shapeless),
            )
            .unwrap();
            let out = mlx::import_function(&path)
                .unwrap()
                .call(std::slice::from_ref(&x))
                .unwrap();
            assert_eq!(
                out[0].to_vec::<f32>().unwrap(),
                eager[0].to_vec::<f32>().unwrap(),
                "{fmt:?} shapeless={shapeless}"
            );
        }
    }
}

#[test]
fn the_callback_sees_inputs_keywords_primitives_and_outputs() {
    // astype(log(|x - y|), int32) with y by keyword.
    let one = Array::scalar(1.0f32);
    let mut n_inputs = None;
    let mut keywords = Vec::new();
    let mut n_outputs = None;
    let mut n_constants = 0;
    let mut primitives = Vec::new();
    export_with_callback(
        |e| match e {
            ExportEvent::Inputs(v) => n_inputs = Some(v.len()),
            ExportEvent::KeywordInputs(v) => keywords = v.into_iter().map(|(k, _)| k).collect(),
            ExportEvent::Outputs(v) => n_outputs = Some(v.len()),
            ExportEvent::Constant { .. } => n_constants += 1,
            ExportEvent::Primitive { name, state, .. } => primitives.push((name, state)),
        },
        |a: &[Array], k: &Kwargs| {
            let d = ops::abs(&ops::subtract(&a[0], &k["y"])?)?;
            Ok(vec![ops::astype(&ops::log(&d)?, Dtype::Int32)?])
        },
        std::slice::from_ref(&one),
        &kw(&[("y", &one)]),
        &ExportOptions::default(),
    )
    .unwrap();
    assert_eq!(n_inputs, Some(1));
    assert_eq!(keywords, vec!["y".to_string()]);
    assert_eq!(n_outputs, Some(1));
    assert_eq!(n_constants, 0);
    let names: Vec<&str> = primitives.iter().map(|(n, _)| n.as_str()).collect();
    assert_eq!(names, ["Subtract", "Abs", "Log", "AsType"]);
    assert!(primitives[0].1.is_empty() && primitives[1].1.is_empty());
    // Log's one state field is its base, natural log = 2 in MLX's numbering.
    assert_eq!(primitives[2].1.len(), 1);
    assert!(
        matches!(primitives[2].1[0].1, StateValue::Enum { value: 2, .. }),
        "{:?}",
        primitives[2].1
    );
    assert!(
        matches!(primitives[3].1[0].1, StateValue::Dtype(Dtype::Int32)),
        "{:?}",
        primitives[3].1
    );
}

#[test]
fn per_trace_constants_made_from_shapes() {
    // x = i + sum_{j<10} (i + j) with i = len(y), returned as x * sum(y).
    let fun = |a: &[Array]| -> mlx::Result<Vec<Array>> {
        let i = a[0].shape()[0];
        let mut x = Array::scalar(i);
        for j in 0..10 {
            x = ops::add(&x, &Array::scalar(i + j))?;
        }
        Ok(vec![ops::multiply(&x, &ops::sum(&a[0], &[0], false)?)?])
    };
    for fmt in FORMATS {
        let path = tmp(&format!("multi-const-{fmt:?}.mlxfn"));
        let mut ex =
            mlx::exporter(&path, |a: &[Array], _: &Kwargs| fun(a), &opts(fmt, false)).unwrap();
        for n in 1..=3 {
            ex.export(&[i32s(&vec![1; n], &[n as i32])], &Kwargs::new())
                .unwrap();
        }
        ex.finish().unwrap();
        let f = mlx::import_function(&path).unwrap();
        for n in 1..=3i32 {
            let out = f.call(&[i32s(&vec![1; n as usize], &[n])]).unwrap();
            let x = n + (0..10).map(|j| n + j).sum::<i32>();
            assert_eq!(out[0].to_vec::<i32>().unwrap(), vec![x * n]);
        }
    }
}

#[test]
fn shapeless_matmul_over_the_middle_and_batch_axes() {
    for (batch, e, h, traced, others) in [(1, 64, 17, 40, [248, 623]), (2, 32, 8, 10, [50, 100])] {
        let w: Vec<f32> = (0..e * h).map(|i| i as f32 / (e * h) as f32).collect();
        let w = f32s(&w, &[e, h]);
        let seq = |s: i32| -> Array {
            let v: Vec<f32> = (0..batch * s * e).map(|i| (i % 97) as f32 * 0.01).collect();
            f32s(&v, &[batch, s, e])
        };
        for fmt in FORMATS {
            let path = tmp(&format!("matmul-shapeless-{batch}-{fmt:?}.mlxfn"));
            let wc = w.clone();
            mlx::export_function(
                &path,
                move |a| Ok(vec![ops::matmul(&a[0], &wc)?]),
                &[seq(traced)],
                &opts(fmt, true),
            )
            .unwrap();
            let f = mlx::import_function(&path).unwrap();
            for s in std::iter::once(traced).chain(others) {
                let x = seq(s);
                let got = &f.call(std::slice::from_ref(&x)).unwrap()[0];
                assert_eq!(got.shape(), &[batch, s, h]);
                // Closed form in f64.
                let (xv, wv) = (x.to_vec::<f32>().unwrap(), w.to_vec::<f32>().unwrap());
                let gv = got.to_vec::<f32>().unwrap();
                for r in 0..(batch * s) as usize {
                    for c in 0..h as usize {
                        let want: f64 = (0..e as usize)
                            .map(|k| xv[r * e as usize + k] as f64 * wv[k * h as usize + c] as f64)
                            .sum();
                        let g = gv[r * h as usize + c] as f64;
                        assert!(
                            (g - want).abs() <= 1e-4 * (1.0 + want.abs()),
                            "{fmt:?} seq {s}: {g} vs {want}"
                        );
                    }
                }
            }
        }
    }
}

#[test]
fn metadata_round_trips_and_defaults_to_empty() {
    let metadata = r#"{"name": "model", "params": 7000000000, "lr": 0.1}"#;
    for fmt in FORMATS {
        let path = tmp(&format!("metadata-{fmt:?}.mlxfn"));
        let x = f32s(&[1.0, -2.0, 3.0], &[3]);
        let abs = |a: &[Array]| Ok(vec![ops::abs(&a[0])?]);
        let with_meta = ExportOptions {
            metadata: metadata.into(),
            ..opts(fmt, false)
        };
        mlx::export_function(&path, abs, std::slice::from_ref(&x), &with_meta).unwrap();
        let f = mlx::import_function(&path).unwrap();
        assert_eq!(f.metadata(), metadata);
        assert_eq!(
            f.call(std::slice::from_ref(&x)).unwrap()[0]
                .to_vec::<f32>()
                .unwrap(),
            vec![1.0, 2.0, 3.0]
        );
        mlx::export_function(&path, abs, std::slice::from_ref(&x), &opts(fmt, false)).unwrap();
        assert_eq!(mlx::import_function(&path).unwrap().metadata(), "");
        // Kept across several traces.
        let mut ex = mlx::exporter(&path, |a: &[Array], _: &Kwargs| abs(a), &with_meta).unwrap();
        ex.export(&[f32s(&[1.0], &[1])], &Kwargs::new()).unwrap();
        ex.export(&[f32s(&[1.0, 2.0], &[2])], &Kwargs::new())
            .unwrap();
        ex.finish().unwrap();
        assert_eq!(mlx::import_function(&path).unwrap().metadata(), metadata);
    }
}

#[test]
fn exporting_the_same_signature_twice_is_an_error() {
    for fmt in FORMATS {
        let path = tmp(&format!("twice-{fmt:?}.mlxfn"));
        let mut ex = mlx::exporter(
            &path,
            |a: &[Array], _: &Kwargs| Ok(vec![ops::abs(&a[0])?]),
            &opts(fmt, false),
        )
        .unwrap();
        ex.export(&[f32s(&[1.0], &[1])], &Kwargs::new()).unwrap();
        let e = ex.export(&[f32s(&[2.0], &[1])], &Kwargs::new());
        assert!(
            e.is_err(),
            "{fmt:?}: second trace with the same signature accepted"
        );
    }
}

#[test]
fn dropping_an_exporter_writes_what_it_traced() {
    // Like leaving MLX's `with mx.exporter(...)` block; with no trace, no file.
    let path = tmp("dropped.mlxfn");
    let _ = std::fs::remove_file(&path);
    let abs = |a: &[Array], _: &Kwargs| Ok(vec![ops::abs(&a[0])?]);
    drop(mlx::exporter(&path, abs, &ExportOptions::default()).unwrap());
    assert!(!path.exists(), "an exporter with no trace wrote a file");
    let mut ex = mlx::exporter(&path, abs, &ExportOptions::default()).unwrap();
    ex.export(&[f32s(&[-1.5], &[1])], &Kwargs::new()).unwrap();
    drop(ex);
    let out = mlx::import_function(&path)
        .unwrap()
        .call(&[f32s(&[-2.0], &[1])])
        .unwrap();
    assert_eq!(out[0].to_vec::<f32>().unwrap(), vec![2.0]);
}
