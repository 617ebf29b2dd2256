#!/usr/bin/env python3
"""check_energy.py STATS.json: the statistics' energy agrees with itself and with the
configuration, each figure recomputed here from the others:
- each superstep's watts are its joules over its seconds; the energy block's superstep summary
  is their count, sum, mean (joules over seconds) and peak;
- a superstep's static joules are its span x its chips x (tiles x energy.tile.static +
  energy.chip.static), and what is left, its dynamic energy, covers at least its exchange bytes
  and columns crossed and its barrier's arrivals at their prices;
- the supersteps' bytes x columns crossed sum to the chips' exchange.distance line;
- the tiles' dynamic energy (energy.tiles) sums to the chips' tile.* lines;
- the supersteps' tile energy (their dynamic energy less exchange and barrier) is at most the
  tiles' total and most of it: the tail after the last sync is short."""
import json
import math
import sys

s = json.load(open(sys.argv[1]))
config, energy = s["config"], s["energy"]
steps = s["supersteps"]
assert len(steps) > 1, "expected several supersteps"


def close(a, b, what, rel=1e-9):
    assert math.isclose(a, b, rel_tol=rel, abs_tol=1e-15), f"{what}: {a} != {b}"


chip_watts = config["chip.tiles"] * config["energy.tile.static"] + config["energy.chip.static"]
tile_energy_in_steps = 0.0
for i, step in enumerate(steps):
    e = step["energy"]
    if e["seconds"] > 0:
        close(e["watts"], e["joules"] / e["seconds"], f"superstep {i} watts")
    chips = 1 if step["chip"] >= 0 else s["machine"]["chips"]
    static = e["seconds"] * chips * chip_watts
    dynamic = e["joules"] - static
    exchange = (step["exchange"]["bytes"] * config["energy.exchange.byte"] +
                step["exchange"]["column_bytes"] * config["energy.exchange.byte-column"]) * 1e-12
    barrier = (step["tiles"] * config["energy.sync.arrival"] if step["chip"] >= 0
               else chips * config["energy.sync.external"]) * 1e-12
    assert dynamic >= exchange + barrier - 1e-15, f"superstep {i}: dynamic {dynamic} too small"
    tile_energy_in_steps += dynamic - exchange - barrier

summary = energy["supersteps"]
assert summary["count"] == len(steps)
total = sum(st["energy"]["joules"] for st in steps)
seconds = sum(st["energy"]["seconds"] for st in steps)
close(summary["joules"], total, "superstep joules")
close(summary["mean_watts"], total / seconds, "mean superstep watts")
peak = max(range(len(steps)), key=lambda i: steps[i]["energy"]["watts"])
close(summary["peak_watts"], steps[peak]["energy"]["watts"], "peak watts")

# The distance term: the supersteps' byte-columns are the chips' exchange.distance count.
columns = sum(st["exchange"]["column_bytes"] for st in steps)
priced = sum(line["count"] for chip in energy["chips"] for line in chip["actions"]
             if line["action"] == "exchange.distance")
close(columns, priced, "byte-columns of the supersteps against the chips' distance line")
assert columns > 0, "expected words across exchange columns"

tiles = sum(energy["tiles"]["dynamic_joules"])
lines = sum(line["joules"] for chip in energy["chips"] for line in chip["actions"]
            if line["action"].startswith("tile."))
close(tiles, lines, "tiles' dynamic energy against the chips' tile lines")
assert tile_energy_in_steps <= tiles * (1 + 1e-9), (tile_energy_in_steps, tiles)
assert tile_energy_in_steps >= 0.5 * tiles, (tile_energy_in_steps, tiles)
print(f"ok: {len(steps)} supersteps, {total:.3e} J, peak {summary['peak_watts']:.1f} W "
      f"(superstep {peak}), tiles {tiles:.3e} J of which {tile_energy_in_steps:.3e} J in supersteps")
