"""Machines: a preset and its parameters, as ipu-sim's --preset, --config and options give them."""
import json
import os
from typing import Any, Dict, NamedTuple, Optional, Union

from . import _core
from .result import ImageError, RunResult, raise_for_outcome


class Parameter(NamedTuple):
    """One configuration parameter: its value, its preset's value, unit, meaning and range."""
    name: str
    value: Any
    default: Any
    unit: str
    meaning: str
    low: float
    high: float


def presets():
    """The presets a Machine starts from: mk2, bow, m2000, bow2000, pod16, pod64, ..."""
    return list(_core.preset_names())


def _text(name: str, value: Any) -> str:
    """A Python value as the parameter lists read it (yes/no, numbers, none)."""
    if value is None:
        return "none"
    if isinstance(value, bool) or type(value).__name__ == "bool_":  # numpy.bool_ too
        return "yes" if value else "no"
    if hasattr(value, "item") and not isinstance(value, (str, bytes)):
        value = value.item()  # a NumPy scalar
    if isinstance(value, float):
        return repr(value)
    if isinstance(value, (int, str)):
        return str(value)
    raise ValueError(f"bad value {value!r} for {name}: a number, string, bool or None")


class Machine:
    """A machine to run: a preset, then a configuration (a file's path or a dict), then params.

        Machine()                                   # one Mk2 chip
        Machine("pod16", **{"ipulink.bytes-per-second": 32e9})
        Machine(config="my.cfg")                    # a file --config-dump wrote
        Machine("bow", config={"chip.tiles": 64})

    A bad name or value raises ValueError naming it (with the nearest names for a misspelt one),
    and so does a configuration that does not make a machine, before anything runs.
    """

    def __init__(self, preset: str = "mk2", config: Union[None, str, os.PathLike, Dict[str, Any]] = None,
                 **params: Any):
        if config is None or isinstance(config, dict):
            self._config = _core.Config(preset)
            for name, value in (config or {}).items():
                self[name] = value
        else:
            self._config = _core.Config.load(os.fspath(config), preset)
        for name, value in params.items():
            self[name] = value
        self._config.validate()

    @classmethod
    def from_config(cls, path: Union[str, os.PathLike], **params: Any) -> "Machine":
        """The machine a configuration file describes (its 'preset =' line, then its values)."""
        return cls(config=path, **params)

    @property
    def preset(self) -> str:
        return self._config.preset

    def __getitem__(self, name: str) -> Any:
        return self._config.get(name)

    def __setitem__(self, name: str, value: Any) -> None:
        self._config.set(name, _text(name, value))

    def parameters(self) -> Dict[str, Parameter]:
        """Every parameter, in ipu-sim --help's order: value, the preset's value, unit, meaning."""
        defaults = {row[0]: row[1] for row in _core.Config(self.preset).parameters()}
        return {row[0]: Parameter(row[0], row[1], defaults.get(row[0]), *row[2:])
                for row in self._config.parameters()}

    def dump(self, path: Union[None, str, os.PathLike] = None) -> str:
        """The configuration as --config reads it (what --config-dump prints); written to path if given."""
        text = self._config.dump()
        if path is not None:
            with open(path, "w") as file:
                file.write(text)
        return text

    def run(self, image: Union[str, os.PathLike], *, stats: bool = True, **options: Any) -> RunResult:
        """Runs a firmware image as `ipu-sim run IMAGE` does and returns its RunResult.

        options are ipu-sim's run options with '_' for '-': max_cycles, threads, interpreter
        ("fast" or "general"), memory_hash. stats=False keeps the run's totals only (no
        superstep records, no worker profile), a little faster. Raises TileFault, Deadlock or
        CycleLimit (each a RunError carrying the result), ImageError for a corrupt image and
        ValueError for a bad option; Ctrl-C stops the run with KeyboardInterrupt.
        """
        given = {name.replace("_", "-"): _text(name, value) for name, value in options.items()}
        path = os.fspath(image)
        answer = json.loads(_core.run(self._config, path, given, stats))
        error = answer.get("error")
        if error == "image":
            raise ImageError(answer["message"])
        if error == "value":
            raise ValueError(answer["message"])
        if error is not None:
            raise RuntimeError(answer["message"])
        result = RunResult(answer, path)
        raise_for_outcome(result)
        return result

    def __repr__(self) -> str:
        return (f"Machine({self.preset!r}: {self['machine.chips']} chip(s) x "
                f"{self['chip.tiles']} tiles at {self['tile.clock-hz'] / 1e9:g} GHz)")
