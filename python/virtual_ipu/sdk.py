"""The SDK from Python: graphs, tensors, codelets, vertices, programs, the operator library,
compilation, and a Device whose streams and tensors take and give NumPy arrays.

    g = vipu.Graph(vipu.Target(vipu.Machine("m2000"), tiles=64, replicas=4))
    a = g.add_variable("a", (64, 128), "float16"); g.map_evenly(a, 0, 64)
    ...
    exe = vipu.compile(g, {"main": program})
    with vipu.Device(exe) as device:
        out = device.run("main", a_in=a_data)        # {stream name: array}

The Device simulates in a child process of its own (SystemC elaborates one design a process),
which it keeps from run to run until closed; Ctrl-C stops a run and the device with it.
"""
import json
import os
import tempfile
from typing import Any, Dict, Iterable, List, Optional, Sequence as Seq, Tuple, Union

import numpy as np

from . import _core
from ._core import CompileError, GraphError
from .machine import Machine, _text
from .result import CycleLimit, Deadlock, TileFault

# NumPy's dtypes and the SDK's element types.
_SDK_TYPE = {np.dtype(np.float32): "f32", np.dtype(np.float16): "f16", np.dtype(np.int32): "i32",
             np.dtype(np.uint32): "u32", np.dtype(np.uint8): "u8"}
_NUMPY_TYPE = {sdk: dtype for dtype, sdk in _SDK_TYPE.items()}


def _sdk_type(dtype) -> str:
    try:
        return _SDK_TYPE[np.dtype(dtype)]
    except (TypeError, KeyError):
        raise ValueError(f"element type {dtype!r} is not one the IPU holds "
                         "(float32, float16, int32, uint32, uint8)") from None


class Target:
    """A machine (a preset name or a Machine), `tiles` per chip (0: all) and its replicas."""

    def __init__(self, machine: Union[str, Machine] = "mk2", tiles: int = 0, replicas: int = 1):
        machine = Machine(machine) if isinstance(machine, str) else machine
        self.machine = machine
        self._target = _core.Target(machine._config, tiles, replicas)

    @property
    def replicas(self) -> int:
        return self._target.replicas

    @property
    def replica_tiles(self) -> int:
        return self._target.replica_tiles


class Tensor:
    """A graph tensor: its name, shape and NumPy dtype. t[begin:end] is a region of its
    elements, flattened, for a vertex's field or a copy."""

    def __init__(self, graph: "Graph", handle, name: str, shape: Tuple[int, ...], dtype):
        self.graph, self._handle, self.name, self.shape, self.dtype = graph, handle, name, shape, dtype

    @property
    def size(self) -> int:
        return int(np.prod(self.shape, dtype=np.int64))

    def __getitem__(self, key: slice) -> "Region":
        if not isinstance(key, slice) or key.step not in (None, 1):
            raise ValueError(f"tensor {self.name}: a region is a slice of its flattened elements")
        begin, end, _ = key.indices(self.size)
        return Region(self, begin, end)

    def __repr__(self) -> str:
        return f"Tensor({self.name!r}, {self.shape}, {self.dtype})"


class Region:
    def __init__(self, tensor: Tensor, begin: int, end: int):
        self.tensor, self.begin, self.end = tensor, begin, end

    def _region(self):
        return self.tensor.graph._graph.region(self.tensor._handle, self.begin, self.end)


