"""llama.cpp's times on a model of the LLM benchmark's shape (see generate.py).

    python benches/llm/llamacpp_times.py OUT_DIR DECODE_REPS PREFILL_REPS VARIANT ...

VARIANT is f32, f16, q8_0 or q4_0. Needs llama-cpp-python and gguf. The first
run writes OUT_DIR/llama_<variant>.gguf (later runs reuse it): a llama with
generate.py's ARGS and random weights (made-up 49152-token vocabulary); f32
and f16 are written with gguf's GGUFWriter, q8_0 and q4_0 are quantized from
the f32 file by llama_model_quantize with `pure` set, so every matrix,
including the tied embedding/output, has that type (as nn.quantize does).

Each variant is loaded on CPU with 2 threads, n_ctx 256, f16 KV cache and
flash attention on "auto" (llama.cpp's defaults), and with the weight layout
llama.cpp picks on an x86 CPU without AMX: its AMX kernels are switched off
(use_extra_bufts=False), as in our build (llama-cpp-python 0.3.36, GCC 12,
GGML_NATIVE) their q4_0/q8_0 matmuls die of SIGILL (the tile config is
loaded empty), and q4_0's layer matrices are put in the CPU_REPACK buffer
(repacked to q4_0_8x8) by a tensor override, as llama.cpp does by default
there; the other variants keep the plain layout.
Timed with the low-level API:

* prefill: SEQ (128) tokens in one llama_decode into an empty KV cache, all
  128 logits requested (as our prefill computes them); cache cleared per rep.
* decode: one token at position 128 after a 128-token prefill; the token is
  removed from the KV cache after each rep, so every rep decodes at 128.

One warm-up, then DECODE_REPS / PREFILL_REPS reps. Prints `name seconds`
lines like mlx_times.py: <variant>_decode_min, <variant>_decode_median,
<variant>_prefill_min, <variant>_prefill_median. llama.cpp's log is silenced.
"""

import ctypes
import statistics
import sys
import time
from pathlib import Path

import gguf
import llama_cpp as lc
import numpy as np
from llama_cpp._ggml import libggml

# generate.py sits beside this script (see mlx_times.py).
from generate import ARGS, SEQ, SLOTS

QUANT = {"q8_0": lc.LLAMA_FTYPE_MOSTLY_Q8_0, "q4_0": lc.LLAMA_FTYPE_MOSTLY_Q4_0}
MATRICES = rb"blk\.\d+\.(attn_[qkv]|attn_output|ffn_gate|ffn_up|ffn_down)\.weight"


class BuftOverride(ctypes.Structure):  # llama_model_tensor_buft_override
    _fields_ = [("pattern", ctypes.c_char_p), ("buft", ctypes.c_void_p)]


@lc.llama_log_callback
def _quiet(level, text, user_data):
    pass


def write_gguf(path, f16):
    """A llama of generate.py's shape with random weights, as GGUF."""
    a, rng = ARGS, np.random.default_rng(0)
    w = gguf.GGUFWriter(str(path), "llama")
    w.add_context_length(SLOTS)
    w.add_embedding_length(a.hidden_size)
    w.add_block_count(a.num_hidden_layers)
    w.add_feed_forward_length(a.intermediate_size)
    w.add_head_count(a.num_attention_heads)
    w.add_head_count_kv(a.num_key_value_heads)
    w.add_rope_dimension_count(a.head_dim)
    w.add_rope_freq_base(a.rope_theta)
    w.add_layer_norm_rms_eps(a.rms_norm_eps)
    w.add_vocab_size(a.vocab_size)
    ft = gguf.LlamaFileType
    w.add_file_type(ft.MOSTLY_F16 if f16 else ft.ALL_F32)
    # A sentencepiece-style vocabulary: <unk>, <s>, </s>, the 256 byte tokens,
    # then made-up pieces up to vocab_size.
    special = ["<unk>", "<s>", "</s>"]
    tokens = special + [f"<0x{b:02X}>" for b in range(256)]
    types = [gguf.TokenType.UNKNOWN] + [gguf.TokenType.CONTROL] * 2
    types += [gguf.TokenType.BYTE] * 256
    n = a.vocab_size - len(tokens)
    tokens += [f"t{i}" for i in range(n)]
    types += [gguf.TokenType.NORMAL] * n
    w.add_tokenizer_model("llama")
    w.add_token_list(tokens)
    w.add_token_scores([0.0] * len(tokens))
    w.add_token_types(types)
    w.add_unk_token_id(0)
    w.add_bos_token_id(1)
    w.add_eos_token_id(2)

    def matrix(name, rows, cols):
        x = rng.standard_normal((rows, cols), dtype=np.float32) * 0.02
        w.add_tensor(name, x.astype(np.float16) if f16 else x)

    def norm(name):
        w.add_tensor(name, np.ones(a.hidden_size, dtype=np.float32))

    h, kv = a.hidden_size, a.num_key_value_heads * a.head_dim
    matrix("token_embd.weight", a.vocab_size, h)  # tied: no output.weight
    for i in range(a.num_hidden_layers):
        b = f"blk.{i}."
        norm(b + "attn_norm.weight")
        matrix(b + "attn_q.weight", a.num_attention_heads * a.head_dim, h)
        matrix(b + "attn_k.weight", kv, h)
        matrix(b + "attn_v.weight", kv, h)
        matrix(b + "attn_output.weight", h, a.num_attention_heads * a.head_dim)
        norm(b + "ffn_norm.weight")
        matrix(b + "ffn_gate.weight", a.intermediate_size, h)
        matrix(b + "ffn_up.weight", a.intermediate_size, h)
        matrix(b + "ffn_down.weight", h, a.intermediate_size)
    norm("output_norm.weight")
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()


