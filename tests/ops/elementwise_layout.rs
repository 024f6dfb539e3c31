//! Element-wise ops on non-contiguous inputs (transposed, broadcast, sliced
//! via Data strides), broadcasting checked by proptest against a naive
//! scalar loop, the graphs the ops build, and error messages.

use mlx::primitive::Spec;
use mlx::{ops, Array, Buffer, Data, Dtype};
use proptest::prelude::*;
use std::sync::Arc;

/// A strided view over `values` (element strides and offset).
fn strided(values: &[f32], shape: &[i32], strides: &[isize], offset: usize) -> Array {
    Array::from_data(
        Data {
            buffer: Arc::new(Buffer::from_slice(values)),
            strides: strides.to_vec(),
            offset,
        },
        Spec::new(shape, Dtype::Float32),
    )
}

/// The elements of a strided view, read one by one.
fn gather(values: &[f32], shape: &[i32], strides: &[isize], offset: usize) -> Vec<f32> {
    let n: i32 = shape.iter().product();
    (0..n)
        .map(|mut k| {
            let mut off = offset as isize;
            for (d, s) in shape.iter().zip(strides).rev() {
                off += (k % d) as isize * s;
                k /= d;
            }
            values[off as usize]
        })
        .collect()
}

fn bits(v: &[f32]) -> Vec<u32> {
    v.iter().map(|x| x.to_bits()).collect()
}

#[test]
fn unary_and_binary_ops_read_strided_inputs() {
    let values: Vec<f32> = (0..60).map(|i| (i as f32 - 29.5) * 0.37).collect();
    // (shape, strides, offset): transposed, sliced with a step, broadcast rows.
    let layouts: [(&[i32], &[isize], usize); 4] = [
        (&[4, 3], &[1, 4], 0),
        (&[3, 5], &[20, 2], 1),
        (&[4, 6], &[0, 1], 7),
        (&[2, 3, 2], &[1, 2, 12], 3),
    ];
    for (shape, strides, offset) in layouts {
        let a = strided(&values, shape, strides, offset);
        let dense = gather(&values, shape, strides, offset);
        let c = Array::from_slice(&dense, shape).unwrap();
        for (name, f) in [
            ("exp", ops::exp as fn(&Array) -> mlx::Result<Array>),
            ("sin", ops::sin),
            ("negative", ops::negative),
            ("sigmoid", ops::sigmoid),
            ("floor", ops::floor),
        ] {
            let got = f(&a).unwrap().to_vec::<f32>().unwrap();
            let want = f(&c).unwrap().to_vec::<f32>().unwrap();
            assert_eq!(bits(&got), bits(&want), "{name} on strides {strides:?}");
        }
        // Binary: strided with strided, and strided with a transposed dense array.
        let t = ops::transpose(&ops::transpose(&c, &[]).unwrap(), &[]).unwrap();
        for (name, f) in [
            ("add", ops::add as fn(&Array, &Array) -> mlx::Result<Array>),
            ("multiply", ops::multiply),
            ("remainder", ops::remainder),
            ("maximum", ops::maximum),
        ] {
            let got = f(&a, &t).unwrap().to_vec::<f32>().unwrap();
            let want = f(&c, &c).unwrap().to_vec::<f32>().unwrap();
            assert_eq!(bits(&got), bits(&want), "{name} on strides {strides:?}");
            let got = f(&a, &a).unwrap().to_vec::<f32>().unwrap();
            assert_eq!(
                bits(&got),
                bits(&want),
                "{name}(a, a) on strides {strides:?}"
            );
        }
        let cond = ops::greater(&a, &Array::scalar(0.0f32)).unwrap();
        let got = ops::where_(&cond, &a, &ops::negative(&a).unwrap())
            .unwrap()
            .to_vec::<f32>()
            .unwrap();
        let want: Vec<f32> = dense.iter().map(|x| x.abs()).collect();
        assert_eq!(got, want, "where_ on strides {strides:?}");
    }
}

/// Row-major index of `out_idx` in an array of `shape` broadcast to `out`.
fn source_index(out_idx: &[i32], shape: &[i32], out: &[i32]) -> usize {
    let lead = out.len() - shape.len();
    let mut k = 0usize;
    for (i, &d) in shape.iter().enumerate() {
        let j = if d == 1 { 0 } else { out_idx[lead + i] };
        k = k * d as usize + j as usize;
    }
    k
}

