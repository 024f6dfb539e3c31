"""Imports functions exported from Rust in MLX format with Python MLX and
checks that MLX computes the outputs Rust computed.

Usage: python check_rust_exports.py DIR   (DIR written by the
`export_for_python` example). Exits non-zero on any mismatch.
"""
import json
import sys
from pathlib import Path

import mlx.core as mx
import numpy as np


def main(d: Path) -> int:
    failures = 0
    count = 0
    for line in (d / "manifest.jsonl").read_text().splitlines():
        case = json.loads(line)
        fn = mx.import_function(str(d / case["file"]))
        args = [mx.array(np.load(d / a)) for a in case["args"]]
        kwargs = {k: mx.array(np.load(d / v)) for k, v in case["kwargs"].items()}
        outs = fn(*args, **kwargs)
        for got, want_file in zip(outs, case["outputs"]):
            want = np.load(d / want_file)
            got = np.array(got)
            count += 1
            if got.shape != want.shape:
                failures += 1
                print(f"MISMATCH {case['file']} {want_file}: shape {got.shape}, want {want.shape}")
            elif not np.allclose(got, want, rtol=1e-5, atol=1e-6, equal_nan=True):
                failures += 1
                err = np.abs(got.astype(np.float64) - want.astype(np.float64))
                at = np.unravel_index(np.nanargmax(err), err.shape) if err.size else ()
                print(
                    f"MISMATCH {case['file']} {want_file}: max abs error {err.max():.3g} at {at} "
                    f"(got {got[at]}, want {want[at]})"
                )
    print(f"{count - failures} passed, {failures} failed")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main(Path(sys.argv[1])))
