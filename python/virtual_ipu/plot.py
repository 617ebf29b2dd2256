"""Plots with Matplotlib: a sweep's figure against a parameter, a run's BSP timeline, and the
tile-memory heatmap of a chip. Each draws into `ax` (a new figure when None) and, given a
path, saves the figure there; each returns the Axes."""
import math
import os
from typing import Any, Dict, List, Optional, Sequence, Union

from .result import RunResult

Path = Union[str, os.PathLike]


def _axes(ax, figsize):
    import matplotlib.pyplot as plt
    if ax is None:
        _, ax = plt.subplots(figsize=figsize)
    return ax


def _finish(ax, path: Optional[Path]):
    if path is not None:
        ax.figure.tight_layout()
        ax.figure.savefig(path)
    return ax


def _rows(rows) -> List[Dict[str, Any]]:
    return rows.to_dict("records") if hasattr(rows, "to_dict") else list(rows)


def sweep(rows, x: str, y: str, series: Optional[str] = None, *, path: Optional[Path] = None,
          ax=None, logx: bool = False):
    """Figure `y` of a sweep's rows against parameter `x`, a line for each value of `series`
    (another varied parameter, e.g. "preset"). Failing points (an "error" column) are left out."""
    rows = [r for r in _rows(rows) if not r.get("error")]
    if not rows:
        raise ValueError("the sweep has no point that ran")
    for name in (x, y) + ((series,) if series else ()):
        if name not in rows[0]:
            raise ValueError(f"the sweep's rows have no column {name!r} (they have {', '.join(rows[0])})")
    ax = _axes(ax, (6, 4))
    groups: Dict[Any, List[Dict[str, Any]]] = {}
    for r in rows:
        groups.setdefault(r[series] if series else None, []).append(r)
    for key, group in groups.items():
        group = sorted(group, key=lambda r: r[x])
        ax.plot([r[x] for r in group], [r[y] for r in group], marker="o",
                label=f"{series} = {key}" if series else None)
    if logx:
        ax.set_xscale("log")
    ax.set_xlabel(x)
    ax.set_ylabel(y)
    if series:
        ax.legend()
    ax.grid(True, alpha=0.3)
    return _finish(ax, path)


# Colours of the BSP phases, as the HTML report draws them.
PHASE_COLOURS = {"compute": "#4c78a8", "sync": "#f58518", "exchange": "#54a24b"}


def timeline(result: Union[RunResult, Dict[str, Any]], *, path: Optional[Path] = None, ax=None,
             supersteps: Optional[int] = None):
    """The BSP timeline of a run: each superstep's compute (to its slowest tile), sync wait and
    exchange phases along the cycle axis. Needs a run with stats=True (its superstep records);
    `supersteps` draws only the first so many."""
    stats = result.stats if isinstance(result, RunResult) else result
    steps = stats.get("supersteps") or []
    if not steps:
        raise ValueError("the run has no superstep records: run it with stats=True")
    steps = steps[:supersteps] if supersteps else steps
    ax = _axes(ax, (10, 3))
    start = 0
    for i, step in enumerate(steps):
        compute = step["compute_cycles"]["max"]
        sync_end = step["release_cycle"]
        exchange = step.get("exchange", {}).get("cycles", 0)
        phases = [("compute", start, compute), ("sync", start + compute, max(0, sync_end - start - compute)),
                  ("exchange", sync_end, exchange)]
        for name, left, width in phases:
            if width > 0:
                ax.barh(0, width, left=left, height=0.6, color=PHASE_COLOURS[name],
                        label=name if i == 0 else None)
        start = sync_end + exchange
    ax.set_yticks([])
    ax.set_xlabel("cycle")
    ax.set_title(f"{len(steps)} supersteps: compute, sync wait, exchange", loc="left")
    ax.legend(loc="lower right", bbox_to_anchor=(1.0, 1.0), ncol=3, frameon=False)
    return _finish(ax, path)


def memory_heatmap(result: Union[RunResult, Dict[str, Any]], *, chip: int = 0,
                   path: Optional[Path] = None, ax=None, columns: int = 64):
    """Each tile of one chip coloured by the share of its SRAM in use (code, data, stacks),
    `columns` tiles to a row; tiles the program does not load are blank."""
    import numpy as np
    stats = result.stats if isinstance(result, RunResult) else result
    memory = stats.get("tile_memory")
    if not memory:
        raise ValueError("the run's statistics have no tile_memory")
    tiles_per_chip = stats["chip"]["tiles"]
    chips = stats["config"].get("machine.chips", 1)
    if not 0 <= chip < chips:
        raise ValueError(f"chip {chip} is not one of the machine's {chips}")
    grid = np.full(tiles_per_chip, np.nan)
    for tile, free in zip(memory["tiles"], memory["free"]):
        if tile // tiles_per_chip == chip:
            grid[tile % tiles_per_chip] = 1 - free / memory["sram_bytes"]
    rows = math.ceil(tiles_per_chip / columns)
    grid = np.concatenate([grid, np.full(rows * columns - tiles_per_chip, np.nan)]).reshape(rows, columns)
    ax = _axes(ax, (8, max(2, rows / 8)))
    image = ax.imshow(grid, vmin=0, vmax=1, cmap="viridis", aspect="auto", interpolation="nearest")
    ax.figure.colorbar(image, ax=ax, label="SRAM in use")
    ax.set_title(f"chip {chip}: tile memory ({columns} tiles a row)")
    ax.set_xlabel("tile % {}".format(columns))
    ax.set_ylabel("tile // {}".format(columns))
    from matplotlib.ticker import MaxNLocator
    ax.yaxis.set_major_locator(MaxNLocator(integer=True))
    return _finish(ax, path)
