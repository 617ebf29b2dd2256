"""The virtual IPU from Python.

    import virtual_ipu as vipu
    machine = vipu.Machine("m2000", **{"ipulink.bytes-per-second": 32e9})
    result = machine.run("build/tests/token_ring.elf", max_cycles=10_000_000)
    print(result.cycles, result.seconds, result.stats["summary"]["energy_joules"])
    result.report("run.html")

A Machine holds a configuration: a preset and the parameters ipu-sim's --config files and
options set, each with its default, unit and meaning. Machine.run runs a firmware image as
`ipu-sim run` does, in a child process (a Python session may run many machines; SystemC lets a
process simulate once), and returns a RunResult; a fault, a deadlock or the cycle limit raises
a RunError that carries it. docs/python.md has the whole API.
"""
from ._core import ImageError
from .machine import Machine, Parameter, presets
from .result import CycleLimit, Deadlock, RunError, RunResult, TileFault
from .sweep import sweep
from . import plot
from .sdk import (AllGather, AllReduce, Broadcast, CompileError, Copy, CopyFromRemote, CopyToRemote,
                  CrossReplicaCopy, Device, DeviceError, Execute, Executable, Graph, GraphError,
                  HostRead, HostWrite, ReduceScatter, Region, Repeat, Sequence, Sync, Target, Tensor,
                  compile, ops)

__all__ = ["Machine", "Parameter", "presets", "RunResult", "RunError", "TileFault", "CycleLimit",
           "Deadlock", "ImageError", "sweep", "plot", "Target", "Graph", "Tensor", "Region",
           "Sequence", "Execute", "Copy", "Broadcast", "Repeat", "Sync", "HostWrite", "HostRead",
           "CrossReplicaCopy", "AllReduce", "ReduceScatter", "AllGather", "CopyToRemote",
           "CopyFromRemote", "compile", "Executable", "Device", "DeviceError", "GraphError",
           "CompileError", "ops"]
