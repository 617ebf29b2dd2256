"""The SDK from Python: graphs with C codelets, NumPy data through streams and tensors, the
planned matmul on an M2000's replicas, each checked against NumPy; and the errors."""
import os
import signal
import threading

import numpy as np
import pytest

import virtual_ipu as vipu

AXPY = r"""
#include <stdint.h>
#include "ipu.h"
/* out[i] = k * x[i] + y[i], k a whole number */
struct axpy_fields { const float *x, *y; float *out; uint32_t n, k; };
void axpy(const struct axpy_fields *v) {
  for (uint32_t i = 0; i < v->n; ++i) v->out[i] = (float)v->k * v->x[i] + v->y[i];
}
"""
FIELDS = [("x", "input", np.float32), ("y", "input", np.float32), ("out", "output", np.float32),
          ("n", "scalar", None), ("k", "scalar", None)]


def axpy_graph(tiles=4, n=1000, replicas=1, machine="mk2"):
    g = vipu.Graph(vipu.Target(machine, tiles=tiles, replicas=replicas))
    g.add_codelet("axpy", FIELDS, source=AXPY)
    x, y, out = (g.add_variable(name, (n,), np.float32) for name in ("x", "y", "out"))
    cs = g.add_compute_set("axpy")
    per = n // tiles
    for tensor in (x, y):
        g.map_evenly(tensor, 0, tiles)
    g.set_tile_mapping(out, [(t * per, (t + 1) * per, t) for t in range(tiles)])
    for t in range(tiles):
        piece = slice(t * per, (t + 1) * per)
        g.add_vertex(cs, "axpy", t, {"x": x[piece], "y": y[piece], "out": out[piece], "n": per, "k": 3})
    g.add_host_stream("x_in", np.float32, n, to_device=True)
    g.add_host_stream("out_back", np.float32, n, to_device=False)
    program = vipu.Sequence(vipu.HostWrite("x_in", x), vipu.Execute(cs), vipu.HostRead(out, "out_back"))
    return g, program


def test_a_codelet_from_source_runs_over_tiles_against_numpy():
    g, program = axpy_graph()
    exe = vipu.compile(g, program)
    assert exe.programs == ["main"]
    x = np.arange(1000, dtype=np.float32) * 0.5
    y = np.linspace(-3, 3, 1000, dtype=np.float32)
    with vipu.Device(exe) as device:
        device.write_tensor("y", y)
        out = device.run("main", x_in=x)["out_back"]
        np.testing.assert_array_equal(out, np.float32(3) * x + y)
        np.testing.assert_array_equal(device.read_tensor("out"), out)
        assert device.last_run["cycles"] > 0 and device.last_run["energy_joules"] > 0
        assert device.last_run["flops"] == 2 * 1000  # a multiply and an add an element
        # Again with new data: the device keeps its state (y) from run to run.
        out = device.run("main", x_in=-x)["out_back"]
        np.testing.assert_array_equal(out, np.float32(-3) * x + y)
        stats = device.stats()
        assert stats["summary"]["cycles"] >= device.last_run["cycles"]
        assert stats["config"]["chip.tiles"] == 4


def test_tensors_round_trip_in_every_dtype():
    g = vipu.Graph(vipu.Target("mk2", tiles=2))
    values = {np.float32: np.linspace(-1e6, 1e6, 10, dtype=np.float32),
              np.float16: np.array([0.5, -2, 65504, 1e-4, 0, -0.0, 3.14, 1, 2, 7], dtype=np.float16),
              np.int32: np.array([-(2**31), 2**31 - 1, 0, -1, 5, 6, 7, 8, 9, 10], dtype=np.int32),
              np.uint32: np.array([2**32 - 1, 0, 1, 2, 3, 4, 5, 6, 7, 8], dtype=np.uint32),
              np.uint8: np.arange(250, 260, dtype=np.uint16).astype(np.uint8).reshape(2, 5)}
    for dtype, value in values.items():
        t = g.add_variable(np.dtype(dtype).name, value.shape, dtype)
        g.map_evenly(t, 0, 2, grain=4 if dtype == np.uint8 else 2)
    exe = vipu.compile(g, vipu.Sequence())
    with vipu.Device(exe) as device:
        for dtype, value in values.items():
            device.write_tensor(np.dtype(dtype).name, value)
        for dtype, value in values.items():
            back = device.read_tensor(np.dtype(dtype).name)
            assert back.dtype == value.dtype and back.shape == value.shape
            np.testing.assert_array_equal(back, value)


def test_a_data_parallel_matmul_on_an_m2000_equals_numpy():
    m, k, n, replicas = 32, 64, 48, 4
    g = vipu.Graph(vipu.Target("m2000", tiles=16, replicas=replicas))
    a = g.add_variable("a", (m, k), np.float16)
    b = g.add_variable("b", (k, n), np.float16)
    g.map_evenly(a, 0, 16, grain=2)
    g.map_evenly(b, 0, 16, grain=2)
    g.add_host_stream("a_in", np.float16, m * k, to_device=True)
    g.add_host_stream("c_out", np.float32, m * n, to_device=False)
    program = vipu.Sequence(vipu.HostWrite("a_in", a))
    c = vipu.ops.matmul(g, program, a, b)
    assert c.shape == (m, n) and c.dtype == np.float32
    program = vipu.Sequence(program, vipu.HostRead(c, "c_out"))
    exe = vipu.compile(g, program)
    rng = np.random.default_rng(7)
    a_rows = rng.integers(-4, 5, size=(replicas, m, k)).astype(np.float16)  # exact in f16 and f32
    b_value = rng.integers(-4, 5, size=(k, n)).astype(np.float16)
    with vipu.Device(exe) as device:
        device.write_tensor("b", b_value)
        c_out = device.run("main", a_in=a_rows.reshape(replicas, -1))["c_out"]
    assert c_out.shape == (replicas, m * n)
    for r in range(replicas):
        expected = a_rows[r].astype(np.float32) @ b_value.astype(np.float32)
        np.testing.assert_array_equal(c_out[r].reshape(m, n), expected)


