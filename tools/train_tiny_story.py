"""Prepare the training of the small model committed under models/tiny-story/
(the README's first command); the training itself runs in Rust.

    python tools/train_tiny_story.py [--out target/tiny-story-src]
    cargo run --release --example train_tiny_story -- target/tiny-story-src --steps 6000
    python tools/export_llm.py target/tiny-story-src models/tiny-story --max-kv 512 --min-slots 128 --prefill-block 64

The text is Jules Verne's "Around the World in Eighty Days" (public domain,
Project Gutenberg #103; the Gutenberg header and licence are cut off) as the
esaxx-rs crate on crates.io ships it (esaxx-rs-0.1.10/data/eighty.txt; `cargo
fetch` of tokenizers with default features downloads it). A byte-level BPE of
512 tokens is trained on it, and a 3-layer mlx-lm llama (hidden 128) is
built. Python MLX then exports two functions: `init.mlxfn` (no inputs -> the
initial parameters) and `step.mlxfn`, one AdamW step with MLX's update rule
(weight decay 0.01, no bias correction, as `mlx.optimizers.AdamW`):

    step(*params, *m, *v, lr[], batch[B, C + 1] int32) -> (loss, *params', *m', *v')

The backward pass is inside the trace as plain primitives. The Rust example
imports both and loops (about 6x faster per step than Python MLX on this CPU),
writing `model.safetensors` (bfloat16) for `export_llm.py`. `train.json`
names the parameters in the order the functions use.
"""

import argparse
import glob
import json
import os
import re
from pathlib import Path

import mlx.core as mx
import numpy as np
import mlx.nn as nn
from mlx.utils import tree_flatten, tree_unflatten
from mlx_lm.models import llama
from mlx_lm.utils import save_config

VOCAB = 512
CONTEXT = 96


def book():
    hits = glob.glob(os.path.expanduser("~/.cargo/registry/src/*/esaxx-rs-0.1.10/data/eighty.txt"))
    if not hits:
        raise SystemExit("eighty.txt not found: run `cargo fetch` with esaxx-rs 0.1.10 (tokenizers' default features)")
    text = Path(hits[0]).read_text(encoding="utf-8-sig")
    start = text.index("*** START OF THIS PROJECT GUTENBERG EBOOK")
    end = text.index("*** END OF THIS PROJECT GUTENBERG EBOOK")
    text = text[text.index("\n", start) + 1 : end]
    # paragraphs as single lines: hard-wrapped lines joined
    paras = [re.sub(r"\s+", " ", p).strip() for p in re.split(r"\n\s*\n", text)]
    return "\n".join(p for p in paras if p) + "\n"


def tokenizer(text, out):
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers

    tok = Tokenizer(models.BPE())
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tok.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(
        vocab_size=VOCAB, special_tokens=["<|endoftext|>"],
        initial_alphabet=pre_tokenizers.ByteLevel.alphabet(), show_progress=False,
    )
    tok.train_from_iterator(text.split("\n"), trainer)
    tok.save(str(out / "tokenizer.json"))
    (out / "tokenizer_config.json").write_text(json.dumps({
        "tokenizer_class": "PreTrainedTokenizerFast", "eos_token": "<|endoftext|>",
        "clean_up_tokenization_spaces": False,
    }, indent=1))
    return tok


CONFIG = dict(
    model_type="llama", hidden_size=128, num_hidden_layers=3, intermediate_size=384,
    num_attention_heads=4, num_key_value_heads=4, rms_norm_eps=1e-5, vocab_size=VOCAB,
    max_position_embeddings=512, tie_word_embeddings=True, rope_theta=10000.0, eos_token_id=0,
)
BATCH = 16
# AdamW as mlx.optimizers.AdamW(learning_rate, weight_decay=0.01) with its defaults.
BETAS, EPS, WEIGHT_DECAY = (0.9, 0.999), 1e-8, 0.01


def export_training(model, out):
    """Writes init.mlxfn and step.mlxfn; returns the parameter names in order."""
    names = [k for k, _ in tree_flatten(model.parameters())]
    params = [v for _, v in tree_flatten(model.parameters())]
    n = len(names)

    def loss_fn(model, x, y):
        return nn.losses.cross_entropy(model(x), y, reduction="mean")

    loss_and_grad = nn.value_and_grad(model, loss_fn)
    (b1, b2) = BETAS

    def step(*a):
        p, m, v, lr, batch = a[:n], a[n : 2 * n], a[2 * n : 3 * n], a[3 * n], a[3 * n + 1]
        model.update(tree_unflatten(list(zip(names, p))))
        loss, grads = loss_and_grad(model, batch[:, :-1], batch[:, 1:])
        grads = dict(tree_flatten(grads))
        new_p, new_m, new_v = [], [], []
        for name, pi, mi, vi in zip(names, p, m, v):
            g = grads[name]
            mi = b1 * mi + (1 - b1) * g
            vi = b2 * vi + (1 - b2) * mx.square(g)
            new_p.append(pi * (1 - lr * WEIGHT_DECAY) - lr * mi / (mx.sqrt(vi) + EPS))
            new_m.append(mi)
            new_v.append(vi)
        return (loss, *new_p, *new_m, *new_v)

    def init():
        return tuple(params)

    mx.export_function(str(out / "init.mlxfn"), init)
    zeros = [mx.zeros_like(x) for x in params]
    batch = mx.zeros((BATCH, CONTEXT + 1), mx.int32)
    mx.export_function(str(out / "step.mlxfn"), step, *params, *zeros, *zeros, mx.array(0.0), batch)
    return names


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", default="target/tiny-story-src")
    args = ap.parse_args()
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    text = book()
    tok = tokenizer(text, out)
    ids = np.array(tok.encode(text).ids, np.int32)
    np.save(out / "tokens.npy", ids)
    print(f"{len(text)} characters, {ids.size} tokens")
    mx.random.seed(0)
    model = llama.Model(llama.ModelArgs.from_dict(CONFIG))
    print(f"{sum(v.size for _, v in tree_flatten(model.parameters()))} parameters")
    names = export_training(model, out)
    save_config(dict(CONFIG, torch_dtype="bfloat16"), out / "config.json")
    (out / "train.json").write_text(json.dumps({
        "names": names, "batch": BATCH, "context": CONTEXT, "learning_rate": 3e-3, "warmup_steps": 200,
    }, indent=1))
    print(f"wrote {out}: init.mlxfn, step.mlxfn, tokens.npy, train.json, config.json, tokenizer")


if __name__ == "__main__":
    main()
