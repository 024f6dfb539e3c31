#!/usr/bin/env bash
# Seeds each target's corpus from every fixture of the repository, then
# minimises it (cargo fuzz cmin). Run from the repository root.
set -euo pipefail
shopt -s nullglob
cd "$(dirname "$0")"
mkdir -p corpus/import corpus/npy corpus/safetensors corpus/call_inputs
# call_inputs: the function's index byte, then each case's argument files.
i=0
for f in kwargs multi_trace gather_scatter shapeless; do
  for case in ../tests/fixtures/mlx/$f/*arg0.npy; do
    p=${case%arg0.npy}
    { printf "\\$(printf %o $i)"; cat "$p"arg*.npy "$p"kw_*.npy; } > "corpus/call_inputs/${f}_$(basename "$p")"
  done
  i=$((i + 1))
done
# Every fixture under its path (most fixtures are called fn.mlxfn).
seed() { # PATTERN MAX-SIZE TARGET
  find ../tests/fixtures -type f -name "$1" -size "-$2" | while read -r f; do
    cp "$f" "corpus/$3/$(echo "${f#../tests/fixtures/}" | tr / _)"
  done
}
seed '*.mlxfn' 256k import
seed '*.npy' 64k npy
seed '*.safetensors' 256k safetensors
for t in import npy safetensors call_inputs; do
  RUSTC_BOOTSTRAP=1 nice -n 19 cargo fuzz cmin "$t" "corpus/$t" -- -rss_limit_mb=2048 -timeout=10
done
