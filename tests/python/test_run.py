"""Runs from Python: the same results as ipu-sim's runs of the same images, and each way a run
ends or is refused."""
import json
import os
import signal
import threading
import time

import pytest

import virtual_ipu as vipu

RING = {"chip.tiles": 64}


def test_a_run_equals_ipu_sims_bit_for_bit(firmware, cli_stats):
    image = firmware("token_ring.elf")
    result = vipu.Machine(**RING).run(image)
    status, stats = cli_stats(image, "--chip.tiles", "64")
    assert status == 0 and result.outcome == "exited" and result.exit_status == 0
    assert result.stats == stats
    assert result.cycles == stats["cycles"] > 0 and result.instructions == stats["instructions"]
    assert len(result.supersteps) == stats["summary"]["supersteps"] > 0
    assert result.seconds == pytest.approx(result.cycles / 1.325e9, rel=1e-3)
    assert json.loads(json.dumps(result.stats)) == result.stats
    assert result.config["chip.tiles"] == 64 and "cycles" in result.text


def test_thread_counts_and_interpreters_change_nothing(firmware):
    image = firmware("reduce_tree.elf")
    machine = vipu.Machine(**RING)
    one = machine.run(image, threads=1)
    assert machine.run(image, threads=2).stats == one.stats
    assert machine.run(image, interpreter="general").stats == one.stats


def test_a_run_without_records_keeps_the_totals(firmware):
    machine = vipu.Machine(**RING)
    full = machine.run(firmware("token_ring.elf"))
    totals = machine.run(firmware("token_ring.elf"), stats=False)
    assert (totals.cycles, totals.instructions) == (full.cycles, full.instructions)
    assert totals.summary["supersteps"] == full.summary["supersteps"] and totals.supersteps == []


def test_an_exit_status_is_a_result_not_an_error(firmware, ipu_sim):
    image = firmware("exit_status_8.elf")
    result = vipu.Machine(**{"chip.tiles": 8}).run(image)
    status, _, _ = ipu_sim("run", image, "--chip.tiles", "8")
    assert result.outcome == "exited" and result.exit_status == status != 0


def test_a_fault_raises_with_the_report(firmware):
    with pytest.raises(vipu.TileFault) as raised:
        vipu.Machine(**{"chip.tiles": 1}).run(firmware("null_deref.elf"))
    assert "load access fault at pc 0x" in str(raised.value)
    assert "in main at null_deref.c:4" in str(raised.value)
    assert raised.value.result.outcome == "fault" and raised.value.result.cycles > 0


def test_a_deadlock_raises_naming_where_each_tile_waits(firmware):
    with pytest.raises(vipu.Deadlock, match=r"tile 1 waits in ipu.sync on group 1 since cycle \d+"):
        vipu.Machine(**{"chip.tiles": 4, "sync.groups": "1:1-2"}).run(
            firmware("deadlock_groups.elf"))


def test_the_cycle_limit_raises(firmware):
    with pytest.raises(vipu.CycleLimit) as raised:
        vipu.Machine(**RING).run(firmware("token_ring.elf"), max_cycles=500)
    assert raised.value.result.outcome == "cycle limit" and "500" in str(raised.value)
    assert isinstance(raised.value, vipu.RunError) and isinstance(raised.value, RuntimeError)


def test_bad_images_and_options_are_refused(firmware, tmp_path):
    machine = vipu.Machine(**RING)
    junk = tmp_path / "junk.elf"
    junk.write_bytes(b"not an elf at all")
    with pytest.raises(vipu.ImageError, match="junk.elf"):
        machine.run(junk)
    with pytest.raises(vipu.ImageError, match="missing.elf"):
        machine.run(tmp_path / "missing.elf")
    with pytest.raises(ValueError, match="bad value 'lots' for max-cycles"):
        machine.run(firmware("token_ring.elf"), max_cycles="lots")
    with pytest.raises(ValueError, match=r"unknown parameter 'thread' \(did you mean threads"):
        machine.run(firmware("token_ring.elf"), thread=2)
    with pytest.raises(ValueError, match="--interpreter must be fast or general"):
        machine.run(firmware("token_ring.elf"), interpreter="quick")


def test_the_html_report_is_written(firmware, tmp_path):
    result = vipu.Machine(**RING).run(firmware("token_ring.elf"))
    path = tmp_path / "run.html"
    result.report(path, title="ring of 64")
    html = path.read_text()
    assert html.startswith("<!DOCTYPE html>") and "ring of 64" in html and len(html) > 10000


def test_ctrl_c_stops_a_run_and_leaves_no_child(firmware):
    # rank_ring_long runs for minutes; Ctrl-C a second in.
    timer = threading.Timer(1.0, os.kill, (os.getpid(), signal.SIGINT))
    timer.start()
    started = time.monotonic()
    with pytest.raises(KeyboardInterrupt):
        vipu.Machine("m2000").run(firmware("rank_ring_long.elf"))
    assert time.monotonic() - started < 30
    with pytest.raises(ChildProcessError):  # the run's child was killed and reaped
        os.waitpid(-1, os.WNOHANG)


def test_the_gil_is_released_while_a_machine_runs(firmware):
    ticks = []
    stop = threading.Event()

    def tick():
        while not stop.is_set():
            ticks.append(1)
            time.sleep(0.001)

    thread = threading.Thread(target=tick)
    thread.start()
    vipu.Machine(**RING).run(firmware("token_ring.elf"), interpreter="general")
    stop.set()
    thread.join()
    assert len(ticks) > 10
