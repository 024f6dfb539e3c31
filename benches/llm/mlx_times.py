"""Python MLX's times for the LLM benchmark's files (run by benches/llm.rs).

    python benches/llm/mlx_times.py DIR DECODE_REPS PREFILL_REPS VARIANT ...

Prints `name seconds` lines: <variant>_import, <variant>_decode_min,
<variant>_decode_median, and with PREFILL_REPS > 0 the same for prefill
(MLX's CPU prefill takes ~17 s a call on two cores, so it is off by default).
"""

import statistics
import sys
import time

import mlx.core as mx

# generate.py sits beside this script: Python puts the script's folder on
# sys.path, and benches/llm.rs, which runs the text with -c, adds it itself.
from generate import ARGS, SEQ, decode_inputs  # noqa: E402

DTYPES = {"f32": mx.float32, "bf16": mx.bfloat16, "f16": mx.float16}


def timed(f, args, reps):
    times = []
    for _ in range(reps + 1):
        t = time.perf_counter()
        mx.eval(f(*args))
        times.append(time.perf_counter() - t)
    return min(times[1:]), statistics.median(times[1:])


def main():
    d, decode_reps, prefill_reps = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
    mx.set_default_device(mx.cpu)
    for v in sys.argv[4:]:
        t = time.perf_counter()
        dec = mx.import_function(f"{d}/{v}_decode.mlxfn")
        print(f"{v}_import {time.perf_counter() - t}")
        inputs = decode_inputs(DTYPES.get(v, mx.float32))
        mx.eval(inputs)
        lo, med = timed(dec, inputs, decode_reps)
        print(f"{v}_decode_min {lo}\n{v}_decode_median {med}", flush=True)
        if prefill_reps > 0:
            pre = mx.import_function(f"{d}/{v}_prefill.mlxfn")
            tokens = (mx.arange(SEQ, dtype=mx.int32) * 7919 % ARGS.vocab_size).reshape(1, SEQ)
            lo, med = timed(pre, [tokens], prefill_reps)
            print(f"{v}_prefill_min {lo}\n{v}_prefill_median {med}", flush=True)


if __name__ == "__main__":
    main()
