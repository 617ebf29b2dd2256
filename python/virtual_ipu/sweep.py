"""Sweeps: a workload at every point of a grid of parameters, each point in its own process."""
import itertools
import multiprocessing
import os
from typing import Any, Callable, Dict, List, Optional, Sequence, Union

from .machine import Machine
from .result import RunError, RunResult

# The summary figures a row holds for a run (the --stats summary's, as ipu-sim sweep's table):
# flops and tflops are what the tiles executed, any program's (docs/sweeps.md); then
# tflops_per_watt, the TFLOP/s over the machine's average watts.
FIGURES = ("cycles", "seconds", "instructions", "flops", "tflops", "amp_peak_fraction",
           "supersteps", "exchange_bytes", "inter_chip_bytes", "ipulink_bytes",
           "streaming_bytes_written", "streaming_bytes_read", "energy_joules", "watts",
           "watts_per_chip")


def _grid(vary: Dict[str, Sequence[Any]]) -> List[Dict[str, Any]]:
    """The points in grid order: the first name varies slowest, as ipu-sim sweep's."""
    names = list(vary)
    for name in names:
        if isinstance(vary[name], (str, bytes)) or not hasattr(vary[name], "__iter__"):
            raise ValueError(f"vary[{name!r}] must be a list of values, not {vary[name]!r}")
    return [dict(zip(names, values)) for values in itertools.product(*(list(vary[n]) for n in names))]


def _point_machine(base: Machine, point: Dict[str, Any]) -> Machine:
    """The base machine with the point's values; "preset" starts it from another preset, keeping
    every parameter the base machine changed from its own preset."""
    preset = point.get("preset", base.preset)
    changed = {name: p.value for name, p in base.parameters().items() if p.value != p.default}
    params = {name: value for name, value in point.items() if name != "preset"}
    return Machine(preset, config=changed, **params)


def _row(point: Dict[str, Any], result: Optional[RunResult], error: Optional[str]) -> Dict[str, Any]:
    row = dict(point)
    if result is not None:
        row["outcome"] = result.outcome
        row["exit_status"] = result.exit_status
        for figure in FIGURES:
            row[figure] = result.summary.get(figure)
        tflops, watts = row["tflops"], row["watts"]
        row["tflops_per_watt"] = tflops / watts if tflops is not None and watts else None
    if error is not None:
        row["error"] = error
    return row


# A worker's state: set in the parent before the pool forks, so nothing has to be pickled.
_job: Dict[str, Any] = {}


def _run_point(index: int) -> Dict[str, Any]:
    point, machine = _job["points"][index], _job["machines"][index]
    target, options = _job["target"], _job["options"]
    try:
        if callable(target):
            value = target(machine)
            if isinstance(value, RunResult):
                return _row(point, value, None)
            if not isinstance(value, dict):
                raise TypeError(f"the sweep's function returned {type(value).__name__}, not a dict "
                                "or RunResult")
            return {**point, **value}
        return _row(point, machine.run(target, **options), None)
    except RunError as e:
        return _row(point, e.result, f"{e.result.outcome}: {e}")
    except Exception as e:  # a failing point is a row that says why
        return _row(point, None, f"{type(e).__name__}: {e}")


def sweep(target: Union[str, os.PathLike, Callable[[Machine], Any]], vary: Dict[str, Sequence[Any]],
          *, machine: Optional[Machine] = None, jobs: int = 2, dataframe: bool = True,
          **options: Any):
    """Runs `target` at every point of the grid `vary`, `jobs` points at a time, each in its
    own process, and returns a row per point in grid order.

    target: a firmware image (each point runs it as Machine.run does, with `options`), or a
    function that takes the point's Machine and returns a dict of figures or a RunResult.
    vary: parameter name -> values; "preset" varies the preset, keeping the parameters
    `machine` (default: Machine()) changes from its own. A row holds the point's values, then the
    run's outcome and summary figures, or the function's dict; a failing point's row says why
    under "error". Every point's configuration is checked first: a bad name or value raises
    ValueError before any point runs. Returns a pandas DataFrame when pandas is installed (and
    dataframe is true), else a list of dicts.
    """
    if jobs < 1:
        raise ValueError(f"jobs must be at least 1, not {jobs}")
    base = machine if machine is not None else Machine()
    points = _grid(vary)
    machines = []
    for point in points:
        try:
            machines.append(_point_machine(base, point))
        except ValueError as e:
            raise ValueError(f"sweep point {point}: {e}") from None
    if not callable(target):
        target = os.fspath(target)
    _job.update(points=points, machines=machines, target=target, options=options)
    try:
        with multiprocessing.get_context("fork").Pool(min(jobs, len(points)) or 1) as pool:
            rows = pool.map(_run_point, range(len(points)), chunksize=1)
    finally:
        _job.clear()
    if dataframe:
        try:
            import pandas
            return pandas.DataFrame(rows)
        except ImportError:
            pass
    return rows
