"""Export an mlx-lm language model as one MLX function file for `mlxfn generate`.

    python tools/export_llm.py MODEL_DIR OUT_DIR [--quantize BITS] [--group-size G]
                               [--max-kv N] [--prefill-block P] [--min-slots S]

MODEL_DIR is a local mlx-lm / Hugging Face folder (config.json, *.safetensors,
tokenizer files). OUT_DIR receives model.mlxfn (written by mx.exporter, so
Python MLX can import it) and copies of the tokenizer files. The convention
the file follows is docs/llm-convention.md; in short, every trace is

    step(tokens[1, L] int32, offset[] int32, *cache) -> (logits[1, V], *cache')

with the cache as explicit arrays, one trace per (L, slot count) pair, and the
metadata string holding the JSON that describes them.
"""

import argparse
import json
import math
import shutil
import sys
from pathlib import Path

import mlx.core as mx
import mlx.nn as nn
from mlx_lm.models import cache as lm_cache
from mlx_lm.utils import load_model, load_tokenizer, quantize_model

FORMAT = "mlxfn-llm"
VERSION = 1


class SlotKV:
    """Stands in for mlx-lm's KVCache (window None) or RotatingKVCache (window W)
    during tracing. Keys and values live in fixed slot buffers, so every shape in
    the trace is fixed; `offset` (the number of tokens already cached) is an
    array input, so one trace serves every position.

    Full cache: slot j holds position j; new keys are written at `offset`,
    then the query attends over all slots with a mask hiding j > position.
    Ring cache (window W slots): position p lives in slot p % W. One new token
    is written first (mlx-lm's in-place update); a block of L <= W tokens
    attends over [ring, new keys] and is written after (mlx-lm's concat path).
    """

    def __init__(self, keys, values, offset, window):
        self.keys, self.values = keys, values
        self.offset = offset
        self.window = window
        self.slots = keys.shape[2]

    def update_and_fetch(self, k, v):
        L = k.shape[2]
        o = self.offset
        if self.window is None or L == 1:
            start = (o % self.slots) if self.window else o
            start = mx.reshape(start.astype(mx.int32), (1,))
            self.keys = mx.slice_update(self.keys, k, start, (2,))
            self.values = mx.slice_update(self.values, v, start, (2,))
            return self.keys, self.values
        W = self.slots
        seen_k = mx.concatenate([self.keys, k], axis=2)
        seen_v = mx.concatenate([self.values, v], axis=2)
        # slot j receives new token (j - o) mod W when that index is < L
        j = mx.arange(W)
        src = (j - o) % W
        take = src < L
        idx = mx.minimum(src, L - 1)
        new_k = mx.take(k, idx, axis=2)
        new_v = mx.take(v, idx, axis=2)
        take = take[None, None, :, None]
        self.keys = mx.where(take, new_k, self.keys)
        self.values = mx.where(take, new_v, self.values)
        return seen_k, seen_v

    def make_mask(self, N, return_array=False, window_size=None):
        o = self.offset
        q = o + mx.arange(N)[:, None]  # query positions
        if self.window is None:
            mask = mx.arange(self.slots)[None] <= q
            if window_size is not None:
                mask = mask & (mx.arange(self.slots)[None] > q - window_size)
            return mask
        W = self.slots
        window = window_size or W
        if N == 1:
            # after the write, slot j holds the newest position = j mod W
            j = mx.arange(W)[None]
            pos = o - ((o - j) % W)
            return (pos >= 0) & (pos > q - window)
        j = mx.arange(W)[None]
        pos = (o - 1) - ((o - 1 - j) % W)  # newest cached position per slot
        ring = (pos >= 0) & (pos > q - window)
        k = mx.arange(N)[None]
        new = (k <= mx.arange(N)[:, None]) & (q - (o + k) < window)
        return mx.concatenate([ring, new], axis=1)

    @property
    def state(self):
        return [self.keys, self.values]


class SlotArrays(lm_cache.ArraysCache):
    """Stands in for mlx-lm's ArraysCache/MambaCache: the state arrays are inputs
    (zeros at the start, which mlx-lm's None start equals) and outputs. A
    subclass, since models write their state back only into an ArraysCache."""

    def __init__(self, arrays):
        super().__init__(len(arrays))
        self.cache = list(arrays)

    def __getitem__(self, i):
        return self.cache[i]

    def __setitem__(self, i, v):
        self.cache[i] = v

    def make_mask(self, N):
        return None

    @property
    def state(self):
        return self.cache