fn naive(
    a: &[i32],
    sa: &[i32],
    b: &[i32],
    sb: &[i32],
    out: &[i32],
    f: impl Fn(i32, i32) -> i32,
) -> Vec<i32> {
    let n: i32 = out.iter().product();
    (0..n)
        .map(|mut k| {
            let mut idx = vec![0; out.len()];
            for ax in (0..out.len()).rev() {
                idx[ax] = k % out[ax];
                k /= out[ax];
            }
            f(
                a[source_index(&idx, sa, out)],
                b[source_index(&idx, sb, out)],
            )
        })
        .collect()
}

type BinaryOp = fn(&Array, &Array) -> mlx::Result<Array>;
type Scalar<'a> = Box<dyn Fn(i32, i32) -> i32 + 'a>;

/// A shape and a shape broadcast-compatible with it (some dims 1, maybe fewer dims).
fn shapes() -> impl Strategy<Value = (Vec<i32>, Vec<i32>)> {
    prop::collection::vec(1i32..5, 0..4).prop_flat_map(|s| {
        let n = s.len();
        (Just(s), prop::collection::vec(any::<bool>(), n), 0..=n).prop_map(|(s, ones, drop)| {
            let b: Vec<i32> = s
                .iter()
                .zip(&ones)
                .map(|(&d, &one)| if one { 1 } else { d })
                .collect();
            (s, b[drop..].to_vec())
        })
    })
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(48))]
    #[test]
    fn broadcasting_matches_a_scalar_loop((sa, sb) in shapes(), seed in 0i32..1000, swap in any::<bool>()) {
        let (sa, sb) = if swap { (sb, sa) } else { (sa, sb) };
        let na: i32 = sa.iter().product();
        let nb: i32 = sb.iter().product();
        let va: Vec<i32> = (0..na).map(|i| (i * 7 + seed) % 23 - 11).collect();
        let vb: Vec<i32> = (0..nb).map(|i| (i * 5 + seed) % 13 - 6).collect();
        let a = Array::from_slice(&va, &sa).unwrap();
        let b = Array::from_slice(&vb, &sb).unwrap();
        let out = mlx::shape::broadcast_shapes("test", &sa, &sb).unwrap();
        let floor_div = |x: i32, y: i32| if y == 0 { 0 } else { x.div_euclid(y) - if y < 0 && x.rem_euclid(y) != 0 { 1 } else { 0 } };
        let py_rem = |x: i32, y: i32| if y == 0 { x } else { x - y * floor_div(x, y) };
        let cases: [(BinaryOp, Scalar); 6] = [
            (ops::add, Box::new(|x, y| x + y)),
            (ops::multiply, Box::new(|x, y| x * y)),
            (ops::minimum, Box::new(|x, y| x.min(y))),
            (ops::floor_divide, Box::new(floor_div)),
            (ops::remainder, Box::new(py_rem)),
            (ops::less, Box::new(|x, y| (x < y) as i32)),
        ];
        for (i, (f, g)) in cases.iter().enumerate() {
            let r = f(&a, &b).unwrap();
            prop_assert_eq!(r.shape(), out.as_slice());
            let got = ops::astype(&r, Dtype::Int32).unwrap().to_vec::<i32>().unwrap();
            prop_assert_eq!(got, naive(&va, &sa, &vb, &sb, &out, g), "case {}", i);
        }
    }
}

