//! The public API contract of `shared/DESIGN.md`, written out as DESIGN writes
//! it: every item is bound to an explicitly typed fn pointer, closure or
//! pattern, so a changed name, argument order or type is a compile error in
//! our own suite. Each item is also called, and its result checked against
//! values worked out by hand.
//!
//! One departure DESIGN's text forces: `ExportOptions` grew a fourth field
//! (`decompose_fast`) after the contract was written, so a struct literal with
//! only the three contract fields needs `..Default::default()`; the three
//! fields are still named and typed here.

// The fn-pointer types spell the contract out in full, on purpose.
#![allow(clippy::type_complexity)]

use mlx::export::{
    export_function, export_function_kwargs, export_to_dot, export_with_callback, exporter,
    import_function, import_function_with, ExportEvent, ExportOptions, Format, FunctionExporter,
    ImportOptions, ImportedFunction, Signature,
};
use mlx::io::{load_npy, load_safetensors, save_npy, save_safetensors};
use mlx::transforms::{compile, grad, jvp, value_and_grad, vjp};
use mlx::{ops, Array, Dtype, Error, Kwargs, Result};
use std::collections::BTreeMap;
use std::path::PathBuf;

type Unary = fn(&Array) -> Result<Array>;
type Binary = fn(&Array, &Array) -> Result<Array>;
type Reduction = fn(&Array, &[i32], bool) -> Result<Array>;
type WithAxes = fn(&Array, &[i32]) -> Result<Array>;
type WithDtype = fn(&Array, Dtype) -> Result<Array>;
type Outputs = Result<Vec<Array>>;

fn tmp(name: &str) -> PathBuf {
    let dir = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("api_contract");
    std::fs::create_dir_all(&dir).unwrap();
    dir.join(name)
}

fn f32s(v: &[f32], shape: &[i32]) -> Array {
    Array::from_slice(v, shape).unwrap()
}

fn close(got: &[f32], want: &[f32]) {
    assert_eq!(got.len(), want.len(), "got {got:?}, want {want:?}");
    for (g, w) in got.iter().zip(want) {
        assert!(
            (g - w).abs() <= 1e-5 * (1.0 + w.abs()),
            "got {got:?}, want {want:?}"
        );
    }
}

#[test]
fn crate_root_names_and_result_alias() {
    // `Result<T> = std::result::Result<T, Error>`.
    let ok: std::result::Result<u8, Error> = Result::<u8>::Ok(1);
    assert!(matches!(ok, Ok(1)));
    let e: Error = ops::reshape(&f32s(&[1.0, 2.0], &[2]), &[3]).unwrap_err();
    assert!(!e.to_string().is_empty());
    // `Kwargs = BTreeMap<String, Array>`.
    let mut kw: std::collections::BTreeMap<String, Array> = Kwargs::new();
    kw.insert("x".to_string(), Array::scalar(1.0f32));
    let _: &Kwargs = &kw;
    let d: Dtype = Dtype::Float32;
    assert_eq!(d, Dtype::Float32);
}

#[test]
fn array_items() {
    let from_slice: fn(&[f32], &[i32]) -> Result<Array> = Array::from_slice::<f32>;
    let scalar: fn(i32) -> Array = Array::scalar::<i32>;
    let a = from_slice(&[1.0, 2.0, 3.0, 4.0, 5.0, 6.0], &[2, 3]).unwrap();
    let shape: &[i32] = a.shape();
    assert_eq!(shape, &[2, 3]);
    let dtype: Dtype = a.dtype();
    assert_eq!(dtype, Dtype::Float32);
    let ndim: usize = a.ndim();
    let size: usize = a.size();
    assert_eq!((ndim, size), (2, 6));
    let evaluated: Result<()> = a.eval();
    evaluated.unwrap();
    let v: Result<Vec<f32>> = a.to_vec::<f32>();
    assert_eq!(v.unwrap(), vec![1.0, 2.0, 3.0, 4.0, 5.0, 6.0]);
    // `to_vec` errs when T is not the array's dtype.
    assert!(a.to_vec::<i32>().is_err());
    let s = scalar(7);
    let item: Result<i32> = s.item::<i32>();
    assert_eq!(item.unwrap(), 7);
    let eval: fn(&[Array]) -> Result<()> = mlx::eval;
    let b = ops::add(&a, &a).unwrap();
    eval(&[b.clone(), s]).unwrap();
    assert_eq!(
        b.to_vec::<f32>().unwrap(),
        vec![2.0, 4.0, 6.0, 8.0, 10.0, 12.0]
    );
}