def model_file(out, variant):
    path = out / f"llama_{variant}.gguf"
    if path.exists():
        return path
    tmp = path.with_suffix(".tmp")
    if variant in ("f32", "f16"):
        write_gguf(tmp, variant == "f16")
    else:
        params = lc.llama_model_quantize_default_params()
        params.ftype = QUANT[variant]
        params.nthread = 2
        params.pure = True
        src = str(model_file(out, "f32")).encode()
        if lc.llama_model_quantize(src, str(tmp).encode(), ctypes.byref(params)):
            sys.exit(f"quantizing to {variant} failed")
    tmp.rename(path)
    return path


def repack_overrides():
    """Overrides putting the layer matrices in ggml's CPU_REPACK buffer type."""
    g, vp = libggml, ctypes.c_void_p
    g.ggml_backend_dev_by_type.restype = vp
    g.ggml_backend_dev_backend_reg.argtypes = [vp]
    g.ggml_backend_dev_backend_reg.restype = vp
    g.ggml_backend_reg_get_proc_address.argtypes = [vp, ctypes.c_char_p]
    g.ggml_backend_reg_get_proc_address.restype = vp
    g.ggml_backend_buft_name.argtypes = [vp]
    g.ggml_backend_buft_name.restype = ctypes.c_char_p
    cpu = g.ggml_backend_dev_by_type(0)  # GGML_BACKEND_DEVICE_TYPE_CPU
    reg = g.ggml_backend_dev_backend_reg(cpu)
    addr = g.ggml_backend_reg_get_proc_address(reg, b"ggml_backend_dev_get_extra_bufts")
    bufts = ctypes.CFUNCTYPE(ctypes.POINTER(vp), vp)(addr)(cpu)  # NULL-ended
    i = 0
    while bufts[i] and g.ggml_backend_buft_name(bufts[i]) != b"CPU_REPACK":
        i += 1
    if not bufts[i]:
        sys.exit("this ggml has no CPU_REPACK buffer type")
    return (BuftOverride * 2)(BuftOverride(MATRICES, bufts[i]), BuftOverride())


def make_batch(tokens, start):
    batch = lc.llama_batch_init(len(tokens), 0, 1)
    batch.n_tokens = len(tokens)
    for i, t in enumerate(tokens):
        batch.token[i], batch.pos[i] = t, start + i
        batch.n_seq_id[i], batch.seq_id[i][0], batch.logits[i] = 1, 0, 1
    return batch


def run(ctx, batch):
    if lc.llama_decode(ctx, batch) != 0:
        sys.exit("llama_decode failed")
    lc.llama_synchronize(ctx)


def timed(ctx, batch, before, reps):
    times = []
    for _ in range(reps + 1):
        before()
        t = time.perf_counter()
        run(ctx, batch)
        times.append(time.perf_counter() - t)
    return min(times[1:]), statistics.median(times[1:])


def main():
    out = Path(sys.argv[1])
    decode_reps, prefill_reps = int(sys.argv[2]), int(sys.argv[3])
    out.mkdir(parents=True, exist_ok=True)
    lc.llama_log_set(_quiet, None)
    lc.llama_backend_init()
    prompt = [i * 7919 % ARGS.vocab_size for i in range(SEQ)]
    prefill, step = make_batch(prompt, 0), make_batch([17], SEQ)
    for v in sys.argv[4:]:
        path = model_file(out, v)
        mparams = lc.llama_model_default_params()
        mparams.use_extra_bufts = False  # no AMX (see the docstring)
        if v == "q4_0":
            overrides = repack_overrides()
            mparams.tensor_buft_overrides = ctypes.addressof(overrides)
        model = lc.llama_model_load_from_file(str(path).encode(), mparams)
        if not model:
            sys.exit(f"loading {path} failed")
        cparams = lc.llama_context_default_params()
        cparams.n_ctx, cparams.n_batch, cparams.n_ubatch = SLOTS, SEQ, SEQ
        cparams.n_threads = cparams.n_threads_batch = 2
        cparams.no_perf = True
        ctx = lc.llama_init_from_model(model, cparams)
        if not ctx:
            sys.exit(f"making a context for {path} failed")
        mem = lc.llama_get_memory(ctx)

        def clear():
            lc.llama_memory_clear(mem, True)

        def drop_last():
            lc.llama_memory_seq_rm(mem, 0, SEQ, -1)

        clear()
        run(ctx, prefill)  # fills positions 0..127 for decode
        lo, med = timed(ctx, step, drop_last, decode_reps)
        print(f"{v}_decode_min {lo}\n{v}_decode_median {med}", flush=True)
        if prefill_reps > 0:
            lo, med = timed(ctx, prefill, clear, prefill_reps)
            print(f"{v}_prefill_min {lo}\n{v}_prefill_median {med}", flush=True)
        lc.llama_free(ctx)
        lc.llama_model_free(model)
    lc.llama_batch_free(prefill)
    lc.llama_batch_free(step)


if __name__ == "__main__":
    main()
