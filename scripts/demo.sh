#!/usr/bin/env bash
# The main job: set everything up, build, and pre-train packed BERT (the tiny model) on a virtual
# IPU-Machine (M2000): two replicas, data-parallel, each a pipeline over two chips of 64 tiles
# (a layer a chip, each stage's forward recomputed in its backward), packed rows of synthetic
# sequences with Wikipedia's lengths, f16 weights rounded stochastically, LAMB's state sharded
# over the replicas in streaming memory; checked bit for bit against the host, printing its
# report with where a step's time goes (docs/bert.md). Extra arguments go to the example and
# override these (--steps S, --tiles N: 0 for every tile, --preset pod16, --layers-per-chip ...).
# The previous main job, the data-parallel perceptron, is build/examples/train.
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
bash "$root/scripts/build.sh" >/dev/null
# The demo's settings, each unless the arguments give it.
args=()
for default in "--preset m2000" "--layers-per-chip 1,1" "--tiles 64" "--steps 4" "--time-split"; do
  name=${default%% *}
  given=false
  for arg in "$@"; do
    [[ $arg == "$name" || $arg == "$name="* ]] && given=true
  done
  if ! $given; then
    if [[ $default == *" "* ]]; then args+=("$name" "${default#* }"); else args+=("$name"); fi
  fi
done
exec "$root/build/examples/bert" "${args[@]}" "$@"
