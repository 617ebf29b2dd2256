#!/usr/bin/env python3
"""check_example_stats.py STATS TRACE STEP...: an example's --stats and --trace reached its device:
the statistics label every superstep with its program step, some superstep's step starts with each
STEP given, the summary counts the flops the tiles executed and the example's own (model) flops,
and the trace holds the run's BSP slices. Exit 1 naming the first thing missing."""
import json
import sys

stats_path, trace_path, *steps = sys.argv[1:]
stats = json.load(open(stats_path))
supersteps = stats["supersteps"]
if not supersteps:
    sys.exit(f"{stats_path}: no supersteps")
unlabelled = [s["index"] for s in supersteps if not s.get("program") or not s.get("step")]
if unlabelled:
    sys.exit(f"{stats_path}: supersteps {unlabelled[:5]} have no program step")
for step in steps:
    if not any(s["step"].startswith(step) for s in supersteps):
        sys.exit(f"{stats_path}: no superstep of step '{step}'")
summary = stats["summary"]
for figure in ("flops", "model_flops"):
    if not summary.get(figure, 0) > 0:
        sys.exit(f"{stats_path}: summary.{figure} is {summary.get(figure)}")
events = json.load(open(trace_path))["traceEvents"]
if not any(e.get("ph") == "X" and e.get("cat") == "bsp" for e in events):
    sys.exit(f"{trace_path}: no BSP slices")