#[test]
fn ops_build_mlx_graphs() {
    let x = Array::placeholder(&[2, 3], Dtype::Int32);
    let y = Array::placeholder(&[3], Dtype::Float16);
    let name = |a: &Array| {
        a.node()
            .map(|(n, _)| n.primitive().name())
            .unwrap_or("leaf")
    };
    let inputs = |a: &Array| a.node().unwrap().0.inputs();

    // exp on int32: AsType(float32) -> Exp.
    let e = ops::exp(&x).unwrap();
    assert_eq!((name(&e), e.dtype()), ("Exp", Dtype::Float32));
    assert_eq!(name(&inputs(&e)[0]), "AsType");

    // Mixed add: AsType on the int side, Broadcast on the small side.
    let s = ops::add(&x, &y).unwrap();
    assert_eq!((name(&s), s.dtype()), ("Add", Dtype::Float16));
    let ins = inputs(&s);
    assert_eq!((name(&ins[0]), name(&ins[1])), ("AsType", "Broadcast"));

    // -x is one Negative node; rsqrt is Sqrt{recip}; log2 is Log{two}.
    let n = -&y;
    assert_eq!(name(&n), "Negative");
    let r = ops::rsqrt(&y).unwrap();
    let st = r.node().unwrap().0.primitive().state();
    assert_eq!(name(&r), "Sqrt");
    assert_eq!(st, vec![mlx::StateValue::Bool(true)]);
    let l = ops::log2(&y).unwrap();
    assert_eq!(name(&l), "Log");

    // divmod: one node, two outputs.
    let (q, m) = ops::divmod(&x, &x).unwrap();
    let (nq, iq) = q.node().unwrap();
    let (nm, im) = m.node().unwrap();
    assert!(Arc::ptr_eq(&nq, &nm));
    assert_eq!((iq, im, nq.primitive().name()), (0, 1, "DivMod"));

    // Comparisons give bool; divide on ints gives float32; shifts of bool use uint8.
    assert_eq!(ops::less(&x, &y).unwrap().dtype(), Dtype::Bool);
    assert_eq!(ops::divide(&x, &x).unwrap().dtype(), Dtype::Float32);
    let bx = Array::placeholder(&[2], Dtype::Bool);
    assert_eq!(ops::left_shift(&bx, &bx).unwrap().dtype(), Dtype::Uint8);
    assert_eq!(ops::round(&x, 1).unwrap().dtype(), Dtype::Int32);
    assert_eq!(
        ops::abs(&ops::astype(&y, Dtype::Complex64).unwrap())
            .unwrap()
            .dtype(),
        Dtype::Float32
    );
}

#[test]
fn errors_name_shapes_and_dtypes() {
    let a = Array::from_slice(&[1.0f32; 6], &[2, 3]).unwrap();
    let b = Array::from_slice(&[1.0f32; 4], &[4]).unwrap();
    let e = ops::add(&a, &b).unwrap_err().to_string();
    assert!(e.contains("[2, 3]") && e.contains("[4]"), "{e}");
    let e = ops::where_(&b, &a, &a).unwrap_err().to_string();
    assert!(e.contains("[4]"), "{e}");

    let e = ops::bitwise_and(&a, &a).unwrap_err().to_string();
    assert!(e.contains("bitwise_and") && e.contains("float32"), "{e}");
    let e = ops::left_shift(&a, &a).unwrap_err().to_string();
    assert!(e.contains("integer"), "{e}");
    let t = Array::from_slice(&[true], &[1]).unwrap();
    assert!(ops::negative(&t)
        .unwrap_err()
        .to_string()
        .contains("logical_not"));
    assert!(ops::clip(&a, None, None).is_err());
    let c = ops::astype(&a, Dtype::Complex64).unwrap();
    assert!(ops::remainder(&c, &c).is_err());
    assert!(ops::erf(&c).is_err());

    // A primitive given a dtype it cannot handle (as a hand-written file could) errors too.
    let i = Array::from_slice(&[1i32], &[1]).unwrap();
    let r = Array::from_primitive(mlx::primitives::unary::Exp {}, vec![i]);
    assert!(r.unwrap_err().to_string().contains("int32"));
}

#[test]
fn operators_and_clip() {
    let a = Array::from_slice(&[-7i32, 7, 5], &[3]).unwrap();
    let b = Array::from_slice(&[2i32, -2, 0], &[3]).unwrap();
    assert_eq!((&a % &b).to_vec::<i32>().unwrap(), vec![1, -1, 5]);
    assert_eq!((-&a).to_vec::<i32>().unwrap(), vec![7, -7, -5]);
    let lo = Array::scalar(-1i32);
    let hi = Array::scalar(6i32);
    let c = ops::clip(&a, Some(&lo), Some(&hi)).unwrap();
    assert_eq!(c.to_vec::<i32>().unwrap(), vec![-1, 6, 5]);
    let c = ops::clip(&a, None, Some(&hi)).unwrap();
    assert_eq!(c.to_vec::<i32>().unwrap(), vec![-7, 6, 5]);
}