#[test]
fn binary_and_unary_ops() {
    let x = f32s(&[1.0, 4.0], &[2]);
    let y = f32s(&[2.0, 0.5], &[2]);
    let binaries: [(Binary, [f32; 2]); 7] = [
        (ops::add, [3.0, 4.5]),
        (ops::subtract, [-1.0, 3.5]),
        (ops::multiply, [2.0, 2.0]),
        (ops::divide, [0.5, 8.0]),
        (ops::maximum, [2.0, 4.0]),
        (ops::minimum, [1.0, 0.5]),
        (ops::power, [1.0, 2.0]),
    ];
    for (f, want) in binaries {
        close(&f(&x, &y).unwrap().to_vec::<f32>().unwrap(), &want);
    }
    let matmul: Binary = ops::matmul;
    let m = matmul(
        &f32s(&[1.0, 2.0, 3.0, 4.0], &[2, 2]),
        &f32s(&[1.0, 1.0], &[2, 1]),
    )
    .unwrap();
    assert_eq!(m.shape(), &[2, 1]);
    close(&m.to_vec::<f32>().unwrap(), &[3.0, 7.0]);

    let u = f32s(&[0.0, 1.0], &[2]);
    let e = std::f32::consts::E;
    let unaries: [(Unary, [f32; 2]); 8] = [
        (ops::exp, [1.0, e]),
        (ops::sin, [0.0, 1f32.sin()]),
        (ops::cos, [1.0, 1f32.cos()]),
        (ops::sqrt, [0.0, 1.0]),
        (ops::tanh, [0.0, 1f32.tanh()]),
        (ops::sigmoid, [0.5, 1.0 / (1.0 + (-1f32).exp())]),
        (ops::abs, [0.0, 1.0]),
        (ops::log, [f32::NEG_INFINITY, 0.0]),
    ];
    for (f, want) in unaries {
        let got = f(&u).unwrap().to_vec::<f32>().unwrap();
        assert!(
            got.iter()
                .zip(&want)
                .all(|(g, w)| g == w || (g - w).abs() <= 1e-6),
            "got {got:?}, want {want:?}"
        );
    }
    let abs: Unary = ops::abs;
    assert_eq!(
        abs(&f32s(&[-2.0, 3.0], &[2]))
            .unwrap()
            .to_vec::<f32>()
            .unwrap(),
        vec![2.0, 3.0]
    );
}

#[test]
fn reductions_take_axes_and_keepdims() {
    let a = f32s(&[1.0, 5.0, 3.0, 4.0, 2.0, 6.0], &[2, 3]);
    let reductions: [(Reduction, [f32; 2]); 4] = [
        (ops::sum, [9.0, 12.0]),
        (ops::mean, [3.0, 4.0]),
        (ops::max, [5.0, 6.0]),
        (ops::min, [1.0, 2.0]),
    ];
    for (f, want) in reductions {
        let kept = f(&a, &[1], true).unwrap();
        assert_eq!(kept.shape(), &[2, 1]);
        close(&kept.to_vec::<f32>().unwrap(), &want);
        assert_eq!(f(&a, &[-1], false).unwrap().shape(), &[2]);
    }
    let argmax: fn(&Array, Option<i32>, bool) -> Result<Array> = ops::argmax;
    assert_eq!(
        argmax(&a, Some(1), false).unwrap().to_vec::<u32>().unwrap(),
        vec![1, 2]
    );

    // softmax takes (a, axes): [ln 1, ln 3] -> [1/4, 3/4].
    let softmax: WithAxes = ops::softmax;
    let s = softmax(&f32s(&[0.0, 3f32.ln()], &[1, 2]), &[-1]).unwrap();
    close(&s.to_vec::<f32>().unwrap(), &[0.25, 0.75]);
    // The precise variant sits beside it with the same arguments.
    let precise: WithAxes = ops::softmax_precise;
    let p = precise(&f32s(&[0.0, 3f32.ln()], &[1, 2]), &[-1]).unwrap();
    close(&p.to_vec::<f32>().unwrap(), &[0.25, 0.75]);
}