def describe_caches(model, probe_len):
    """Run mlx-lm's own caches over a probe prompt; read each layer's kind,
    shapes and dtypes from them."""
    caches = (
        model.make_cache()
        if hasattr(model, "make_cache")
        else [lm_cache.KVCache() for _ in model.layers]
    )
    model(mx.zeros((1, probe_len), mx.int32), cache=caches)
    layout = []
    for c in caches:
        kind = type(c).__name__
        if isinstance(c, lm_cache.RotatingKVCache):
            if c.keep != 0:
                raise SystemExit(f"RotatingKVCache with keep={c.keep} is not supported")
            k, v = c.keys, c.values
            layout.append(
                dict(kind="ring", window=c.max_size, mlx_lm=kind,
                     key_shape=[k.shape[1], k.shape[3]], value_shape=[v.shape[1], v.shape[3]],
                     dtype=str(k.dtype).split(".")[-1])
            )
        elif isinstance(c, lm_cache.KVCache):
            k, v = c.keys, c.values
            layout.append(
                dict(kind="kv", mlx_lm=kind,
                     key_shape=[k.shape[1], k.shape[3]], value_shape=[v.shape[1], v.shape[3]],
                     dtype=str(k.dtype).split(".")[-1])
            )
        elif isinstance(c, lm_cache.ArraysCache):
            arrays = [a for a in c.cache]
            if any(a is None for a in arrays):
                raise SystemExit(f"{kind}: a state array stayed None after a forward pass")
            layout.append(
                dict(kind="arrays", mlx_lm=kind,
                     shapes=[list(a.shape[1:]) for a in arrays],
                     dtypes=[str(a.dtype).split(".")[-1] for a in arrays])
            )
        else:
            raise SystemExit(f"cache kind {kind} is not supported (KVCache, RotatingKVCache, ArraysCache are)")
    return layout


def dtype_of(name):
    return getattr(mx, name)


def cache_arrays(layout, slots):
    """Zero cache arrays for a trace with `slots` full-cache slots."""
    out = []
    for c in layout:
        if c["kind"] in ("kv", "ring"):
            n = slots if c["kind"] == "kv" else c["slots"]
            dt = dtype_of(c["dtype"])
            out.append(mx.zeros((1, c["key_shape"][0], n, c["key_shape"][1]), dt))
            out.append(mx.zeros((1, c["value_shape"][0], n, c["value_shape"][1]), dt))
        else:
            for shape, dt in zip(c["shapes"], c["dtypes"]):
                out.append(mx.zeros([1] + shape, dtype_of(dt)))
    return out


def make_step(model, layout):
    def step(tokens, offset, *flat):
        caches, i = [], 0
        for c in layout:
            if c["kind"] in ("kv", "ring"):
                window = c["slots"] if c["kind"] == "ring" else None
                caches.append(SlotKV(flat[i], flat[i + 1], offset, window))
                i += 2
            else:
                n = len(c["shapes"])
                caches.append(SlotArrays(flat[i : i + n]))
                i += n
        logits = model(tokens, cache=caches)[:, -1, :]
        out = [logits]
        for c in caches:
            out.extend(c.state)
        return tuple(out)

    return step


def powers_of_two_up_to(n):
    out, p = [], 1
    while p <= n:
        out.append(p)
        p *= 2
    return out


def slot_sizes(min_slots, max_kv):
    """Slot counts of the full caches: doubling from min_slots, ending at max_kv."""
    out, s = [], min(min_slots, max_kv)
    while s < max_kv:
        out.append(s)
        s *= 2
    out.append(max_kv)
    return out


def eos_ids(model_dir, config, tokenizer):
    ids = set()
    e = config.get("eos_token_id")
    if isinstance(e, int):
        ids.add(e)
    elif isinstance(e, list):
        ids.update(int(x) for x in e)
    gen = Path(model_dir) / "generation_config.json"
    if gen.exists():
        g = json.loads(gen.read_text()).get("eos_token_id")
        if isinstance(g, int):
            ids.add(g)
        elif isinstance(g, list):
            ids.update(int(x) for x in g)
    ids.update(int(x) for x in tokenizer.eos_token_ids)
    return sorted(ids)


