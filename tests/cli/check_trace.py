#!/usr/bin/env python3
"""check_trace.py TRACE.json [FLOWS]: the BSP trace's slices on each track follow one another without
overlapping (times compared exactly, as decimals), and each tile's last slice is compute (the
phase after its last sync ends in compute or exit). With FLOWS: exactly that many exchange
flows, each a start ("s") and a finish ("f") with one id, the finish no earlier than the start.
Exit 1 with the first problem otherwise."""
import json
import sys
from decimal import Decimal

events = json.load(open(sys.argv[1]), parse_float=Decimal)["traceEvents"]
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
    if slices[-1]["name"] != "compute":
        sys.exit(f"track {key}: the last slice is {slices[-1]['name']}, not compute")
if len(sys.argv) > 2:
    starts = {e["id"]: e for e in events if e.get("ph") == "s"}
    ends = {e["id"]: e for e in events if e.get("ph") == "f"}
    if len(starts) != int(sys.argv[2]) or starts.keys() != ends.keys():
        sys.exit(f"{len(starts)} flow starts and {len(ends)} finishes, expected {sys.argv[2]} of each")
    for i, s in starts.items():
        if ends[i]["ts"] < s["ts"] or s["args"] != ends[i]["args"]:
            sys.exit(f"flow {i}: finish {ends[i]} does not follow start {s}")
print(f"{len(tracks)} tracks, {sum(len(s) for s in tracks.values())} slices, no overlaps")