#[test]
fn shape_ops() {
    let a = f32s(&[0.0, 1.0, 2.0, 3.0, 4.0, 5.0], &[2, 3]);
    let reshape: WithAxes = ops::reshape;
    assert_eq!(reshape(&a, &[3, 2]).unwrap().shape(), &[3, 2]);
    let transpose: WithAxes = ops::transpose;
    let t = transpose(&a, &[1, 0]).unwrap();
    assert_eq!(
        t.to_vec::<f32>().unwrap(),
        vec![0.0, 3.0, 1.0, 4.0, 2.0, 5.0]
    );
    let broadcast_to: WithAxes = ops::broadcast_to;
    let b = broadcast_to(&f32s(&[1.0, 2.0], &[2, 1]), &[2, 2]).unwrap();
    assert_eq!(b.to_vec::<f32>().unwrap(), vec![1.0, 1.0, 2.0, 2.0]);
    let expand_dims: WithAxes = ops::expand_dims;
    let e = expand_dims(&a, &[0]).unwrap();
    assert_eq!(e.shape(), &[1, 2, 3]);
    let squeeze: WithAxes = ops::squeeze;
    assert_eq!(squeeze(&e, &[0]).unwrap().shape(), &[2, 3]);
    let concatenate: fn(&[Array], i32) -> Result<Array> = ops::concatenate;
    let c = concatenate(&[a.clone(), a.clone()], 0).unwrap();
    assert_eq!(c.shape(), &[4, 3]);
    let split: fn(&Array, i32, i32) -> Result<Vec<Array>> = ops::split;
    let parts = split(&a, 3, 1).unwrap();
    assert_eq!(parts.len(), 3);
    assert_eq!(parts[2].to_vec::<f32>().unwrap(), vec![2.0, 5.0]);
    let slice: fn(&Array, &[i32], &[i32], &[i32]) -> Result<Array> = ops::slice;
    let s = slice(&a, &[0, 1], &[2, 3], &[1, 1]).unwrap();
    assert_eq!(s.to_vec::<f32>().unwrap(), vec![1.0, 2.0, 4.0, 5.0]);
}

#[test]
fn dtype_ops_and_creation() {
    let a = f32s(&[1.5, -2.0], &[2]);
    let astype: WithDtype = ops::astype;
    assert_eq!(
        astype(&a, Dtype::Int32).unwrap().to_vec::<i32>().unwrap(),
        vec![1, -2]
    );
    let view: WithDtype = ops::view;
    // 1.5f32 = 0x3FC00000.
    assert_eq!(
        view(&a, Dtype::Uint32).unwrap().to_vec::<u32>().unwrap()[0],
        0x3FC0_0000
    );
    let where_: fn(&Array, &Array, &Array) -> Result<Array> = ops::where_;
    let cond = Array::from_slice(&[true, false], &[2]).unwrap();
    let w = where_(&cond, &a, &f32s(&[9.0, 9.0], &[2])).unwrap();
    assert_eq!(w.to_vec::<f32>().unwrap(), vec![1.5, 9.0]);
    let arange: fn(f64, f64, f64, Dtype) -> Result<Array> = ops::arange;
    assert_eq!(
        arange(0.0, 6.0, 2.0, Dtype::Int32)
            .unwrap()
            .to_vec::<i32>()
            .unwrap(),
        vec![0, 2, 4]
    );
    let zeros: fn(&[i32], Dtype) -> Result<Array> = ops::zeros;
    let ones: fn(&[i32], Dtype) -> Result<Array> = ops::ones;
    assert_eq!(
        zeros(&[2], Dtype::Float32)
            .unwrap()
            .to_vec::<f32>()
            .unwrap(),
        vec![0.0; 2]
    );
    assert_eq!(
        ones(&[1, 2], Dtype::Int32)
            .unwrap()
            .to_vec::<i32>()
            .unwrap(),
        vec![1; 2]
    );
    let full: fn(&[i32], &Array, Option<Dtype>) -> Result<Array> = ops::full;
    let f = full(&[3], &Array::scalar(2.5f32), None).unwrap();
    assert_eq!(f.to_vec::<f32>().unwrap(), vec![2.5; 3]);
}

