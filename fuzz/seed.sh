#!/usr/bin/env bash
# Seeds each target's corpus from every fixture of the repository, then
# minimises it (cargo fuzz cmin). Run from the repository root.
set -euo pipefail
cd "$(dirname "$0")"
mkdir -p corpus/import corpus/npy corpus/safetensors
find ../tests/fixtures -type f -name '*.mlxfn' -size -256k -exec cp {} corpus/import/ \;
find ../tests/fixtures -type f -name '*.npy' -size -64k -exec cp {} corpus/npy/ \;
find ../tests/fixtures -type f -name '*.safetensors' -size -256k -exec cp {} corpus/safetensors/ \;
for t in import npy safetensors; do
  RUSTC_BOOTSTRAP=1 nice -n 19 cargo fuzz cmin "$t" "corpus/$t" -- -rss_limit_mb=2048 -timeout=10
done
