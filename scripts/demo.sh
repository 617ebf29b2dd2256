#!/usr/bin/env bash
# The main job: set everything up, build, and simulate the embedded demo program on a virtual
# IPU tile, printing its output and the run report. Extra arguments go to ipu-sim.
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
bash "$root/scripts/build.sh" >/dev/null
exec "$root/build/sim/ipu-sim" demo "$@"
