#!/usr/bin/env bash
# The main job: set everything up, build, and train a model data-parallel on a virtual
# IPU-Machine (M2000: 4 chips, all 1472 tiles of each; f16 with stochastic rounding, gradients
# reduced over the IPU-Links, Adam's moments in streaming memory), checked bit for bit against
# the host, printing its report. Extra arguments go to the example (--steps S, --tiles N,
# --preset pod16, --seed N). The matmul example is build/examples/matmul.
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
bash "$root/scripts/build.sh" >/dev/null
exec "$root/build/examples/train" "$@"