class Graph:
    """A graph over a Target: tensors mapped to tiles, codelets, compute sets and streams."""

    def __init__(self, target: Target):
        self.target = target
        self._graph = _core.Graph(target._target)
        self._sources = tempfile.TemporaryDirectory(prefix="virtual_ipu_codelets_")
        self.streams: Dict[str, Tuple[str, int, bool]] = {}

    @property
    def tiles(self) -> int:
        return self._graph.tiles

    def tile(self, chip: int, tile: int) -> int:
        """The graph tile of a replica's chip `chip`, tile `tile`."""
        return self._graph.tile(chip, tile)

    def add_variable(self, name: str, shape: Iterable[int], dtype) -> Tensor:
        shape = tuple(int(d) for d in shape)
        return Tensor(self, self._graph.add_variable(name, list(shape), _sdk_type(dtype)), name, shape,
                      np.dtype(dtype))

    def add_constant(self, name: str, value, dtype=None) -> Tensor:
        array = np.ascontiguousarray(value, dtype=dtype)
        _sdk_type(array.dtype)
        handle = self._graph.add_constant(name, list(array.shape), _SDK_TYPE[array.dtype], array.tobytes())
        return Tensor(self, handle, name, tuple(array.shape), array.dtype)

    def set_tile_mapping(self, tensor: Tensor, tile_or_intervals) -> None:
        """The whole tensor on one tile, or [(begin, end, tile), ...] of its flattened elements."""
        if isinstance(tile_or_intervals, (int, np.integer)):
            self._graph.set_tile_mapping(tensor._handle, int(tile_or_intervals))
        else:
            self._graph.set_intervals(tensor._handle, [tuple(map(int, i)) for i in tile_or_intervals])

    def map_evenly(self, tensor: Tensor, first: int, count: int, grain: int = 1) -> None:
        self._graph.map_evenly(tensor._handle, first, count, grain)

    def add_codelet(self, name: str, fields: Seq[Tuple[str, str, Any]], *, source: Optional[str] = None,
                    path: Optional[str] = None) -> None:
        """A C codelet `name` from its source text or file; fields are (name, kind, dtype) with
        kind input, output, inout or scalar (a scalar's dtype is ignored: 32 bits)."""
        if (source is None) == (path is None):
            raise ValueError(f"codelet {name}: give its source text or its path, one of them")
        if source is not None:
            path = os.path.join(self._sources.name, f"{name}.c")
            with open(path, "w") as file:
                file.write(source)
        self._graph.add_codelet(name, os.fspath(path),
                                [(f, kind, _sdk_type(dtype) if kind != "scalar" else "u32")
                                 for f, kind, dtype in fields])

    def add_compute_set(self, name: str):
        return self._graph.add_compute_set(name)

    def add_vertex(self, compute_set, codelet: str, tile: int, fields: Dict[str, Any],
                   workers: int = 1) -> None:
        """fields: a Tensor or Region for a tensor field, an int for a scalar."""
        bound = {}
        for name, value in fields.items():
            if isinstance(value, Tensor):
                value = value[:]
            bound[name] = value._region() if isinstance(value, Region) else int(value)
        self._graph.add_vertex(compute_set, codelet, tile, bound, workers)

    def add_host_stream(self, name: str, dtype, elements: int, *, to_device: bool) -> None:
        self._graph.add_host_stream(name, _sdk_type(dtype), elements, to_device)
        self.streams[name] = (_sdk_type(dtype), elements, to_device)

    def add_remote_buffer(self, name: str, dtype, elements: int, entries: int):
        return self._graph.add_remote_buffer(name, _sdk_type(dtype), elements, entries)


# Programs, as the C++ SDK names them.
def Sequence(*steps) -> "_core.Program":
    return _core.Sequence(list(steps[0]) if len(steps) == 1 and isinstance(steps[0], list) else list(steps))


def Execute(compute_set):
    return _core.Execute(compute_set)


def Copy(source, destination):
    if isinstance(source, Region) or isinstance(destination, Region):
        src = source if isinstance(source, Region) else source[:]
        dst = destination if isinstance(destination, Region) else destination[:]
        return _core.CopyRegions([(src._region(), dst._region())])
    return _core.Copy(source._handle, destination._handle)


def Broadcast(source: Tensor, destination: Tensor):
    return _core.Broadcast(source._handle, destination._handle)


def Repeat(count: int, body):
    return _core.Repeat(count, body)


def Sync():
    return _core.Sync()


def HostWrite(stream: str, destination: Tensor):
    return _core.HostWrite(stream, destination._handle)


def HostRead(source: Tensor, stream: str):
    return _core.HostRead(source._handle, stream)


def CrossReplicaCopy(source: Tensor, destination: Tensor, replica_map: Seq[int]):
    return _core.CrossReplicaCopy(source._handle, destination._handle, list(replica_map))


def AllReduce(data: Tensor, op: str = "sum"):
    return _core.AllReduce(data._handle, op)


def ReduceScatter(data: Tensor, out: Tensor, op: str = "sum"):
    return _core.ReduceScatter(data._handle, out._handle, op)


def AllGather(data: Tensor, out: Tensor):
    return _core.AllGather(data._handle, out._handle)


def CopyToRemote(source: Tensor, buffer, entry: int):
    return _core.CopyToRemote(source._handle, buffer, entry)