/// `f(x, y) = [x * y + x]`, the function the export tests trace.
fn fma(a: &[Array]) -> Outputs {
    Ok(vec![ops::add(&ops::multiply(&a[0], &a[1])?, &a[0])?])
}

fn contract_options(format: Format) -> ExportOptions {
    let opts = ExportOptions {
        shapeless: false,
        metadata: String::from("contract"),
        format,
        ..Default::default()
    };
    let ExportOptions {
        shapeless,
        metadata,
        format: f,
        ..
    } = &opts;
    let (_, _, _): (&bool, &String, &Format) = (shapeless, metadata, f);
    opts
}

#[test]
fn export_options_and_format() {
    let d: ExportOptions = ExportOptions::default();
    assert!(!d.shapeless);
    assert!(d.metadata.is_empty());
    let f: Format = Format::default();
    assert_eq!(f, Format::Native);
    for f in [Format::Native, Format::Mlx] {
        let name = match f {
            Format::Native => "native",
            Format::Mlx => "mlx",
        };
        let copied: Format = f;
        assert_eq!(copied, f, "{name}: Copy + PartialEq");
        let opts = contract_options(f).clone();
        assert!(!format!("{opts:?}").is_empty());
    }
}

#[test]
fn export_function_and_import_in_both_formats() {
    let x = f32s(&[1.0, 2.0], &[2]);
    let y = f32s(&[3.0, 4.0], &[2]);
    for format in [Format::Native, Format::Mlx] {
        let path = tmp(&format!("fma_{format:?}.bin"));
        let export: fn(&PathBuf, fn(&[Array]) -> Outputs, &[Array], &ExportOptions) -> Result<()> =
            |p, f, a, o| export_function(p, f, a, o);
        export(
            &path,
            fma,
            &[x.clone(), y.clone()],
            &contract_options(format),
        )
        .unwrap();

        let import: fn(&PathBuf) -> Result<ImportedFunction> = |p| import_function(p);
        let imported = import(&path).unwrap();
        let call: fn(&ImportedFunction, &[Array]) -> Outputs = ImportedFunction::call;
        let out = call(&imported, &[x.clone(), y.clone()]).unwrap();
        // x * y + x = [4, 10].
        assert_eq!(out[0].to_vec::<f32>().unwrap(), vec![4.0, 10.0]);
        let metadata: fn(&ImportedFunction) -> &str = ImportedFunction::metadata;
        assert_eq!(metadata(&imported), "contract");
        let signatures: fn(&ImportedFunction) -> &[Signature] = ImportedFunction::signatures;
        assert_eq!(signatures(&imported).len(), 1);
        let fmt: fn(&ImportedFunction) -> Format = ImportedFunction::format;
        assert_eq!(fmt(&imported), format);
        // A call matching no signature is an error naming the signatures.
        assert!(imported.call(std::slice::from_ref(&x)).is_err());

        let with: fn(&PathBuf, &ImportOptions) -> Result<ImportedFunction> =
            |p, o| import_function_with(p, o);
        let copied = with(
            &path,
            &ImportOptions {
                mmap: false,
                ..Default::default()
            },
        )
        .unwrap();
        let out = copied.call(&[x.clone(), y.clone()]).unwrap();
        assert_eq!(out[0].to_vec::<f32>().unwrap(), vec![4.0, 10.0]);
    }
}

