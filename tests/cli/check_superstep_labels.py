#!/usr/bin/env python3
"""check_superstep_labels.py STATS TRACE REPORT EXPECTED...: the statistics label every superstep
with its program step (issue 38, item 8) as EXPECTED lists them, one "program|step|compute sets"
each (compute sets joined by ", "); the trace names each labelled exchange slice for its step and
each compute slice for its compute sets; the HTML report's superstep table shows them. Exit 1
with the first difference otherwise."""
import html
import json
import sys

stats_path, trace_path, report_path, *expected = sys.argv[1:]
steps = json.load(open(stats_path))["supersteps"]
got = [f"{s.get('program')}|{s.get('step')}|{', '.join(s.get('compute', []))}" for s in steps]
if got != expected:
    sys.exit("supersteps:\n  " + "\n  ".join(got) + "\nexpected:\n  " + "\n  ".join(expected))

# A track's slices in order: a compute slice belongs to the superstep of the sync after it.
tracks = {}
for e in json.load(open(trace_path))["traceEvents"]:
    if e.get("ph") == "X" and e.get("cat") == "bsp":
        tracks.setdefault((e["pid"], e["tid"]), []).append(e)
by_phase = {}
for slices in tracks.values():
    slices.sort(key=lambda e: e["ts"])
    pending = []
    for e in slices:
        if e["args"]["kind"] == "compute":
            pending.append(e)
            continue
        by_phase.setdefault(e["args"]["phase"], []).extend(pending + [e])
        pending = []
    for e in pending:  # after the last sync: no superstep's
        if e["name"] != "compute" or "step" in e["args"]:
            sys.exit(f"trace: the compute slice after the last sync is labelled {e['name']!r}")
for index, s in enumerate(steps):
    for e in by_phase.get(s["phase"], []):
        kind = e["args"]["kind"]
        want = {"exchange": s["step"], "sync": "sync",
                "compute": ", ".join(s["compute"]) or "compute"}[kind]
        if e["name"] != want or e["args"].get("step") != s["step"]:
            sys.exit(f"trace: superstep {index}'s {kind} slice is named {e['name']!r} "
                     f"(step {e['args'].get('step')!r}), expected {want!r}")

page = open(report_path).read()
for s in steps:
    cell = "<td>" + html.escape(f"{s['program']}: {s['step']}", quote=True) + "</td>"
    if cell not in page.replace("&#39;", "&#x27;"):
        sys.exit(f"report: no cell {cell}")
print(f"{len(steps)} supersteps labelled in the statistics, the trace and the report")
