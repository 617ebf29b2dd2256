#!/usr/bin/env python3
"""check_trace.py TRACE.json [FLOWS] [--worker-runs N --worker-cycles C]: the BSP trace's slices on
each track follow one another without overlapping (times compared exactly, as decimals), and each
tile's last slice is compute (the phase after its last sync ends in compute or exit). With FLOWS:
exactly that many exchange flows, each a start ("s") and a finish ("f") with one id, the finish no
earlier than the start. With --worker-runs: exactly N worker slices (ipu-sim --trace-workers), none
overlapping another on its lane, each inside a compute slice of its tile's track, each on the lane
its worker names, and with --worker-cycles every one C cycles long. Exit 1 with the first problem
otherwise."""
import argparse
import json
import sys
from decimal import Decimal

parser = argparse.ArgumentParser()
parser.add_argument("trace")
parser.add_argument("flows", nargs="?", type=int)
parser.add_argument("--worker-runs", type=int)
parser.add_argument("--worker-cycles", type=int)
args = parser.parse_args()

events = json.load(open(args.trace), parse_float=Decimal)["traceEvents"]
tracks = {}
for e in events:
    if e.get("ph") == "X" and e.get("cat") == "bsp":
        tracks.setdefault((e["pid"], e["tid"]), []).append(e)
if not tracks:
    sys.exit("no BSP slices in the trace")
for key, slices in sorted(tracks.items()):
    slices.sort(key=lambda e: e["ts"])
    for a, b in zip(slices, slices[1:]):
        if a["ts"] + a["dur"] > b["ts"]:
            sys.exit(f"track {key}: {a['name']} at {a['ts']} + {a['dur']} overlaps {b['name']} at {b['ts']}")
    if slices[-1]["args"]["kind"] != "compute":
        sys.exit(f"track {key}: the last slice is {slices[-1]['name']}, not compute")

if args.flows is not None:
    starts = {e["id"]: e for e in events if e.get("ph") == "s"}
    ends = {e["id"]: e for e in events if e.get("ph") == "f"}
    if len(starts) != args.flows or starts.keys() != ends.keys():
        sys.exit(f"{len(starts)} flow starts and {len(ends)} finishes, expected {args.flows} of each")
    for i, s in starts.items():
        if ends[i]["ts"] < s["ts"] or s["args"] != ends[i]["args"]:
            sys.exit(f"flow {i}: finish {ends[i]} does not follow start {s}")

worker_runs = [e for e in events if e.get("ph") == "X" and e.get("cat") == "worker"]
if args.worker_runs is not None:
    if len(worker_runs) != args.worker_runs:
        sys.exit(f"{len(worker_runs)} worker slices, expected {args.worker_runs}")
    # A track's lanes are its tid, then one per worker: tid = track * (workers + 1) + w.
    lane_names = {(e["pid"], e["tid"]): e["args"]["name"] for e in events
                  if e.get("ph") == "M" and e.get("name") == "thread_name"}
    lanes = {}
    for r in worker_runs:
        lanes.setdefault((r["pid"], r["tid"]), []).append(r)
        name = lane_names.get((r["pid"], r["tid"]), "")
        if not name.endswith(f"worker {r['args']['worker']}"):
            sys.exit(f"worker {r['args']['worker']} of tile {r['args']['tile']} is on lane '{name}'")
        if args.worker_cycles is not None and r["args"]["cycles"] != args.worker_cycles:
            sys.exit(f"tile {r['args']['tile']} worker {r['args']['worker']}: {r['args']['cycles']} cycles, expected {args.worker_cycles}")
        track = [t for k, t in tracks.items() if k[0] == r["pid"] and r["tid"] - r["args"]["worker"] == k[1]]
        if not track or not any(s["args"]["kind"] == "compute" and s["ts"] <= r["ts"] and r["ts"] + r["dur"] <= s["ts"] + s["dur"]
                                for s in track[0]):
            sys.exit(f"tile {r['args']['tile']} worker {r['args']['worker']} at {r['ts']}: not inside a compute slice of its track")
    for key, runs in sorted(lanes.items()):
        runs.sort(key=lambda e: e["ts"])
        for a, b in zip(runs, runs[1:]):
            if a["ts"] + a["dur"] > b["ts"]:
                sys.exit(f"lane {key}: the run at {a['ts']} + {a['dur']} overlaps the next at {b['ts']}")
    print(f"{len(worker_runs)} worker runs on {len(lanes)} lanes, no overlaps")
print(f"{len(tracks)} tracks, {sum(len(s) for s in tracks.values())} slices, no overlaps")