def CopyFromRemote(buffer, entry: int, destination: Tensor):
    return _core.CopyFromRemote(buffer, entry, destination._handle)


class Executable:
    """A compiled graph: its programs, streams and tensors, ready for a Device."""

    def __init__(self, handle):
        self._exe = handle

    @property
    def programs(self) -> List[str]:
        return list(self._exe.programs)

    @property
    def replicas(self) -> int:
        return self._exe.replicas

    @property
    def memory_report(self) -> str:
        return self._exe.memory_report


def compile(graph: Graph, programs) -> Executable:
    """The executable of `programs` ({name: program}, or one program named "main") over
    `graph`. Raises GraphError (a ValueError) or CompileError naming what is wrong."""
    if not isinstance(programs, dict):
        programs = {"main": programs}
    return Executable(_core.compile(graph._graph, list(programs.items())))


_DEVICE_ERRORS = {"fault": TileFault, "cycle limit": CycleLimit, "deadlock": Deadlock}


class DeviceError(RuntimeError):
    """A device run that stopped: `outcome` is fault, cycle limit or deadlock when the tiles
    stopped it (the exception is then also a TileFault, CycleLimit or Deadlock)."""

    def __init__(self, message: str, outcome: Optional[str] = None):
        RuntimeError.__init__(self, message)  # not RunError's: a device run has no RunResult
        self.outcome = outcome
        self.result = None


def _device_error(message: str, outcome: Optional[str]):
    kind = _DEVICE_ERRORS.get(outcome)
    if kind is None:
        return DeviceError(message, outcome)
    error = type(kind.__name__, (DeviceError, kind), {"__init__": DeviceError.__init__})
    return error(message, outcome)


