//! Shape ops against MLX 0.32.4, bit for bit: every case of
//! tests/fixtures/shape/generate.py, for every dtype it lists (f32, f16,
//! bf16, bool, i32, u8, i64), with transposed, sliced and negative-stride
//! inputs and negative axes.

use crate::common;

use mlx::{ops, Array, Dtype};
use std::collections::BTreeSet;

/// Loads a fixture; bf16 files hold uint16 bit patterns.
fn load(name: &str, dtype: &str) -> Array {
    let a = common::npy(&format!("shape/{name}_{dtype}.npy"));
    if dtype == "bf16" {
        ops::view(&a, Dtype::Bfloat16).unwrap()
    } else {
        a
    }
}

fn s(x: &Array, start: &[i32], stop: &[i32], strides: &[i32]) -> Array {
    ops::slice(x, start, stop, strides).unwrap()
}

fn t(x: &Array, axes: &[i32]) -> Array {
    ops::transpose(x, axes).unwrap()
}

fn set(x: &Array, u: &Array, start: &[i32], stop: &[i32], strides: &[i32]) -> Array {
    ops::slice_update(x, u, start, stop, strides).unwrap()
}

fn idx(v: &[i32]) -> Array {
    Array::from_slice(v, &[v.len() as i32]).unwrap()
}

/// `slice_update` and its reducing variants.
type UpdateOp = fn(&Array, &Array, &[i32], &[i32], &[i32]) -> mlx::Result<Array>;