/// A causal mask as a prefill applies it: a broadcast condition, dense
/// scores large enough for the parallel loop, and a scalar fill.
#[test]
fn where_with_broadcast_condition_and_scalar_fill() {
    let (heads, n) = (3usize, 128usize);
    let scores: Vec<f32> = (0..heads * n * n).map(|i| i as f32).collect();
    let s = Array::from_slice(&scores, &[heads as i32, n as i32, n as i32]).unwrap();
    let rows = ops::reshape(
        &ops::arange(0.0, n as f64, 1.0, Dtype::Int32).unwrap(),
        &[n as i32, 1],
    )
    .unwrap();
    let cols = ops::reshape(
        &ops::arange(0.0, n as f64, 1.0, Dtype::Int32).unwrap(),
        &[1, n as i32],
    )
    .unwrap();
    let keep = ops::greater_equal(&rows, &cols).unwrap();
    let fill = Array::scalar(f32::NEG_INFINITY);
    let got = ops::where_(&keep, &s, &fill)
        .unwrap()
        .to_vec::<f32>()
        .unwrap();
    for (i, (&g, &v)) in got.iter().zip(&scores).enumerate() {
        let (r, c) = (i / n % n, i % n);
        let want = if r >= c { v } else { f32::NEG_INFINITY };
        assert_eq!(g.to_bits(), want.to_bits(), "element {i}");
    }
}

/// Empty operands give empty results, broadcast or not.
#[test]
fn where_and_add_of_empty_arrays() {
    let e = Array::from_slice::<f32>(&[], &[0, 3]).unwrap();
    let cond = Array::from_slice(&[true, false, true], &[3]).unwrap();
    let got = ops::where_(&cond, &e, &Array::scalar(1.0f32)).unwrap();
    assert_eq!(got.shape(), &[0, 3]);
    assert!(got.to_vec::<f32>().unwrap().is_empty());
    let sum = ops::add(&e, &Array::scalar(1.0f32)).unwrap();
    assert!(sum.to_vec::<f32>().unwrap().is_empty());
}

/// A dense temporary plus a broadcast row (an attention mask over the
/// scores of every head), on either side: the row is copied row-major and
/// the sum written into the temporary's buffer or a new one, above and
/// below the parallel threshold; against the closed form.
#[test]
fn dense_temporary_plus_a_broadcast_row() {
    for (heads, n) in [(9, 256), (3, 40_000)] {
        let scores: Vec<f32> = (0..heads * n).map(|i| (i % 97) as f32 * 0.25).collect();
        let mask: Vec<f32> = (0..n)
            .map(|j| if j % 3 == 0 { -1.5 } else { 0.5 })
            .collect();
        let s = Array::from_slice(&scores, &[1, heads as i32, 1, n as i32]).unwrap();
        let m = Array::from_slice(&mask, &[1, 1, 1, n as i32]).unwrap();
        let row = ops::broadcast_to(&m, &[1, heads as i32, 1, n as i32]).unwrap();
        let want: Vec<f32> = (0..heads * n)
            .map(|i| scores[i] * 2.0 + mask[i % n])
            .collect();
        for row_first in [false, true] {
            // `s * 2` is a temporary only the sum reads: its buffer may be reused.
            let twice = ops::multiply(&s, &Array::scalar(2.0f32)).unwrap();
            let sum = if row_first {
                ops::add(&row, &twice)
            } else {
                ops::add(&twice, &row)
            }
            .unwrap();
            drop(twice);
            assert_eq!(
                sum.to_vec::<f32>().unwrap(),
                want,
                "{heads} x {n}, row first {row_first}"
            );
            // And with the dense operand kept alive (no donation).
            let twice = ops::multiply(&s, &Array::scalar(2.0f32)).unwrap();
            twice.eval().unwrap();
            let sum = ops::add(&twice, &row).unwrap();
            assert_eq!(sum.to_vec::<f32>().unwrap(), want, "{heads} x {n}, kept");
        }
    }
}