def test_wrong_shapes_dtypes_and_names_are_refused_naming_them():
    g, program = axpy_graph(tiles=2, n=100)
    with vipu.Device(vipu.compile(g, program)) as device:
        with pytest.raises(ValueError, match=r"stream x_in: dtype float64, but it holds float32"):
            device.run("main", x_in=np.zeros(100))
        with pytest.raises(ValueError, match=r"stream x_in: 99 elements \(shape \(99,\)\), but it holds 100"):
            device.run("main", x_in=np.zeros(99, np.float32))
        with pytest.raises(ValueError, match="stream nope: the executable has no such stream"):
            device.run("main", nope=np.zeros(100, np.float32))
        with pytest.raises(ValueError, match="stream out_back: a device-to-host stream"):
            device.run("main", out_back=np.zeros(100, np.float32))
        with pytest.raises(ValueError, match=r"tensor y: float32 \(3,\), but it is float32 \(100,\)"):
            device.write_tensor("y", np.zeros(3, np.float32))
        with pytest.raises(ValueError, match="tensor z: the executable has no such tensor"):
            device.read_tensor("z")
        with pytest.raises(ValueError, match="element type .*float64.* is not one the IPU holds"):
            g.add_variable("w", (4,), np.float64)
        # The device still runs after refusing all of that.
        assert device.run("main", x_in=np.ones(100, np.float32))["out_back"][0] == 3


def test_graph_and_compile_errors_name_what_is_wrong():
    g = vipu.Graph(vipu.Target("mk2", tiles=2))
    t = g.add_variable("unmapped", (8,), np.float32)
    with pytest.raises(vipu.GraphError, match="unmapped"):
        vipu.compile(g, vipu.Sequence(vipu.Copy(t, t)))
    bad = vipu.Graph(vipu.Target("mk2", tiles=2))
    bad.add_codelet("broken", [("n", "scalar", None)], source="void broken(const int *v) { syntax error }\n")
    cs = bad.add_compute_set("cs")
    bad.add_vertex(cs, "broken", 0, {"n": 1})
    with pytest.raises(vipu.CompileError, match=r"broken\.c:1"):
        vipu.compile(bad, vipu.Execute(cs))


def test_a_fault_on_a_tile_is_a_tile_fault_and_the_device_stops():
    g = vipu.Graph(vipu.Target("mk2", tiles=1))
    g.add_codelet("crash", [("n", "scalar", None)],
                  source="#include <stdint.h>\nstruct f { uint32_t n; };\n"
                         "void crash(const struct f *v) { *(volatile uint32_t *)0 = v->n; }\n")
    cs = g.add_compute_set("cs")
    g.add_vertex(cs, "crash", 0, {"n": 1})
    with vipu.Device(vipu.compile(g, vipu.Execute(cs))) as device:
        with pytest.raises(vipu.TileFault, match="store access fault") as raised:
            device.run()
        assert isinstance(raised.value, vipu.DeviceError) and raised.value.outcome == "fault"


def test_ctrl_c_stops_a_device_run_and_the_device_with_it():
    g, program = axpy_graph(tiles=2, n=1000)
    exe = vipu.compile(g, vipu.Repeat(1_000_000, program))  # minutes of runs
    with vipu.Device(exe) as device:
        timer = threading.Timer(1.0, os.kill, (os.getpid(), signal.SIGINT))
        timer.start()
        with pytest.raises(KeyboardInterrupt):
            device.run()
        with pytest.raises(RuntimeError, match="the device is closed"):
            device.run()
    with pytest.raises(ChildProcessError):  # the device's process was killed and reaped
        os.waitpid(-1, os.WNOHANG)


def test_remote_buffers_in_streaming_memory_round_trip_through_programs():
    n = 64
    g = vipu.Graph(vipu.Target("m2000", tiles=4))
    a, b = (g.add_variable(name, (n,), np.float32) for name in ("a", "b"))
    g.map_evenly(a, 0, 4)
    g.map_evenly(b, 0, 4)
    buffer = g.add_remote_buffer("rb", np.float32, n, 3)
    exe = vipu.compile(g, {"save": vipu.CopyToRemote(a, buffer, 1),
                           "load": vipu.CopyFromRemote(buffer, 2, b)})
    value = np.arange(n, dtype=np.float32) - 7.5
    with vipu.Device(exe) as device:
        device.write_tensor("a", value)
        device.run("save")
        np.testing.assert_array_equal(device.read_remote("rb", 1), value)
        # The copy's phase streamed, within the program's time; nothing crossed chips.
        saved = device.last_run
        assert 0 < saved["streaming_phase_cycles"] <= saved["cycles"]
        assert saved["cross_chip_phase_cycles"] == 0
        device.write_remote("rb", 2, value * 2)
        device.run("load")
        np.testing.assert_array_equal(device.read_tensor("b"), value * 2)
        # The statistics count every run's: the save's and the load's.
        summary = device.stats()["summary"]
        assert summary["streaming_phase_cycles"] == (saved["streaming_phase_cycles"]
                                                     + device.last_run["streaming_phase_cycles"])
        with pytest.raises(ValueError, match="remote buffer rb: entry 3, but it has 3"):
            device.read_remote("rb", 3)
        with pytest.raises(ValueError, match="remote buffer rb: float64 x 64, but an entry is float32 x 64"):
            device.write_remote("rb", 0, np.zeros(n))
