//! Indexing ops against MLX 0.32.4, bit for bit: every case of
//! tests/fixtures/indexing/generate.py (gather/take, take_along_axis,
//! put_along_axis, scatter and its reductions with duplicate indices,
//! boolean-mask assignment) for 11 dtypes, with negative indices, several
//! index dtypes and transposed or strided inputs.

use crate::common;

use mlx::{ops, Array, Dtype};
use std::collections::BTreeSet;

/// Loads a fixture; bf16 files hold uint16 bit patterns.
fn load(name: &str, dtype: &str) -> Array {
    let a = common::npy(&format!("indexing/{name}_{dtype}.npy"));
    if dtype == "bf16" {
        ops::view(&a, Dtype::Bfloat16).unwrap()
    } else {
        a
    }
}

fn arr<T: mlx::Element>(v: &[T], shape: &[i32]) -> Array {
    Array::from_slice(v, shape).unwrap()
}

fn s(x: &Array, start: &[i32], stop: &[i32], strides: &[i32]) -> Array {
    ops::slice(x, start, stop, strides).unwrap()
}

fn r(x: &Array, shape: &[i32]) -> Array {
    ops::reshape(x, shape).unwrap()
}

fn mask(n: i32, shape: &[i32], f: impl Fn(i32) -> bool) -> Array {
    let v: Vec<bool> = (0..n).map(f).collect();
    arr(&v, shape)
}

/// The Rust spelling of each case of generate.py.
fn run(case: &str, x: &Array) -> Option<Array> {
    let i2 = arr(&[0i32, -1, 2, 1, -4, 3], &[3, 2]);
    let i1 = arr(&[4i64, -5, 2], &[3]);
    let j = arr(&[1i16, 0], &[2, 1]);
    let tal = arr(&[0i32, 4, -1, 2, 3, 3, 1, -2], &[4, 2, 1]);
    let uniq = arr(&[3i32, 0, -2], &[3]);
    let dup = arr(&[1u8, 1, 3, 2, 1], &[5]);
    let m2 = mask(20, &[4, 5], |i| i % 3 == 0);
    let m3 = mask(60, &[5, 4, 3], |i| i % 4 == 1);
    let xt = ops::transpose(x, &[1, 0, 2]).unwrap();
    let tal_t = ops::transpose(&tal, &[1, 0, 2]).unwrap();
    let u = s(x, &[0, 0, 0], &[3, 5, 3], &[]);
    let u5 = ops::concatenate(&[u.clone(), s(&u, &[0, 0, 0], &[2, 5, 3], &[])], 0).unwrap();
    let u000 = r(&s(&u, &[0, 0, 0], &[1, 1, 1], &[]), &[]);
    let u111 = r(&s(&u, &[1, 1, 1], &[2, 2, 2], &[]), &[]);
    let u00 = r(&s(&u, &[0, 0, 0], &[1, 1, 3], &[]), &[3]);
    Some(match case {
        "take_none" => ops::take(x, &i2, None).unwrap(),
        "take_ax1" => ops::take(x, &i1, Some(1)).unwrap(),
        "take_t_neg" => ops::take(&xt, &i2, Some(-2)).unwrap(),
        "take_u8" => ops::take(x, &arr(&[2u8, 0, 0], &[3]), Some(2)).unwrap(),
        "take_int" => ops::take_int(x, 2, Some(1)).unwrap(),
        "getitem_arr" => ops::index(x, &i2).unwrap(),
        "getitem_int" => ops::index_int(x, -2).unwrap(),
        "getitem_2arr" => ops::index_arrays(x, &[uniq, j]).unwrap(),
        "getitem_strided" => ops::index(
            &s(x, &[0, 0, 0], &[4, 5, 3], &[2, 1, 1]),
            &arr(&[1i32, 0, 1], &[3]),
        )
        .unwrap(),
        "tal" => ops::take_along_axis(x, &tal, Some(1)).unwrap(),
        "tal_t" => ops::take_along_axis(&xt, &tal_t, Some(0)).unwrap(),
        "tal_none" => ops::take_along_axis(x, &arr(&[59i32, 0, -1, 7], &[4]), None).unwrap(),
        "pal" => {
            ops::put_along_axis(x, &s(&tal, &[0, 0, 0], &[4, 1, 1], &[]), &u000, Some(1)).unwrap()
        }
        "pal_vals" => {
            ops::put_along_axis(&xt, &tal_t, &s(&u, &[0, 0, 0], &[2, 4, 3], &[]), Some(0)).unwrap()
        }
        "pal_none" => ops::put_along_axis(x, &arr(&[5i32, -1, 30], &[3]), &u00, None).unwrap(),
        "set_arr" => ops::index_put(x, &uniq, &u).unwrap(),
        "set_arr_bcast" => ops::index_put(
            &xt,
            &arr(&[4i32, 0], &[2]),
            &s(&u, &[0, 0, 0], &[1, 1, 3], &[]),
        )
        .unwrap(),
        "add_dup" => ops::index_add(x, &dup, &u5).unwrap(),
        "mul_dup" => ops::index_multiply(x, &dup, &u5).unwrap(),
        "max_dup" => ops::index_maximum(x, &dup, &u5).unwrap(),
        "min_dup" => ops::index_minimum(x, &dup, &u5).unwrap(),
        "add_2arr" => {
            let upd = r(&ops::take_int(&u, 0, Some(1)).unwrap(), &[3, 1, 1, 3]);
            let (ia, ib) = (arr(&[1i32, 1, -1], &[3]), arr(&[0i32, 0, 4], &[3]));
            ops::scatter_add(x, &[ia, ib], &upd, &[0, 1]).unwrap()
        }
        "set_mask" => {
            ops::masked_scatter(x, &m2, &s(&r(&u, &[15, 3]), &[0, 0], &[7, 3], &[])).unwrap()
        }
        "set_mask_full" => {
            ops::masked_scatter(&xt, &m3, &ops::flip(&r(&u, &[45]), &[]).unwrap()).unwrap()
        }
        "set_mask_scalar" => ops::masked_scatter(x, &m2, &u111).unwrap(),
        _ => return None,
    })
}

#[test]
fn every_fixture_matches_mlx_bit_for_bit() {
    let list = std::fs::read_to_string(common::fixture("indexing/cases.txt")).unwrap();
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
        let want = common::npy(&format!("indexing/{case}_{dtype}.npy"));
        std::panic::catch_unwind(|| common::assert_bits_eq(&got, &want))
            .unwrap_or_else(|_| panic!("case {case} ({dtype}) differs from MLX"));
        seen.insert(case.to_string());
        dtypes.insert(dtype.to_string());
    }
    assert!(seen.len() >= 25, "only {} cases", seen.len());
    assert_eq!(dtypes.len(), 11);
}
