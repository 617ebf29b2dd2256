#!/usr/bin/env python3
"""A data-parallel matrix product on a virtual M2000 from Python, checked against NumPy.

    PYTHONPATH=build/python python3 examples/python/matmul_m2000.py [--m 256 --k 512 --n 256 --tiles 64]

Four replicas, one a chip: each gets its own A through a host stream, all share B (written as a
tensor), and each computes C = A x B with the operator library's planned matmul (f16 in, f32
out) on `tiles` tiles of its chip. The products come back through a host stream, a row a
replica, and must equal NumPy's bit for bit (small whole numbers are exact in f16 and f32).
"""
import argparse

import numpy as np

import virtual_ipu as vipu

parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
parser.add_argument("--m", type=int, default=128)
parser.add_argument("--k", type=int, default=256)
parser.add_argument("--n", type=int, default=128)
parser.add_argument("--tiles", type=int, default=64)
args = parser.parse_args()
m, k, n, replicas = args.m, args.k, args.n, 4

graph = vipu.Graph(vipu.Target("m2000", tiles=args.tiles, replicas=replicas))
a = graph.add_variable("a", (m, k), np.float16)
b = graph.add_variable("b", (k, n), np.float16)
for operand in (a, b):
    graph.map_evenly(operand, 0, args.tiles, grain=2)
graph.add_host_stream("a_in", np.float16, m * k, to_device=True)
graph.add_host_stream("c_out", np.float32, m * n, to_device=False)
program = vipu.Sequence(vipu.HostWrite("a_in", a))
c = vipu.ops.matmul(graph, program, a, b)
program = vipu.Sequence(program, vipu.HostRead(c, "c_out"))
executable = vipu.compile(graph, program)

rng = np.random.default_rng(2026)
a_host = rng.integers(-4, 5, size=(replicas, m, k)).astype(np.float16)
b_host = rng.integers(-4, 5, size=(k, n)).astype(np.float16)
with vipu.Device(executable) as device:
    device.write_tensor("b", b_host)
    c_device = device.run("main", a_in=a_host.reshape(replicas, -1))["c_out"].reshape(replicas, m, n)
    run = device.last_run

expected = a_host.astype(np.float32) @ b_host.astype(np.float32)
equal = int((c_device == expected).sum())
flops = 2 * m * k * n * replicas
print(f"{replicas} replicas x ({m} x {k}) @ ({k} x {n}) on {args.tiles} tiles a chip")
print(f"{run['cycles']} cycles, {run['seconds'] * 1e6:.1f} us simulated, "
      f"{flops / run['seconds'] / 1e12:.3f} TFLOP/s (the host streams included), "
      f"{run['energy_joules'] * 1e3:.3f} mJ")
print(f"{equal} of {c_device.size} values equal NumPy's")
raise SystemExit(0 if equal == c_device.size else 1)