TOKENIZER_FILES = [
    "tokenizer.json",
    "tokenizer_config.json",
    "special_tokens_map.json",
    "generation_config.json",
    "chat_template.jinja",
    "chat_template.json",
]


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("model_dir")
    ap.add_argument("out_dir")
    ap.add_argument("--quantize", type=int, metavar="BITS", help="quantize the weights (mlx-lm's affine mode)")
    ap.add_argument("--group-size", type=int, default=64)
    ap.add_argument("--max-kv", type=int, default=4096, help="context limit (tokens); capped by the model's own")
    ap.add_argument("--prefill-block", type=int, default=128, help="largest prompt block per call (a power of two)")
    ap.add_argument("--min-slots", type=int, default=256, help="smallest full-cache slot count")
    ap.add_argument("--slot-sizes", help="explicit full-cache slot counts, e.g. 32,128 (last = context limit)")
    ap.add_argument("--prefill-blocks", help="explicit prompt block sizes, e.g. 1,8 (must hold 1)")
    args = ap.parse_args(argv)

    model_dir, out = Path(args.model_dir), Path(args.out_dir)
    if not (model_dir / "config.json").exists():
        raise SystemExit(f"{model_dir}: no config.json (expected an mlx-lm / Hugging Face model folder)")
    if not (model_dir / "tokenizer.json").exists():
        raise SystemExit(f"{model_dir}: no tokenizer.json (the Rust side reads Hugging Face fast tokenizers)")
    if args.prefill_block & (args.prefill_block - 1):
        raise SystemExit("--prefill-block must be a power of two")

    model, config = load_model(model_dir)
    tokenizer = load_tokenizer(model_dir, eos_token_ids=config.get("eos_token_id"))
    if args.quantize:
        model, config = quantize_model(model, config, args.group_size, args.quantize)

    limit = args.max_kv
    mpe = config.get("max_position_embeddings")
    if isinstance(mpe, int) and mpe > 0:
        limit = min(limit, mpe)

    layout = describe_caches(model, probe_len=2)
    block = args.prefill_block
    for c in layout:
        if c["kind"] == "ring":
            c["slots"] = min(c["window"], limit)
            # a block attends over [ring, block] and is then written into the ring
            block = min(block, 1 << int(math.log2(c["slots"])))
    has_kv = any(c["kind"] == "kv" for c in layout)
    if args.slot_sizes:
        sizes = sorted(int(x) for x in args.slot_sizes.split(","))
        limit = min(limit, sizes[-1])
    else:
        sizes = slot_sizes(args.min_slots, limit)
    if not has_kv:
        sizes = [0]
    if args.prefill_blocks:
        blocks = sorted(int(x) for x in args.prefill_blocks.split(","))
        if blocks[0] != 1 or blocks[-1] > block:
            raise SystemExit(f"--prefill-blocks must hold 1 and stay <= {block} (sliding windows)")
    else:
        blocks = powers_of_two_up_to(block)

    vocab = config.get("vocab_size") or config.get("text_config", {}).get("vocab_size")
    meta = {
        "format": FORMAT,
        "version": VERSION,
        "architecture": config.get("model_type"),
        "vocab_size": vocab,
        "eos_token_ids": eos_ids(model_dir, config, tokenizer),
        "context_limit": limit,
        "dtype": next((c.get("dtype") or c["dtypes"][0] for c in layout), None),
        "quantization": config.get("quantization"),
        "prefill_blocks": blocks,
        "slot_sizes": sizes,
        "cache": layout,
    }

    out.mkdir(parents=True, exist_ok=True)
    step = make_step(model, layout)
    path = out / "model.mlxfn"
    with mx.exporter(str(path), step, metadata=json.dumps(meta)) as exporter:
        for s in sizes:
            for L in blocks:
                exporter(mx.zeros((1, L), mx.int32), mx.array(0, mx.int32), *cache_arrays(layout, s))
    for name in TOKENIZER_FILES:
        if (model_dir / name).exists():
            shutil.copy(model_dir / name, out / name)
    print(
        f"{path}: {meta['architecture']}, {len(sizes) * len(blocks)} traces "
        f"(blocks {blocks}, slots {sizes}), context {limit}, {path.stat().st_size} bytes",
        file=sys.stderr,
    )


if __name__ == "__main__":
    main()
