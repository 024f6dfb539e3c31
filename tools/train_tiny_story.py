"""Train the small model committed under models/tiny-story/ (the README's first command).

    python tools/train_tiny_story.py [--minutes 15] [--out target/tiny-story-src]
    python tools/export_llm.py target/tiny-story-src models/tiny-story --max-kv 512 --min-slots 128 --prefill-block 64

The text is Jules Verne's "Around the World in Eighty Days" (public domain,
Project Gutenberg #103; the Gutenberg header and licence are cut off) as the
esaxx-rs crate on crates.io ships it (esaxx-rs-0.1.10/data/eighty.txt; `cargo
fetch` of tokenizers with default features downloads it). A byte-level BPE of
512 tokens is trained on it, then a 3-layer mlx-lm llama (hidden 96) for a
fixed budget of CPU time (process time, so a busy machine does not shorten
training) with MLX on the CPU. Weights are saved in bfloat16 every 50 steps
and at the end.
"""

import argparse
import glob
import json
import math
import os
import re
import time
from pathlib import Path

import mlx.core as mx
import mlx.nn as nn
import mlx.optimizers as optim
from mlx.utils import tree_flatten
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


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--minutes", type=float, default=15, help="budget in CPU minutes of this process")
    ap.add_argument("--out", default="target/tiny-story-src")
    args = ap.parse_args()
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    text = book()
    tok = tokenizer(text, out)
    ids = mx.array(tok.encode(text).ids, mx.int32)
    print(f"{len(text)} characters, {ids.size} tokens")

    config = dict(
        model_type="llama", hidden_size=96, num_hidden_layers=3, intermediate_size=256,
        num_attention_heads=4, num_key_value_heads=4, rms_norm_eps=1e-5, vocab_size=VOCAB,
        max_position_embeddings=512, tie_word_embeddings=True, rope_theta=10000.0, eos_token_id=0,
    )
    mx.random.seed(0)
    model = llama.Model(llama.ModelArgs.from_dict(config))
    n_params = sum(v.size for _, v in tree_flatten(model.parameters()))
    print(f"{n_params} parameters")

    batch = 16
    budget = args.minutes * 60
    lr = 3e-3
    opt = optim.AdamW(learning_rate=lr, weight_decay=0.01)

    def loss_fn(model, x, y):
        return nn.losses.cross_entropy(model(x), y, reduction="mean")

    step_fn = nn.value_and_grad(model, loss_fn)

    start = time.process_time()
    step = 0
    while True:
        elapsed = time.process_time() - start
        if elapsed > budget:
            break
        # cosine decay over the wall-clock budget, 30 s warm-up
        frac = elapsed / budget
        opt.learning_rate = lr * min(1.0, elapsed / 30) * 0.5 * (1 + math.cos(math.pi * frac))
        starts = mx.random.randint(0, ids.size - CONTEXT - 1, (batch,))
        idx = starts[:, None] + mx.arange(CONTEXT + 1)[None]
        chunk = ids[idx]
        loss, grads = step_fn(model, chunk[:, :-1], chunk[:, 1:])
        opt.update(model, grads)
        mx.eval(model.parameters(), opt.state, loss)
        if step % 10 == 0:
            print(f"step {step} {elapsed:.0f} cpu-s loss {loss.item():.3f}", flush=True)
        if step % 50 == 0:
            save(model, config, out)
        step += 1
    print(f"{step} steps in {time.process_time() - start:.0f} cpu-s, last loss {loss.item():.3f}")
    save(model, config, out)


def save(model, config, out):
    params = {k: v.astype(mx.bfloat16) for k, v in tree_flatten(model.parameters())}
    mx.save_safetensors(str(out / "model.safetensors"), params)
    save_config(dict(config, torch_dtype="bfloat16"), out / "config.json")


if __name__ == "__main__":
    main()
