#!/usr/bin/env python3
"""Sweeps the training main job's step time against IPU-Link bandwidth and chip generation,
and plots it.

    PYTHONPATH=build/python python3 examples/python/sweep_training.py [--out train_sweep.png]

Each point runs build/examples/train (data-parallel on an IPU-Machine: gradients reduced over
the IPU-Links every step) with the point's machine, given as the configuration file
Machine.dump writes, and reads the simulated time of its last step, and of that step's
collectives, from its report.
"""
import argparse
import json
import os
import subprocess
import tempfile

import virtual_ipu as vipu

here = os.path.dirname(os.path.abspath(__file__))
parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
parser.add_argument("--train", default=os.path.join(here, "..", "..", "build", "examples", "train"))
parser.add_argument("--steps", type=int, default=2)
parser.add_argument("--out", default="train_sweep.png")
parser.add_argument("--jobs", type=int, default=2)
args = parser.parse_args()


def microseconds(report, label):
    """The figure in microseconds on the line of train's report that starts with `label`."""
    for line in report.splitlines():
        if line.startswith(label):
            return float(line[len(label):].split("us")[0].split()[-1])
    raise ValueError(f"train printed no '{label}' line")


def train_step(machine):
    """Runs the training job on `machine` (one host thread: the sweep runs points side by
    side); the simulated time of its last step and of that step's collectives."""
    with tempfile.TemporaryDirectory() as work:
        config, stats = os.path.join(work, "machine.cfg"), os.path.join(work, "stats.json")
        machine.dump(config)
        done = subprocess.run([args.train, "--config", config, "--steps", str(args.steps),
                               "--threads", "1", "--stats", stats],
                              check=True, capture_output=True, text=True)
        with open(stats) as file:
            summary = json.load(file)["summary"]
    return {"step_us": microseconds(done.stdout, "a step (the last)"),
            "collectives_us": microseconds(done.stdout, "  collectives"),
            "model_tflops": summary.get("model_tflops"), "tflops": summary.get("tflops")}


rows = vipu.sweep(train_step, {"preset": ["m2000", "bow2000"],
                               "ipulink.bytes-per-second": [8e9, 16e9, 32e9, 64e9]},
                  jobs=args.jobs, dataframe=False)
for row in rows:
    print(f"{row['preset']:8} {row['ipulink.bytes-per-second'] / 1e9:5.0f} GB/s  "
          + (f"{row['step_us']:8.1f} us a step, collectives {row['collectives_us']:6.1f} us"
             if "error" not in row else row["error"]))
ax = vipu.plot.sweep(rows, "ipulink.bytes-per-second", "step_us", series="preset", logx=True)
ax.set_xlabel("IPU-Link bandwidth, each direction (bytes/s)")
ax.set_ylabel("simulated time a training step (us)")
ax.set_title("training main job, data-parallel on 4 chips")
ax.figure.tight_layout()
ax.figure.savefig(args.out)
print(f"plot: {args.out}")
