"""Writes the LLM benchmark's files (large, so into target/llm/, never committed).

    /work/main/.venv/bin/python benches/llm/generate.py [OUT_DIR] [VARIANT ...]

A SmolLM-135M-shaped llama built with mlx-lm 0.32.2 (hidden 576, 30 layers,
9 heads / 3 KV heads, head_dim 64, MLP 1536, vocab 49152, tied embeddings)
with random weights, exported by Python MLX on CPU as two functions per
variant:

* `<variant>_prefill.mlxfn`: tokens int32[1, 128] -> logits [1, 128, vocab]
  and each layer's keys and values [1, 3, 128, 64].
* `<variant>_decode.mlxfn`: (token int32[1, 1], offset int32[1], mask
  [1, 1, 1, 256], then keys/values [1, 3, 256, 64] per layer) -> logits
  [1, 1, vocab] and the updated caches. The new key/value are written at
  `offset` with slice_update; the additive mask hides unused slots.

Variants: f32, bf16, f16 (weights and activations in that dtype) and
q<bits>g<group> (nn.quantize of the f32 model, activations f32), e.g. q4g64.
"""

import sys
import time
from pathlib import Path

import mlx.core as mx
import mlx.nn as nn
from mlx_lm.models import llama

ROOT = Path(__file__).resolve().parents[2]
SEQ, SLOTS = 128, 256
ARGS = llama.ModelArgs(
    model_type="llama",
    hidden_size=576,
    num_hidden_layers=30,
    intermediate_size=1536,
    num_attention_heads=9,
    num_key_value_heads=3,
    head_dim=64,
    rms_norm_eps=1e-5,
    vocab_size=49152,
    rope_theta=100000.0,
    tie_word_embeddings=True,
)
DEFAULT = ["f32", "bf16", "f16", "q8g64", "q4g64"]


def build(variant):
    mx.random.seed(0)
    model = llama.Model(ARGS)
    # Small random weights keep activations in range through 30 layers.
    flat = [(k, v) for k, v in nn.utils.tree_flatten(model.parameters())]
    new = []
    for k, v in flat:
        if k.endswith("norm.weight"):
            new.append((k, mx.ones(v.shape)))
        else:
            new.append((k, mx.random.normal(v.shape) * 0.02))
    model.load_weights(new)
    dtype = mx.float32
    if variant in ("bf16", "f16"):
        dtype = mx.bfloat16 if variant == "bf16" else mx.float16
        model.set_dtype(dtype)
    elif variant.startswith("q"):
        bits, group = variant[1:].split("g")
        nn.quantize(model, group_size=int(group), bits=int(bits))
    mx.eval(model.parameters())
    return model, dtype


def attention_inputs(attn, x, offset):
    b, l, _ = x.shape
    q = attn.q_proj(x).reshape(b, l, attn.n_heads, -1).transpose(0, 2, 1, 3)
    k = attn.k_proj(x).reshape(b, l, attn.n_kv_heads, -1).transpose(0, 2, 1, 3)
    v = attn.v_proj(x).reshape(b, l, attn.n_kv_heads, -1).transpose(0, 2, 1, 3)
    return attn.rope(q, offset=offset), attn.rope(k, offset=offset), v


def attend(attn, q, k, v, mask):
    b, _, l, _ = q.shape
    o = mx.fast.scaled_dot_product_attention(q, k, v, scale=attn.scale, mask=mask)
    return attn.o_proj(o.transpose(0, 2, 1, 3).reshape(b, l, -1))


def functions(model):
    inner = model.model

    def logits(h):
        return inner.embed_tokens.as_linear(inner.norm(h))

    def prefill(tokens):
        h = inner.embed_tokens(tokens)
        caches = []
        for layer in inner.layers:
            q, k, v = attention_inputs(layer.self_attn, layer.input_layernorm(h), 0)
            h = h + attend(layer.self_attn, q, k, v, "causal")
            h = h + layer.mlp(layer.post_attention_layernorm(h))
            caches += [k, v]
        return [logits(h)] + caches

    def decode(token, offset, mask, *cache):
        h = inner.embed_tokens(token)
        caches = []
        for i, layer in enumerate(inner.layers):
            q, k, v = attention_inputs(layer.self_attn, layer.input_layernorm(h), offset)
            kc = mx.slice_update(cache[2 * i], k, offset, axes=(2,))
            vc = mx.slice_update(cache[2 * i + 1], v, offset, axes=(2,))
            h = h + attend(layer.self_attn, q, kc, vc, mask)
            h = h + layer.mlp(layer.post_attention_layernorm(h))
            caches += [kc, vc]
        return [logits(h)] + caches

    return prefill, decode


def decode_inputs(dtype):
    token = mx.array([[17]], dtype=mx.int32)
    offset = mx.array([SEQ], dtype=mx.int32)
    mask = mx.where(mx.arange(SLOTS) <= SEQ, 0.0, -float("inf")).astype(dtype)
    mask = mask.reshape(1, 1, 1, SLOTS)
    kv = [mx.random.normal((1, ARGS.num_key_value_heads, SLOTS, 64)).astype(dtype) * 0.5
          for _ in range(2 * ARGS.num_hidden_layers)]
    return [token, offset, mask] + kv


def main():
    out = Path(sys.argv[1]) if len(sys.argv) > 1 else ROOT / "target" / "llm"
    variants = sys.argv[2:] or DEFAULT
    out.mkdir(parents=True, exist_ok=True)
    mx.set_default_device(mx.cpu)
    for variant in variants:
        t = time.perf_counter()
        model, dtype = build(variant)
        prefill, decode = functions(model)
        tokens = (mx.arange(SEQ, dtype=mx.int32) * 7919 % ARGS.vocab_size).reshape(1, SEQ)
        mx.export_function(str(out / f"{variant}_prefill.mlxfn"), prefill, tokens)
        mx.export_function(str(out / f"{variant}_decode.mlxfn"), decode, *decode_inputs(dtype))
        print(f"{variant}: {time.perf_counter() - t:.1f} s", flush=True)


if __name__ == "__main__":
    main()
