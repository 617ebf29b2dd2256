"""Plots: each written to a file, drawn from the run's or sweep's own figures."""
import math

import matplotlib
import pytest

matplotlib.use("Agg")

import virtual_ipu as vipu  # noqa: E402

RING = {"chip.tiles": 64}


@pytest.fixture(scope="module")
def ring(firmware):
    return vipu.Machine(**RING).run(firmware("token_ring.elf"))


def test_the_timeline_draws_each_phase_of_each_superstep(ring, tmp_path):
    path = tmp_path / "timeline.png"
    ax = vipu.plot.timeline(ring, path=path)
    assert path.stat().st_size > 5000
    bars = ax.patches
    compute = [b for b in bars if b.get_label() == "compute" or
               b.get_facecolor()[:3] == matplotlib.colors.to_rgb(vipu.plot.PHASE_COLOURS["compute"])]
    steps = ring.supersteps
    assert len(compute) == sum(1 for s in steps if s["compute_cycles"]["max"] > 0)
    # The bars end where the run's last exchange ends, no later than its last cycle.
    end = max(b.get_x() + b.get_width() for b in bars)
    assert end <= ring.cycles


def test_the_memory_heatmap_shows_each_tiles_sram_in_use(ring, tmp_path):
    path = tmp_path / "memory.png"
    ax = vipu.plot.memory_heatmap(ring, path=path, columns=32)
    assert path.stat().st_size > 5000
    grid = ax.images[0].get_array()
    memory = ring.stats["tile_memory"]
    assert grid.shape == (2, 32)
    for tile, free in zip(memory["tiles"], memory["free"]):
        assert grid[tile // 32, tile % 32] == pytest.approx(1 - free / memory["sram_bytes"])
    with pytest.raises(ValueError, match="chip 1 is not one of the machine's 1"):
        vipu.plot.memory_heatmap(ring, chip=1)


def test_a_sweep_plot_has_a_line_a_series(firmware, tmp_path):
    rows = vipu.sweep(firmware("token_ring.elf"), {"preset": ["mk2", "bow"],
                      "sync.internal-cycles": [150, 300, 600]}, machine=vipu.Machine(**RING),
                      dataframe=False)
    path = tmp_path / "sweep.png"
    ax = vipu.plot.sweep(rows, "sync.internal-cycles", "seconds", series="preset", path=path)
    assert path.stat().st_size > 5000
    lines = {line.get_label(): list(line.get_ydata()) for line in ax.get_lines()}
    assert lines["preset = bow"] == [r["seconds"] for r in rows if r["preset"] == "bow"]
    with pytest.raises(ValueError, match="no column 'watt'"):
        vipu.plot.sweep(rows, "sync.internal-cycles", "watt")


def test_a_run_without_records_has_no_timeline(firmware):
    totals = vipu.Machine(**RING).run(firmware("token_ring.elf"), stats=False)
    with pytest.raises(ValueError, match="run it with stats=True"):
        vipu.plot.timeline(totals)
