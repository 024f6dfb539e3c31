"""Prompt and generation speed of `mlxfn generate` beside mlx_lm on CPU, in one run.

    python tools/bench_llm.py [--skip-build] [--models tiny-story,smollm]

Models: the committed models/tiny-story (its source folder target/tiny-story-src
from tools/train_tiny_story.py is needed for mlx-lm's side), and a
SmolLM-135M-shaped llama with random bfloat16 weights (hidden 576, 30 layers,
9 heads / 3 KV heads, vocab 49152) written into target/bench/ (never
committed). Both sides decode greedily from the same prompt; the token ids are
compared and the speeds printed with their ratio (Rust / mlx-lm).
"""

import argparse
import json
import subprocess
import sys
import time
from pathlib import Path

import mlx.core as mx
from mlx.utils import tree_flatten

REPO = Path(__file__).resolve().parents[1]
BENCH = REPO / "target" / "bench"
PROMPT = (
    "Mr. Phileas Fogg lived, in 1872, at No. 7, Saville Row, Burlington Gardens, the house in which "
    "Sheridan died in 1814. He was one of the most noticeable members of the Reform Club, though he "
    "seemed always to avoid attracting attention; an enigmatical personage, about whom little was known, "
    "except that he was a polished man of the world. "
) * 2
MAX_TOKENS = 128

SMOLLM = dict(
    model_type="llama", hidden_size=576, num_hidden_layers=30, intermediate_size=1536,
    num_attention_heads=9, num_key_value_heads=3, rms_norm_eps=1e-5, vocab_size=49152,
    max_position_embeddings=2048, tie_word_embeddings=True, rope_theta=10000.0,
    eos_token_id=0, torch_dtype="bfloat16",
)


def smollm_src():
    from mlx_lm.models import llama
    from mlx_lm.utils import save_config
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers

    src = BENCH / "smollm-src"
    if (src / "model.safetensors").exists():
        return src
    src.mkdir(parents=True, exist_ok=True)
    mx.random.seed(0)
    model = llama.Model(llama.ModelArgs.from_dict(SMOLLM))
    model.set_dtype(mx.bfloat16)
    mx.save_safetensors(str(src / "model.safetensors"), dict(tree_flatten(model.parameters())))
    save_config(SMOLLM, src / "config.json")
    # a byte-level BPE with SmolLM's vocabulary size: the 256 byte tokens,
    # then placeholder tokens up to 49152 (random weights make any id likely)
    alphabet = pre_tokenizers.ByteLevel.alphabet()
    vocab = {"<|endoftext|>": 0}
    for ch in sorted(alphabet):
        vocab[ch] = len(vocab)
    while len(vocab) < SMOLLM["vocab_size"]:
        vocab[f"tok{len(vocab)}"] = len(vocab)
    tok = Tokenizer(models.BPE(vocab=vocab, merges=[]))
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tok.decoder = decoders.ByteLevel()
    tok.save(str(src / "tokenizer.json"))
    (src / "tokenizer_config.json").write_text(json.dumps({"eos_token": "<|endoftext|>"}))
    return src


def export(src, out, *extra):
    if not (out / "model.mlxfn").exists():
        subprocess.run([sys.executable, str(REPO / "tools" / "export_llm.py"), str(src), str(out), *extra], check=True)


def mlx_lm_run(src):
    from mlx_lm import load, stream_generate

    model, tokenizer = load(str(src))
    ids = tokenizer.encode(PROMPT)
    last, tokens = None, []
    for r in stream_generate(model, tokenizer, ids, max_tokens=MAX_TOKENS):
        last = r
        tokens.append(r.token)
    return dict(prompt_tokens=len(ids), tokens=tokens, prompt_tps=last.prompt_tps, generation_tps=last.generation_tps)


def rust_run(out):
    cmd = [str(REPO / "target" / "release" / "mlxfn"), "generate", str(out), "--prompt", PROMPT,
           "--max-tokens", str(MAX_TOKENS), "--json", "--no-chat-template"]
    r = subprocess.run(cmd, check=True, capture_output=True, text=True)
    return json.loads(r.stdout)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--skip-build", action="store_true")
    ap.add_argument("--models", default="tiny-story,smollm")
    args = ap.parse_args()
    if not args.skip_build:
        subprocess.run(["cargo", "build", "--release", "-p", "mlxfn"], cwd=REPO, check=True)
    mx.set_default_device(mx.cpu)
    rows = []
    for name in args.models.split(","):
        if name == "tiny-story":
            src, out = REPO / "target" / "tiny-story-src", REPO / "models" / "tiny-story"
        else:
            src, out = smollm_src(), BENCH / "smollm"
            export(src, out, "--max-kv", "1024", "--min-slots", "256", "--prefill-block", "128")
        py = mlx_lm_run(src)
        rs = rust_run(out)
        same = rs["tokens"] == py["tokens"]
        rows.append((name, py, rs, same))
    print(f"{'model':<12} {'side':<8} {'prompt tok':>10} {'prompt tok/s':>13} {'gen tok':>8} {'gen tok/s':>10}")
    for name, py, rs, same in rows:
        for side, r in (("mlx-lm", py), ("mlxfn", rs)):
            print(f"{name:<12} {side:<8} {len(rs['prompt_tokens']) if side == 'mlxfn' else r['prompt_tokens']:>10} "
                  f"{r['prompt_tps']:>13.1f} {len(r['tokens']):>8} {r['generation_tps']:>10.1f}")
        print(f"{name:<12} ratio mlxfn/mlx-lm: prompt {rs['prompt_tps'] / py['prompt_tps']:.2f}x, "
              f"generation {rs['generation_tps'] / py['generation_tps']:.2f}x; same token ids: {same}")


if __name__ == "__main__":
    main()