/// The Rust spelling of each case of generate.py.
fn run(case: &str, x: &Array) -> Option<Array> {
    let u = s(x, &[0, 0, 0], &[2, 2, 5], &[]);
    let at = |f: UpdateOp| f(x, &u, &[1, 0, 0], &[3, 4, 5], &[1, 2, 1]).unwrap();
    let split = |i: usize| ops::split_at(x, &[1, 3], 1).unwrap()[i].clone();
    let split_unsorted = |i: usize| ops::split_at(x, &[3, 1], -1).unwrap()[i].clone();
    Some(match case {
        "t_reshape" => ops::reshape(&t(x, &[2, 0, 1]), &[-1, 6]).unwrap(),
        "flatten_t" => ops::flatten(&t(x, &[1, 0, 2]), 1, 2).unwrap(),
        "unflatten" => ops::unflatten(&t(x, &[2, 1, 0]), 1, &[2, -1]).unwrap(),
        "slice_neg" => s(x, &[-1, 1, 0], &[-4, 3, 5], &[-1, 1, 2]),
        "slice_neg2" => s(x, &[2, -1, -3], &[0, -5, 5], &[-1, -2, 1]),
        "flip_t" => ops::flip(&t(x, &[1, 0, 2]), &[-1]).unwrap(),
        "pad_t" => ops::pad(
            &t(x, &[1, 0, 2]),
            &[(1, 0), (0, 2), (1, 1)],
            &Array::scalar(1i32),
        )
        .unwrap(),
        "concat" => ops::concatenate(
            &[
                s(x, &[0, 0, 0], &[3, 2, 5], &[]),
                s(x, &[0, 1, 0], &[3, 4, 5], &[]),
            ],
            1,
        )
        .unwrap(),
        "concat_neg" => ops::concatenate(&[x.clone(), ops::flip(x, &[2]).unwrap()], -1).unwrap(),
        "stack" => ops::stack(&[x.clone(), ops::flip(x, &[0]).unwrap()], -2).unwrap(),
        "split_eq3" => ops::split(&t(x, &[2, 0, 1]), 5, 0).unwrap()[3].clone(),
        "upd" => set(x, &u, &[1, 0, 0], &[3, 4, 5], &[1, 2, 1]),
        "upd_neg" => set(
            x,
            &s(x, &[0, 0, 0], &[3, 2, 5], &[]),
            &[-1, 3, 0],
            &[-4, 0, 5],
            &[-1, -2, 1],
        ),
        "dyn_slice" => ops::slice_dynamic(x, &idx(&[1, 2]), &[0, 2], &[2, 4, 3]).unwrap(),
        "dyn_slice_t" => {
            ops::slice_dynamic(&t(x, &[1, 0, 2]), &Array::scalar(1i32), &[0], &[2, 3, 5]).unwrap()
        }
        "dyn_upd" => ops::slice_update_dynamic(x, &u, &idx(&[1, 0]), &[1, -1]).unwrap(),
        "tile" => ops::tile(&s(x, &[0, 0, 0], &[3, 2, 2], &[]), &[2, 1, 3]).unwrap(),
        "repeat" => {
            ops::repeat(&s(x, &[0, 0, 0], &[1, 4, 5], &[]).reshape0(), 2, Some(-1)).unwrap()
        }
        "repeat_flat" => ops::repeat(&s(x, &[0, 0, 0], &[2, 2, 2], &[]), 3, None).unwrap(),
        "moveaxis" => ops::moveaxis(x, 0, -1).unwrap(),
        "swapaxes" => ops::swapaxes(x, -1, 0).unwrap(),
        "broadcast" => {
            ops::broadcast_to(&s(x, &[0, 0, 0], &[3, 1, 5], &[]), &[2, 3, 4, 5]).unwrap()
        }
        "as_strided" => ops::as_strided(&t(x, &[1, 0, 2]), &[4, 3], &[2, 5], 1).unwrap(),
        "expand" => ops::expand_dims(&t(x, &[]), &[0, -1]).unwrap(),
        "atleast_3d" => {
            ops::atleast_3d(&s(x, &[0, 0, 0], &[1, 1, 5], &[]).reshape0().reshape0()).unwrap()
        }
        "split_0" => split(0),
        "split_1" => split(1),
        "split_2" => split(2),
        "split_unsorted_0" => split_unsorted(0),
        "split_unsorted_1" => split_unsorted(1),
        "split_unsorted_2" => split_unsorted(2),
        "upd_add" => at(ops::slice_update_add),
        "upd_max" => at(ops::slice_update_max),
        "upd_min" => at(ops::slice_update_min),
        "upd_prod" => at(ops::slice_update_prod),
        "view_i32" => ops::view(x, Dtype::Int32).unwrap(),
        "view_u8" => ops::view(x, Dtype::Uint8).unwrap(),
        "view_u8_t" => ops::view(&t(x, &[1, 0, 2]), Dtype::Uint8).unwrap(),
        "view_i16" => ops::view(x, Dtype::Int16).unwrap(),
        "view_i16_t" => ops::view(&t(x, &[2, 1, 0]), Dtype::Int16).unwrap(),
        "view_f16" => ops::view(x, Dtype::Float16).unwrap(),
        "view_u8_s" => ops::view(&s(x, &[0, 1, 0], &[3, 3, 5], &[]), Dtype::Uint8).unwrap(),
        "view_i32_s" => ops::view(&s(x, &[0, 0, 0], &[3, 4, 4], &[]), Dtype::Int32).unwrap(),
        "view_f64_t" => ops::view(&t(x, &[1, 0, 2]), Dtype::Float64).unwrap(),
        "view_bool" => ops::view(x, Dtype::Bool).unwrap(),
        _ => return None,
    })
}

/// Drops the leading axis (x[0] in Python).
trait Reshape0 {
    fn reshape0(&self) -> Array;
}
impl Reshape0 for Array {
    fn reshape0(&self) -> Array {
        ops::squeeze(self, &[0]).unwrap()
    }
}

#[test]
fn every_fixture_matches_mlx_bit_for_bit() {
    let list = std::fs::read_to_string(common::fixture("shape/cases.txt")).unwrap();
    let mut seen = BTreeSet::new();
    let mut dtypes = BTreeSet::new();
    for line in list.lines().filter(|l| !l.is_empty()) {
        let (case, dtype) = line.split_once(' ').unwrap();
        let x = load("in", dtype);
        let got = run(case, &x).unwrap_or_else(|| panic!("no Rust spelling for case {case}"));
        let got = if got.dtype() == Dtype::Bfloat16 {
            ops::view(&got, Dtype::Uint16).unwrap()
        } else {
            got
        };
        let want = common::npy(&format!("shape/{case}_{dtype}.npy"));
        std::panic::catch_unwind(|| common::assert_bits_eq(&got, &want))
            .unwrap_or_else(|_| panic!("case {case} ({dtype}) differs from MLX"));
        seen.insert(case.to_string());
        dtypes.insert(dtype.to_string());
    }
    assert!(seen.len() >= 45, "only {} cases", seen.len());
    assert_eq!(dtypes.len(), 7);
}