/// `g(x; scale) = [x * scale]`.
fn scaled(a: &[Array], kw: &Kwargs) -> Outputs {
    Ok(vec![ops::multiply(&a[0], &kw["scale"])?])
}

#[test]
fn kwargs_exporter_and_callback() {
    let x = f32s(&[1.0, 2.0], &[2]);
    let mut kw = Kwargs::new();
    kw.insert("scale".into(), Array::scalar(3.0f32));
    let opts = contract_options(Format::Native);

    let path = tmp("kwargs.bin");
    let export_kw: fn(
        &PathBuf,
        fn(&[Array], &Kwargs) -> Outputs,
        &[Array],
        &Kwargs,
        &ExportOptions,
    ) -> Result<()> = |p, g, a, k, o| export_function_kwargs(p, g, a, k, o);
    export_kw(&path, scaled, std::slice::from_ref(&x), &kw, &opts).unwrap();
    let f = import_function(&path).unwrap();
    let call_kwargs: fn(&ImportedFunction, &[Array], &Kwargs) -> Outputs =
        ImportedFunction::call_kwargs;
    let out = call_kwargs(&f, std::slice::from_ref(&x), &kw).unwrap();
    assert_eq!(out[0].to_vec::<f32>().unwrap(), vec![3.0, 6.0]);

    // Two traces (two shapes) in one file.
    let path = tmp("exporter.bin");
    let mut ex: FunctionExporter<fn(&[Array], &Kwargs) -> Outputs> =
        exporter(&path, scaled as fn(&[Array], &Kwargs) -> Outputs, &opts).unwrap();
    let export: fn(
        &mut FunctionExporter<fn(&[Array], &Kwargs) -> Outputs>,
        &[Array],
        &Kwargs,
    ) -> Result<()> = FunctionExporter::export;
    export(&mut ex, std::slice::from_ref(&x), &kw).unwrap();
    export(&mut ex, &[f32s(&[1.0, 2.0, 3.0], &[3])], &kw).unwrap();
    let finish: fn(FunctionExporter<fn(&[Array], &Kwargs) -> Outputs>) -> Result<()> =
        FunctionExporter::finish;
    finish(ex).unwrap();
    let f = import_function(&path).unwrap();
    assert_eq!(f.signatures().len(), 2);
    let out = f.call_kwargs(&[f32s(&[1.0, 2.0, 3.0], &[3])], &kw).unwrap();
    assert_eq!(out[0].to_vec::<f32>().unwrap(), vec![3.0, 6.0, 9.0]);

    // The callback sees the scale broadcast to x's shape, then the Multiply
    // (MLX's trace of `x * scale` records the same two primitives).
    let mut names = Vec::new();
    let cb = |e: ExportEvent| {
        if let ExportEvent::Primitive { name, .. } = e {
            names.push(name);
        }
    };
    let r: Result<()> = export_with_callback(cb, scaled, std::slice::from_ref(&x), &kw, &opts);
    r.unwrap();
    assert_eq!(names, vec!["Broadcast".to_string(), "Multiply".to_string()]);

    let mut dot: Vec<u8> = Vec::new();
    let y = ops::exp(&x).unwrap();
    let r: Result<()> = export_to_dot(&mut dot, &[y]);
    r.unwrap();
    let text = String::from_utf8(dot).unwrap();
    assert!(text.contains("digraph") && text.contains("Exp"), "{text}");
}

fn square_sum(a: &[Array]) -> Outputs {
    Ok(vec![ops::sum(&ops::multiply(&a[0], &a[0])?, &[], false)?])
}

