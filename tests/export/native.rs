//! Export and import in the native format: behaviour users rely on.

use mlx::export::{export_with_callback, ExportEvent};
use mlx::{ops, Array, Dtype, ExportOptions, Format, ImportOptions, Kwargs};
use std::path::PathBuf;

fn tmp(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("mlx-export-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    dir.join(name)
}

fn f32s(v: &[f32], shape: &[i32]) -> Array {
    Array::from_slice(v, shape).unwrap()
}

fn opts() -> ExportOptions {
    ExportOptions::default()
}

#[test]
fn round_trip_with_captured_constant() {
    let w = f32s(&[1.0, 2.0, 3.0], &[3]);
    let path = tmp("affine.mlxfn");
    let wc = w.clone();
    mlx::export_function(
        &path,
        move |a| Ok(vec![ops::add(&ops::multiply(&a[0], &wc)?, &a[0])?]),
        &[f32s(&[0.0; 3], &[3])],
        &opts(),
    )
    .unwrap();
    let f = mlx::import_function(&path).unwrap();
    assert_eq!(f.format(), Format::Native);
    let out = f.call(&[f32s(&[1.0, -1.0, 0.5], &[3])]).unwrap();
    // x * w + x
    assert_eq!(out[0].to_vec::<f32>().unwrap(), vec![2.0, -3.0, 2.0]);
    // The same through a read (not mapped) import.
    let g = mlx::import_function_with(
        &path,
        &ImportOptions {
            mmap: false,
            ..Default::default()
        },
    )
    .unwrap();
    assert_eq!(
        g.call(&[f32s(&[1.0, 1.0, 1.0], &[3])]).unwrap()[0]
            .to_vec::<f32>()
            .unwrap(),
        vec![2.0, 3.0, 4.0]
    );
}

#[test]
fn no_inputs_several_outputs_input_and_constant_outputs() {
    let c = f32s(&[7.0, 8.0], &[2]);
    let path = tmp("noinputs.mlxfn");
    let cc = c.clone();
    mlx::export_function(
        &path,
        move |_| Ok(vec![cc.clone(), ops::add(&cc, &cc)?]),
        &[],
        &opts(),
    )
    .unwrap();
    let out = mlx::import_function(&path).unwrap().call(&[]).unwrap();
    assert_eq!(out.len(), 2);
    assert_eq!(out[0].to_vec::<f32>().unwrap(), vec![7.0, 8.0]);
    assert_eq!(out[1].to_vec::<f32>().unwrap(), vec![14.0, 16.0]);

    let path = tmp("identity.mlxfn");
    mlx::export_function(
        &path,
        |a| Ok(vec![a[0].clone(), a[0].clone()]),
        &[f32s(&[0.0], &[1])],
        &opts(),
    )
    .unwrap();
    let out = mlx::import_function(&path)
        .unwrap()
        .call(&[f32s(&[3.5], &[1])])
        .unwrap();
    assert_eq!(out[1].to_vec::<f32>().unwrap(), vec![3.5]);
}

#[test]
fn keyword_inputs_follow_positional_in_sorted_order() {
    let path = tmp("kwargs.mlxfn");
    let f = |a: &[Array], k: &Kwargs| {
        Ok(vec![ops::subtract(
            &ops::multiply(&a[0], &k["z_scale"])?,
            &k["a_off"],
        )?])
    };
    let mut kw = Kwargs::new();
    kw.insert("z_scale".into(), f32s(&[1.0], &[1]));
    kw.insert("a_off".into(), f32s(&[1.0], &[1]));
    mlx::export_function_kwargs(&path, f, &[f32s(&[0.0, 0.0], &[2])], &kw, &opts()).unwrap();
    let imp = mlx::import_function(&path).unwrap();
    let sig = &imp.signatures()[0];
    assert_eq!(
        sig.keyword
            .iter()
            .map(|(k, _)| k.as_str())
            .collect::<Vec<_>>(),
        vec!["a_off", "z_scale"]
    );
    let mut call = Kwargs::new();
    call.insert("z_scale".into(), f32s(&[3.0], &[1]));
    call.insert("a_off".into(), f32s(&[0.5], &[1]));
    let out = imp.call_kwargs(&[f32s(&[1.0, 2.0], &[2])], &call).unwrap();
    assert_eq!(out[0].to_vec::<f32>().unwrap(), vec![2.5, 5.5]);

    // Stricter than MLX: names must match exactly; missing or extra names fail.
    let mut wrong = call.clone();
    wrong.remove("a_off");
    wrong.insert("b_off".into(), f32s(&[0.5], &[1]));
    let e = imp
        .call_kwargs(&[f32s(&[1.0, 2.0], &[2])], &wrong)
        .unwrap_err()
        .to_string();
    assert!(e.contains("b_off") && e.contains("a_off=float32[1]"), "{e}");
    let e = imp
        .call(&[f32s(&[1.0, 2.0], &[2])])
        .unwrap_err()
        .to_string();
    assert!(e.contains("no exported signature"), "{e}");
}

#[test]
fn mismatched_calls_list_every_signature_and_the_call() {
    let path = tmp("multi.mlxfn");
    let mut ex = mlx::exporter(
        &path,
        |a: &[Array], _: &Kwargs| Ok(vec![ops::add(&a[0], &a[0])?]),
        &ExportOptions {
            metadata: "two traces".into(),
            ..opts()
        },
    )
    .unwrap();
    ex.export(&[f32s(&[0.0; 2], &[2])], &Kwargs::new()).unwrap();
    ex.export(
        &[Array::from_slice(&[0i32; 3], &[3]).unwrap()],
        &Kwargs::new(),
    )
    .unwrap();
    // Same signature twice is an error.
    let e = ex
        .export(&[f32s(&[1.0; 2], &[2])], &Kwargs::new())
        .unwrap_err()
        .to_string();
    assert!(e.contains("already exported"), "{e}");
    ex.finish().unwrap();

    let imp = mlx::import_function(&path).unwrap();
    assert_eq!(imp.metadata(), "two traces");
    assert_eq!(imp.signatures().len(), 2);
    assert_eq!(
        imp.call(&[Array::from_slice(&[1i32, 2, 3], &[3]).unwrap()])
            .unwrap()[0]
            .to_vec::<i32>()
            .unwrap(),
        vec![2, 4, 6]
    );
    for bad in [
        vec![f32s(&[0.0; 3], &[3])],                          // shape
        vec![Array::from_slice(&[0.0f64; 2], &[2]).unwrap()], // dtype
        vec![f32s(&[0.0; 2], &[1, 2])],                       // rank
        vec![f32s(&[0.0; 2], &[2]), f32s(&[0.0; 2], &[2])],   // count
    ] {
        let e = imp.call(&bad).unwrap_err().to_string();
        assert!(
            e.contains("float32[2]") && e.contains("int32[3]"),
            "signatures listed: {e}"
        );
        let call = format!(
            "({})",
            bad.iter()
                .map(|a| format!("{}{:?}", a.dtype(), a.shape()))
                .collect::<Vec<_>>()
                .join(", ")
        );
        assert!(e.contains(&call), "call listed: {e}");
    }
}

#[test]
fn evaluating_inside_a_traced_function_is_an_error() {
    let path = tmp("evals.mlxfn");
    let e = mlx::export_function(
        &path,
        |a| {
            let y = ops::add(&a[0], &a[0])?;
            y.eval()?;
            Ok(vec![y])
        },
        &[f32s(&[0.0], &[1])],
        &opts(),
    )
    .unwrap_err()
    .to_string();
    assert!(e.contains("cannot evaluate"), "{e}");
    assert!(!path.exists());
}

#[test]
fn a_failed_export_leaves_the_previous_file_intact_and_no_temporary() {
    let path = tmp("keep.mlxfn");
    mlx::export_function(
        &path,
        |a| Ok(vec![a[0].clone()]),
        &[f32s(&[0.0], &[1])],
        &opts(),
    )
    .unwrap();
    let before = std::fs::read(&path).unwrap();
    let r = mlx::export_function(
        &path,
        |_| Err(mlx::Error::invalid("user", "boom")),
        &[f32s(&[0.0], &[1])],
        &opts(),
    );
    assert!(r.is_err());
    assert_eq!(std::fs::read(&path).unwrap(), before);
    let leftovers: Vec<_> = std::fs::read_dir(path.parent().unwrap())
        .unwrap()
        .filter_map(|e| e.ok())
        .filter(|e| {
            let name = e.file_name().to_string_lossy().into_owned();
            name.starts_with(".keep.mlxfn") && name.contains(".tmp-")
        })
        .collect();
    assert!(leftovers.is_empty(), "{leftovers:?}");
}

#[test]
fn view_constants_are_written_as_their_values() {
    let w = f32s(&[1.0, 2.0, 3.0, 4.0, 5.0, 6.0], &[2, 3]);
    let wt = ops::transpose(&w, &[]).unwrap();
    wt.eval().unwrap(); // an evaluated, non-contiguous view
    let path = tmp("view.mlxfn");
    let c = wt.clone();
    mlx::export_function(
        &path,
        move |a| Ok(vec![ops::add(&a[0], &c)?]),
        &[f32s(&[0.0; 6], &[3, 2])],
        &opts(),
    )
    .unwrap();
    let out = mlx::import_function(&path)
        .unwrap()
        .call(&[f32s(&[0.0; 6], &[3, 2])])
        .unwrap();
    assert_eq!(
        out[0].to_vec::<f32>().unwrap(),
        vec![1.0, 4.0, 2.0, 5.0, 3.0, 6.0]
    );
}

#[test]
fn constants_shared_by_traces_are_stored_once() {
    let w = f32s(&vec![0.5; 1024], &[1024]);
    let one = tmp("one_trace.mlxfn");
    let two = tmp("two_traces.mlxfn");
    let wc = w.clone();
    let f = move |a: &[Array], _: &Kwargs| Ok(vec![ops::multiply(&ops::add(&a[0], &a[0])?, &wc)?]);
    let mut ex = mlx::exporter(&one, f.clone(), &opts()).unwrap();
    ex.export(&[f32s(&[0.0], &[1])], &Kwargs::new()).unwrap();
    ex.finish().unwrap();
    let mut ex = mlx::exporter(&two, f, &opts()).unwrap();
    ex.export(&[f32s(&[0.0], &[1])], &Kwargs::new()).unwrap();
    ex.export(&[f32s(&[0.0; 2], &[2, 1])], &Kwargs::new())
        .unwrap();
    ex.finish().unwrap();
    let (s1, s2) = (
        std::fs::metadata(&one).unwrap().len(),
        std::fs::metadata(&two).unwrap().len(),
    );
    assert!(
        s2 < s1 + 1024,
        "second trace re-stored the 4 KiB constant: {s1} -> {s2}"
    );
    let out = mlx::import_function(&two)
        .unwrap()
        .call(&[f32s(&[2.0, 4.0], &[2, 1])])
        .unwrap();
    assert_eq!(out[0].shape(), &[2, 1024]);
    assert_eq!(out[0].to_vec::<f32>().unwrap()[1024], 4.0);
}

#[test]
fn callback_reports_inputs_constants_primitives_outputs() {
    let c = Array::scalar(2.0f32);
    let mut events = Vec::new();
    let cc = c.clone();
    export_with_callback(
        |e| events.push(e),
        move |a: &[Array], _: &Kwargs| Ok(vec![ops::multiply(&a[0], &cc)?]),
        &[f32s(&[0.0; 3], &[3])],
        &Kwargs::new(),
        &opts(),
    )
    .unwrap();
    let names: Vec<String> = events
        .iter()
        .filter_map(|e| {
            if let ExportEvent::Primitive { name, .. } = e {
                Some(name.clone())
            } else {
                None
            }
        })
        .collect();
    assert_eq!(names, vec!["Broadcast", "Multiply"]);
    assert!(matches!(&events[0], ExportEvent::Inputs(v) if v.len() == 1 && v[0].shape == vec![3]));
    assert!(events.iter().any(|e| matches!(e, ExportEvent::Constant { spec, .. } if spec.dtype == Dtype::Float32 && spec.shape.is_empty())));
    assert!(matches!(events.last().unwrap(), ExportEvent::Outputs(v) if v[0].shape == vec![3]));
    let bcast = events.iter().find_map(|e| match e {
        ExportEvent::Primitive { name, state, .. } if name == "Broadcast" => Some(state.clone()),
        _ => None,
    });
    assert_eq!(bcast.unwrap()[0].0, "shape");
}

#[test]
fn dot_output_names_primitives() {
    let x = f32s(&[1.0], &[1]);
    let y = ops::add(&ops::multiply(&x, &x).unwrap(), &x).unwrap();
    let mut out = Vec::new();
    mlx::export_to_dot(&mut out, &[y]).unwrap();
    let s = String::from_utf8(out).unwrap();
    assert!(
        s.starts_with("digraph") && s.contains("Multiply") && s.contains("Add"),
        "{s}"
    );
}

#[test]
fn non_first_outputs_of_multi_output_primitives_are_returned() {
    // split's last part, divmod's remainder, and split's first part after
    // them: each names an output index other than 0 of a shared node.
    let x: Vec<f32> = (0..12).map(|i| i as f32 - 3.5).collect();
    let y: Vec<f32> = (0..12).map(|i| 1.0 + (i % 4) as f32).collect();
    for format in [Format::Native, Format::Mlx] {
        let path = tmp(&format!("siblings-{format:?}.mlxfn"));
        mlx::export_function(
            &path,
            |a| {
                let parts = ops::split(&a[0], 3, 0)?;
                let (_, rem) = ops::divmod(&a[0], &a[1])?;
                Ok(vec![parts[2].clone(), rem, parts[0].clone()])
            },
            &[f32s(&[0.0; 12], &[12]), f32s(&[1.0; 12], &[12])],
            &ExportOptions {
                format,
                ..Default::default()
            },
        )
        .unwrap();
        let out = mlx::import_function(&path)
            .unwrap()
            .call(&[f32s(&x, &[12]), f32s(&y, &[12])])
            .unwrap();
        assert_eq!(out.len(), 3);
        assert_eq!(
            out[0].to_vec::<f32>().unwrap(),
            x[8..].to_vec(),
            "{format:?}"
        );
        assert_eq!(
            out[2].to_vec::<f32>().unwrap(),
            x[..4].to_vec(),
            "{format:?}"
        );
        // Python's remainder: the sign of the divisor, x - y * floor(x / y).
        let rem: Vec<f32> = x
            .iter()
            .zip(&y)
            .map(|(a, b)| a - b * (a / b).floor())
            .collect();
        assert_eq!(out[1].to_vec::<f32>().unwrap(), rem, "{format:?}");
    }
}

#[test]
fn files_already_in_memory_import_in_both_formats() {
    // Native: the bytes of a file written here.
    let path = tmp("from-bytes.mlxfn");
    let w = f32s(&[1.0, 2.0, 3.0], &[3]);
    mlx::export_function(
        &path,
        move |a| Ok(vec![ops::multiply(&a[0], &w)?]),
        &[f32s(&[0.0; 3], &[3])],
        &opts(),
    )
    .unwrap();
    let bytes = std::fs::read(&path).unwrap();
    let f =
        mlx::import_function_from_bytes(bytes.clone(), "mem", &ImportOptions::default()).unwrap();
    assert_eq!(f.format(), Format::Native);
    let out = f.call(&[f32s(&[2.0, 2.0, 2.0], &[3])]).unwrap();
    assert_eq!(out[0].to_vec::<f32>().unwrap(), vec![2.0, 4.0, 6.0]);
    // Every constant is checked at import: damage is reported with the name given.
    let mut bad = bytes;
    let w_bytes: Vec<u8> = [1.0f32, 2.0, 3.0]
        .iter()
        .flat_map(|v| v.to_le_bytes())
        .collect();
    let at = bad
        .windows(12)
        .rposition(|b| b == w_bytes)
        .expect("the constant's bytes");
    bad[at + 5] ^= 0x10;
    let e = mlx::import_function_from_bytes(bad, "in-memory model", &ImportOptions::default())
        .err()
        .expect("damaged constant")
        .to_string();
    assert!(
        e.contains("in-memory model") && e.contains("constant 0"),
        "{e}"
    );
    // MLX: a fixture written by Python MLX.
    let mlx_file = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/tests/fixtures/mlx/scalar_add/fn.mlxfn"
    );
    let f = mlx::import_function_from_bytes(
        std::fs::read(mlx_file).unwrap(),
        "mlx",
        &ImportOptions::default(),
    )
    .unwrap();
    assert_eq!(f.format(), Format::Mlx);
    let out = f
        .call(&[Array::scalar(1.5f32), Array::scalar(2.25f32)])
        .unwrap();
    assert_eq!(out[0].to_vec::<f32>().unwrap(), vec![3.75]);
}