class Device:
    """A loaded executable on its simulated machine, in a child process of its own.

    run(program, **streams) writes each host-to-device stream's array (its elements for every
    replica, or replicas x elements, one row a replica), runs the program and returns every
    device-to-host stream's data as {name: array} (replicas x elements when replicas > 1).
    write_tensor / read_tensor move a tensor's value in its shape and dtype. Options are the run
    options (max_cycles, threads, interpreter)."""

    def __init__(self, executable: Executable, **options: Any):
        self.executable = executable
        given = {name.replace("_", "-"): _text(name, value) for name, value in options.items()}
        self._streams = dict(executable._exe.streams)
        self._tensors = dict(executable._exe.tensors)
        self._client = _core.DeviceClient(executable._exe, given)
        self.last_run: Dict[str, Any] = {}

    def _call(self, header: Dict[str, Any], blobs=()):
        text, out = self._client.call(json.dumps(header), list(blobs))
        reply = json.loads(text)
        if "error" in reply:
            if reply["error"] == "value":
                raise ValueError(reply["message"])
            raise _device_error(reply["message"], reply.get("outcome"))
        return reply, out

    def _replica_rows(self, what: str, array, dtype, elements: int) -> List[bytes]:
        array = np.asarray(array)
        if array.dtype != dtype:
            raise ValueError(f"{what}: dtype {array.dtype}, but it holds {dtype}")
        replicas = self.executable.replicas
        if array.size == elements:
            return [np.ascontiguousarray(array).tobytes()] * replicas
        if array.size == elements * replicas:
            rows = np.ascontiguousarray(array).reshape(replicas, elements)
            return [row.tobytes() for row in rows]
        raise ValueError(f"{what}: {array.size} elements (shape {array.shape}), but it holds "
                         f"{elements}" + (f" (or {replicas} x {elements}, a row a replica)" if replicas > 1 else ""))

    def run(self, program: str = "main", **streams) -> Dict[str, np.ndarray]:
        inputs, blobs = [], []
        for name, value in streams.items():
            if name not in self._streams:
                raise ValueError(f"stream {name}: the executable has no such stream "
                                 f"(it has {', '.join(self._streams) or 'none'})")
            sdk_type, elements, to_device = self._streams[name]
            if not to_device:
                raise ValueError(f"stream {name}: a device-to-host stream; run() returns its data")
            rows = self._replica_rows(f"stream {name}", value, _NUMPY_TYPE[sdk_type], elements)
            for replica, row in enumerate(rows):
                inputs.append({"name": name, "replica": replica})
                blobs.append(row)
        reply, out = self._call({"cmd": "run", "program": program, "inputs": inputs}, blobs)
        self.last_run = {k: v for k, v in reply.items() if k != "outputs"}
        data: Dict[str, List[np.ndarray]] = {}
        for entry, blob in zip(reply["outputs"], out):
            data.setdefault(entry["name"], []).append(
                np.frombuffer(blob, dtype=_NUMPY_TYPE[self._streams[entry["name"]][0]]).copy())
        return {name: rows[0] if len(rows) == 1 else np.stack(rows) for name, rows in data.items()}

    def _tensor(self, name: str):
        if name not in self._tensors:
            raise ValueError(f"tensor {name}: the executable has no such tensor")
        sdk_type, shape = self._tensors[name]
        return _NUMPY_TYPE[sdk_type], tuple(shape)

    def write_tensor(self, name: str, value, replica: Optional[int] = None) -> None:
        """Writes a tensor's value (its shape and dtype) in one replica, or in every one."""
        dtype, shape = self._tensor(name)
        array = np.asarray(value)
        if array.dtype != dtype or array.shape != shape:
            raise ValueError(f"tensor {name}: {array.dtype} {array.shape}, but it is {dtype} {shape}")
        replicas = range(self.executable.replicas) if replica is None else [replica]
        for r in replicas:
            self._call({"cmd": "write_tensor", "name": name, "replica": r},
                       [np.ascontiguousarray(array).tobytes()])

    def read_tensor(self, name: str, replica: int = 0) -> np.ndarray:
        dtype, shape = self._tensor(name)
        _, out = self._call({"cmd": "read_tensor", "name": name, "replica": replica})
        return np.frombuffer(out[0], dtype=dtype).reshape(shape).copy()

    def _remote(self, name: str, entry: int):
        buffers = self.executable._exe.remote_buffers
        if name not in buffers:
            raise ValueError(f"remote buffer {name}: the executable has no such remote buffer")
        sdk_type, elements, entries = buffers[name]
        if not 0 <= entry < entries:
            raise ValueError(f"remote buffer {name}: entry {entry}, but it has {entries}")
        return _NUMPY_TYPE[sdk_type], elements

    def write_remote(self, name: str, entry: int, value, replica: Optional[int] = None) -> None:
        """Writes one entry of a remote buffer (in streaming memory) in one replica or every one."""
        dtype, elements = self._remote(name, entry)
        array = np.asarray(value)
        if array.dtype != dtype or array.size != elements:
            raise ValueError(f"remote buffer {name}: {array.dtype} x {array.size}, but an entry is "
                             f"{dtype} x {elements}")
        for r in range(self.executable.replicas) if replica is None else [replica]:
            self._call({"cmd": "write_remote", "name": name, "replica": r, "entry": entry},
                       [np.ascontiguousarray(array).tobytes()])

    def read_remote(self, name: str, entry: int, replica: int = 0) -> np.ndarray:
        dtype, _ = self._remote(name, entry)
        _, out = self._call({"cmd": "read_remote", "name": name, "replica": replica, "entry": entry})
        return np.frombuffer(out[0], dtype=dtype).copy()

    def stats(self) -> Dict[str, Any]:
        """Every run's statistics so far, as the C++ Device writes them."""
        _, out = self._call({"cmd": "stats"})
        return json.loads(out[0])

    @property
    def console(self) -> str:
        _, out = self._call({"cmd": "console"})
        return out[0].decode(errors="replace")

    def close(self) -> None:
        self._client.close()

    def __enter__(self) -> "Device":
        return self

    def __exit__(self, *exc) -> None:
        self.close()


class ops:
    """The operator library (sdk/ops)."""

    @staticmethod
    def matmul(graph: Graph, program, a: Tensor, b: Tensor, *, transpose_a: bool = False,
               transpose_b: bool = False, available_memory_proportion: float = 0.6,
               output="float32", name: str = "matmul") -> Tensor:
        """C = op(A) x op(B) (A, B float16, two-dimensional, mapped), appended to `program` (a
        Sequence); C is [M x N], planned and laid out as ops::matmul does."""
        handle = _core.matmul(graph._graph, program, a._handle, b._handle, transpose_a, transpose_b,
                              available_memory_proportion, _sdk_type(output), name)
        tname, ttype, shape = graph._graph.tensor_info(handle)
        return Tensor(graph, handle, tname, tuple(shape), _NUMPY_TYPE[ttype])
