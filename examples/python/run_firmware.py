#!/usr/bin/env python3
"""Runs a firmware image on a machine from Python and reads its statistics.

    PYTHONPATH=build/python python3 examples/python/run_firmware.py [IMAGE] [--report run.html]

IMAGE defaults to the token ring the tests build (build/tests/token_ring.elf: 64 tiles pass a
token round a ring, a superstep a hop). Prints the run's figures and its busiest supersteps.
"""
import argparse
import os

import virtual_ipu as vipu

here = os.path.dirname(os.path.abspath(__file__))
parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
parser.add_argument("image", nargs="?",
                    default=os.path.join(here, "..", "..", "build", "tests", "token_ring.elf"))
parser.add_argument("--preset", default="mk2", choices=vipu.presets())
parser.add_argument("--tiles", type=int, default=64)
parser.add_argument("--report", help="write the HTML run report here")
args = parser.parse_args()

machine = vipu.Machine(args.preset, **{"chip.tiles": args.tiles})
print(machine)
try:
    result = machine.run(args.image)
except vipu.RunError as e:  # a fault, deadlock or cycle limit: the report says where
    raise SystemExit(f"{type(e).__name__}: {e}")

summary = result.summary
print(f"{result.outcome} (status {result.exit_status}) after {result.cycles} cycles, "
      f"{result.seconds * 1e6:.2f} us simulated, {result.instructions} instructions")
print(f"{summary['supersteps']} supersteps, {summary['exchange_bytes']} exchange bytes, "
      f"{summary['energy_joules'] * 1e6:.2f} uJ at {summary['watts']:.1f} W")
slowest = sorted(result.supersteps, key=lambda s: s["exchange"]["cycles"], reverse=True)[:3]
for step in slowest:
    print(f"  superstep {step['index']}: exchange {step['exchange']['cycles']} cycles, "
          f"compute up to {step['compute_cycles']['max']} cycles")
if args.report:
    result.report(args.report)
    print(f"report: {args.report}")
