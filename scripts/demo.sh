#!/usr/bin/env bash
# The main job: set everything up, build, and run a matrix product spread over all 1472 tiles
# of a virtual Mk2 IPU (inputs streamed from the host, result checked bit for bit against a
# host reference), printing its report. Extra arguments go to the example
# (--preset bow, --tiles N, --n COLUMNS, --k DEPTH).
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
bash "$root/scripts/build.sh" >/dev/null
exec "$root/build/examples/matmul" "$@"
