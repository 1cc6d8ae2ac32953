"""The progress contract of the libraries: a long function takes `on_step`, a callable it calls
with a `StepInfo` after each step it completes (a greedy round, a routing superstep, a BFS
level, a phase). The caller decides what to show (`pipelines.progress` draws a bar or logs a
line); a library never reads a global for it.

A step reports only figures the library already has at hand: reporting must never cost a Spark
job. A figure that would need one is simply not reported.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field


@dataclass(frozen=True)
class StepInfo:
    stage: str  # what steps: "superstep", "ring (GSwicoS) round", "BFS level", ...
    step: int  # 1, 2, ... within the stage
    total: int | None = None  # steps the stage takes, when known beforehand
    figures: dict[str, object] = field(default_factory=dict)  # name -> value, in the order to show
    seconds: float | None = None  # the step's own time
    advance: int = 1  # units of the caller's bar this step completes (for instance links added)


OnStep = Callable[[StepInfo], None]


def report(on_step: OnStep | None, stage: str, step: int, **fields) -> None:
    """Call `on_step` (when given) with one StepInfo; `fields` are StepInfo's other fields."""
    if on_step is not None:
        on_step(StepInfo(stage, step, **fields))