#[test]
fn transforms() {
    let x = f32s(&[1.0, -2.0, 3.0], &[3]);
    let compiled = compile(fma);
    let c: &dyn Fn(&[Array]) -> Outputs = &compiled;
    let out = c(&[x.clone(), x.clone()]).unwrap();
    // x * x + x.
    assert_eq!(out[0].to_vec::<f32>().unwrap(), vec![2.0, 2.0, 12.0]);

    // d/dx sum(x^2) = 2x.
    let vjp_: fn(fn(&[Array]) -> Outputs, &[Array], &[Array]) -> Result<(Vec<Array>, Vec<Array>)> =
        |f, p, c| vjp(f, p, c);
    let (vals, cots) = vjp_(
        square_sum,
        std::slice::from_ref(&x),
        &[Array::scalar(1.0f32)],
    )
    .unwrap();
    assert_eq!(vals[0].item::<f32>().unwrap(), 14.0);
    assert_eq!(cots[0].to_vec::<f32>().unwrap(), vec![2.0, -4.0, 6.0]);

    let jvp_: fn(fn(&[Array]) -> Outputs, &[Array], &[Array]) -> Result<(Vec<Array>, Vec<Array>)> =
        |f, p, t| jvp(f, p, t);
    let (vals, tans) = jvp_(
        square_sum,
        std::slice::from_ref(&x),
        &[f32s(&[1.0, 0.0, 1.0], &[3])],
    )
    .unwrap();
    assert_eq!(vals[0].item::<f32>().unwrap(), 14.0);
    // <2x, t> = 2 + 6.
    assert_eq!(tans[0].item::<f32>().unwrap(), 8.0);

    let g = grad(square_sum, &[0]);
    let g: &dyn Fn(&[Array]) -> Outputs = &g;
    assert_eq!(
        g(std::slice::from_ref(&x)).unwrap()[0]
            .to_vec::<f32>()
            .unwrap(),
        vec![2.0, -4.0, 6.0]
    );
    let vg = value_and_grad(square_sum, &[0]);
    let vg: &dyn Fn(&[Array]) -> Result<(Vec<Array>, Vec<Array>)> = &vg;
    let (v, gr) = vg(&[x]).unwrap();
    assert_eq!(v[0].item::<f32>().unwrap(), 14.0);
    assert_eq!(gr[0].to_vec::<f32>().unwrap(), vec![2.0, -4.0, 6.0]);
}

#[test]
fn io() {
    let a = f32s(&[1.0, 2.0, 3.0, 4.0], &[2, 2]);
    let path = tmp("a.npy");
    let save: fn(&PathBuf, &Array) -> Result<()> = |p, a| save_npy(p, a);
    save(&path, &a).unwrap();
    let load: fn(&PathBuf) -> Result<Array> = |p| load_npy(p);
    let b = load(&path).unwrap();
    assert_eq!(b.shape(), &[2, 2]);
    assert_eq!(b.to_vec::<f32>().unwrap(), vec![1.0, 2.0, 3.0, 4.0]);

    let mut map: BTreeMap<String, Array> = BTreeMap::new();
    map.insert("w".into(), a);
    map.insert("b".into(), Array::from_slice(&[7i32], &[1]).unwrap());
    let path = tmp("m.safetensors");
    let save: fn(&PathBuf, &BTreeMap<String, Array>) -> Result<()> = |p, m| save_safetensors(p, m);
    save(&path, &map).unwrap();
    let load: fn(&PathBuf) -> Result<BTreeMap<String, Array>> = |p| load_safetensors(p);
    let back = load(&path).unwrap();
    assert_eq!(back.keys().collect::<Vec<_>>(), vec!["b", "w"]);
    assert_eq!(back["b"].to_vec::<i32>().unwrap(), vec![7]);
    assert_eq!(back["w"].to_vec::<f32>().unwrap(), vec![1.0, 2.0, 3.0, 4.0]);
}
