//! Sort and scan ops against MLX 0.32.4: every case of
//! tests/fixtures/sort_scan/generate.py for 14 dtypes (NaNs of both signs,
//! -0.0, infinities and ties in the float inputs; transposed, strided and
//! reversed views). Sorts, argsorts and the integer/float scans are
//! compared bit for bit; logcumsumexp too, except for complex64 (libm's
//! complex functions are not bit-stable across platforms).

use crate::common;

use mlx::{ops, Array, Dtype};
use std::collections::BTreeSet;

fn load(name: &str, dtype: &str) -> Array {
    let a = common::npy(&format!("sort_scan/{name}_{dtype}.npy"));
    if dtype == "bf16" && a.dtype() == Dtype::Uint16 {
        ops::view(&a, Dtype::Bfloat16).unwrap()
    } else {
        a
    }
}

/// The Rust spelling of each case of generate.py.
fn run(case: &str, x: &Array, sc: &Array) -> Option<Array> {
    let xt = ops::transpose(x, &[]).unwrap();
    let st = ops::transpose(sc, &[]).unwrap();
    let (f, t) = (false, true);
    Some(match case {
        "sort_last" => ops::sort(x, Some(-1)).unwrap(),
        "sort_0" => ops::sort(x, Some(0)).unwrap(),
        "sort_none" => ops::sort(x, None).unwrap(),
        "sort_t" => ops::sort(&xt, Some(-1)).unwrap(),
        "sort_strided" => {
            let v = ops::slice(x, &[0, 6], &[6, -8], &[2, -1]).unwrap();
            ops::sort(&v, Some(1)).unwrap()
        }
        "argsort_last" => ops::argsort(x, Some(-1)).unwrap(),
        "argsort_0" => ops::argsort(x, Some(0)).unwrap(),
        "argsort_none" => ops::argsort(x, None).unwrap(),
        "argsort_t" => ops::argsort(&xt, Some(1)).unwrap(),
        "topk_sorted" => ops::sort(&ops::topk(x, 3, Some(1)).unwrap(), Some(1)).unwrap(),
        "topk_none_sorted" => ops::sort(&ops::topk(x, 5, None).unwrap(), Some(-1)).unwrap(),
        "cumsum_1" => ops::cumsum(sc, Some(1), f, t).unwrap(),
        "cumsum_0_rev" => ops::cumsum(sc, Some(0), t, t).unwrap(),
        "cumsum_excl" => ops::cumsum(sc, Some(1), f, f).unwrap(),
        "cumsum_rev_excl" => ops::cumsum(&st, Some(0), t, f).unwrap(),
        "cumsum_none" => ops::cumsum(sc, None, f, t).unwrap(),
        "cumprod_1" => ops::cumprod(sc, Some(1), f, t).unwrap(),
        "cumprod_0_excl" => ops::cumprod(sc, Some(0), f, f).unwrap(),
        "cumprod_t_rev" => ops::cumprod(&st, Some(1), t, t).unwrap(),
        "cummax_1" => ops::cummax(sc, Some(1), f, t).unwrap(),
        "cummax_0_excl" => ops::cummax(sc, Some(0), f, f).unwrap(),
        "cummax_rev_excl" => ops::cummax(&st, Some(1), t, f).unwrap(),
        "cummin_1" => ops::cummin(sc, Some(1), f, t).unwrap(),
        "cummin_0_rev" => ops::cummin(sc, Some(0), t, t).unwrap(),
        "cummin_excl" => ops::cummin(&st, Some(-1), f, f).unwrap(),
        "cummax_none" => ops::cummax(sc, None, f, t).unwrap(),
        "lcse_1" => ops::logcumsumexp(sc, Some(1), f, t).unwrap(),
        "lcse_0_rev_excl" => ops::logcumsumexp(&st, Some(0), t, f).unwrap(),
        "lcse_none" => ops::logcumsumexp(sc, None, f, t).unwrap(),
        _ => return None,
    })
}

#[test]
fn every_fixture_matches_mlx() {
    let list = std::fs::read_to_string(common::fixture("sort_scan/cases.txt")).unwrap();
    let mut seen = BTreeSet::new();
    let mut dtypes = BTreeSet::new();
    let mut failures = Vec::new();
    for line in list.lines().filter(|l| !l.is_empty()) {
        let (case, dtype) = line.split_once(' ').unwrap();
        let (x, sc) = (load("in", dtype), load("scan_in", dtype));
        let got = run(case, &x, &sc).unwrap_or_else(|| panic!("no Rust spelling for case {case}"));
        let want = load(case, dtype);
        let approx = case.starts_with("lcse") && dtype == "c64";
        // Partition leaves NaNs in any order, so the NaN signs topk keeps may differ.
        let nan_blind = case.starts_with("topk");
        let ok = std::panic::catch_unwind(|| {
            if nan_blind {
                common::assert_close(&got, &want, 0.0, 0.0);
            } else if approx {
                let re = |a: &Array| ops::view(a, Dtype::Float32).unwrap();
                common::assert_close(&re(&got), &re(&want), 1e-5, 1e-6);
            } else {
                let bits = |a: &Array| {
                    if a.dtype() == Dtype::Bfloat16 {
                        ops::view(a, Dtype::Uint16).unwrap()
                    } else {
                        a.clone()
                    }
                };
                common::assert_bits_eq(&bits(&got), &bits(&want));
            }
        });
        if ok.is_err() {
            failures.push(format!("{case} ({dtype})"));
        }
        seen.insert(case.to_string());
        dtypes.insert(dtype.to_string());
    }
    assert!(failures.is_empty(), "differ from MLX: {failures:?}");
    assert!(seen.len() >= 29, "only {} cases", seen.len());
    assert_eq!(dtypes.len(), 14);
}
