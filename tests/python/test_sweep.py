"""Sweeps from Python: rows in grid order equal to single runs, failing points, refused grids."""
import os

import pytest

import virtual_ipu as vipu

RING = {"chip.tiles": 64}


def test_an_image_sweep_gives_a_row_a_point_in_grid_order(firmware):
    image = firmware("token_ring.elf")
    rows = vipu.sweep(image, {"preset": ["mk2", "bow"], "sync.internal-cycles": [150, 600]},
                      machine=vipu.Machine(**RING), jobs=2, dataframe=False)
    assert [(r["preset"], r["sync.internal-cycles"]) for r in rows] == [
        ("mk2", 150), ("mk2", 600), ("bow", 150), ("bow", 600)]
    alone = vipu.Machine("bow", **RING, **{"sync.internal-cycles": 600}).run(image)
    assert rows[3]["cycles"] == alone.cycles and rows[3]["energy_joules"] == alone.summary["energy_joules"]
    # A token ring computes in integers: no flops, none a watt.
    assert rows[3]["flops"] == alone.summary["flops"] == 0
    assert rows[3]["tflops_per_watt"] == 0 and rows[3]["watts_per_chip"] > 0
    assert all(r["outcome"] == "exited" and "error" not in r for r in rows)
    assert rows[1]["cycles"] > rows[0]["cycles"]  # a longer sync costs cycles
    # The same cycles at Bow's clock take less time than at Mk2's.
    assert rows[2]["seconds"] / rows[2]["cycles"] < rows[0]["seconds"] / rows[0]["cycles"]


def test_a_function_runs_in_its_own_process_and_a_failing_point_says_why():
    parent = os.getpid()

    def figures(machine):
        if machine["chip.tiles"] == 32:
            raise ValueError("no 32-tile chips today")
        return {"twice": 2 * machine["chip.tiles"], "pid": os.getpid()}

    rows = vipu.sweep(figures, {"chip.tiles": [16, 32, 64]}, jobs=2, dataframe=False)
    assert [r.get("twice") for r in rows] == [32, None, 128]
    assert rows[1]["error"] == "ValueError: no 32-tile chips today"
    assert all(r["pid"] != parent for r in (rows[0], rows[2]))


def test_a_run_that_fails_is_a_row_with_its_outcome(firmware):
    rows = vipu.sweep(firmware("token_ring.elf"), {"sync.internal-cycles": [150, 300]},
                      machine=vipu.Machine(**RING), max_cycles=300, dataframe=False)
    assert all(r["outcome"] == "cycle limit" and r["error"].startswith("cycle limit: ") for r in rows)


def test_a_bad_grid_is_refused_before_any_point_runs(tmp_path):
    ran = tmp_path / "ran"

    def mark(machine):
        ran.write_text("yes")
        return {}

    with pytest.raises(ValueError, match=r"sweep point \{'chip.tiles': 'many'\}: bad value 'many'"):
        vipu.sweep(mark, {"chip.tiles": [64, "many"]})
    with pytest.raises(ValueError, match="unknown parameter 'chip.tilez'"):
        vipu.sweep(mark, {"chip.tilez": [64]})
    with pytest.raises(ValueError, match="must be a list of values"):
        vipu.sweep(mark, {"chip.tiles": 64})
    assert not ran.exists()
