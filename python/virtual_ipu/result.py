"""What a run did: its outcome, counts and statistics, and the errors a failed run raises."""
import json
import os
from typing import Any, Dict, List, Optional, Union

from . import _core
from ._core import ImageError  # noqa: F401 (machine.py raises it)


class RunResult:
    """A finished run: the outcome, the counts, the statistics (`ipu-sim run --stats`'s JSON as
    a dict: json.dumps writes it back), the text report ipu-sim prints and the tiles' console."""

    def __init__(self, answer: Dict[str, Any], image: str):
        self._stats_text = answer["stats"]
        self.stats: Dict[str, Any] = json.loads(self._stats_text)
        self.text: str = answer["report"]
        self.console: str = answer["console"]
        self.image = image
        summary = self.stats["summary"]
        self.outcome: str = summary["result"]  # exited, fault, cycle limit or deadlock
        self.exit_status: int = summary["exit_status"]
        self.message: str = summary["message"]

    @property
    def summary(self) -> Dict[str, Any]:
        return self.stats["summary"]

    @property
    def cycles(self) -> int:
        return self.stats["cycles"]

    @property
    def seconds(self) -> float:
        """Simulated seconds."""
        return self.summary["seconds"]

    @property
    def instructions(self) -> int:
        return self.stats["instructions"]

    @property
    def supersteps(self) -> List[Dict[str, Any]]:
        """Each superstep's phases: compute, sync wait and exchange cycles, energy."""
        return self.stats["supersteps"]

    @property
    def contexts(self) -> List[Dict[str, Any]]:
        """Each context's counts summed over the active tiles (the supervisor first)."""
        return self.stats["contexts"]

    @property
    def config(self) -> Dict[str, Any]:
        """Every parameter the run used."""
        return self.stats["config"]

    def report(self, path: Union[str, os.PathLike], title: Optional[str] = None) -> None:
        """Writes the HTML run report (ipu-sim run --report's)."""
        with open(path, "w") as file:
            file.write(_core.html_report(self._stats_text, title or f"virtual_ipu run {self.image}"))

    def __repr__(self) -> str:
        return (f"RunResult({self.outcome}, exit status {self.exit_status}, {self.cycles} cycles, "
                f"{self.seconds:.6g} s simulated)")


class RunError(RuntimeError):
    """A run that did not end by its tiles' exit: the message is the run's report (tile,
    context, pc, function and line), `result` the RunResult with its statistics."""

    def __init__(self, result: RunResult):
        super().__init__(result.message)
        self.result = result


class TileFault(RunError):
    """A tile faulted (an illegal instruction, an access outside its memory, ...)."""


class CycleLimit(RunError):
    """A tile reached max_cycles."""


class Deadlock(RunError):
    """Tiles wait at a barrier that the others can never reach."""


_ERRORS = {"fault": TileFault, "cycle limit": CycleLimit, "deadlock": Deadlock}


def raise_for_outcome(result: RunResult) -> None:
    error = _ERRORS.get(result.outcome)
    if error is not None:
        raise error(result)
