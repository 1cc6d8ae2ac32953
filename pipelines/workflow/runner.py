"""Run a workflow's steps in order on one Spark session: skip complete ones, stop at a failure.

The runner only orchestrates. How a step runs and how its outputs are found complete are passed
in (`StepActions`), so the CLI wires in the real jobs and the tests can wire in fakes.
"""

from __future__ import annotations

import logging
import shlex
import time
from collections.abc import Callable
from dataclasses import dataclass

from pipelines.workflow.spec import Step, Workflow

log = logging.getLogger(__name__)

RAN, SKIPPED, FAILED, NOT_RUN = "ran", "skipped", "failed", "not run"


@dataclass(frozen=True)
class StepActions:
    """`complete(step)`: why the step's outputs are complete already (None: they are not).
    `run(step)`: run it; its exit code (0: success)."""

    complete: Callable[[Step], str | None]
    run: Callable[[Step], int]


@dataclass(frozen=True)
class StepOutcome:
    step: str
    command: str
    status: str
    seconds: float
    detail: str = ""


class WorkflowFailed(RuntimeError):
    """A step failed; the message names it and says how to go on."""

    def __init__(self, message: str, outcomes: list[StepOutcome]):
        super().__init__(message)
        self.outcomes = outcomes


def run_workflow(
    workflow: Workflow,
    actions: StepActions,
    force: bool = False,
    say: Callable[[str], None] = print,
) -> list[StepOutcome]:
    """Run every step whose outputs are not complete (all of them with `force`), in order."""
    total = len(workflow.steps)
    grid = f", grid {workflow.grid}" if workflow.grid else ""
    say(f"workflow {workflow.name} ({workflow.source}): {total} steps{grid}")
    outcomes: list[StepOutcome] = []
    clock = time.monotonic()
    for index, step in enumerate(workflow.steps, start=1):
        prefix = f"[{index}/{total}] {step.name}"
        command = shlex.join(step.resolved(workflow.parameters))
        started = time.monotonic()
        reason = None if force else actions.complete(step)
        if reason is not None:
            say(f"{prefix}: skipped, {reason}")
            outcomes.append(StepOutcome(step.name, command, SKIPPED, time.monotonic() - started, reason))
            continue
        say(f"{prefix}: {command}")
        try:
            code = actions.run(step)
            error = f"exit code {code}" if code else ""
        except Exception as exc:
            log.debug("step %s failed", step.name, exc_info=True)
            error = f"{type(exc).__name__}: {exc}".strip()
        seconds = time.monotonic() - started
        if error:
            outcomes.append(StepOutcome(step.name, command, FAILED, seconds, error))
            left = [s.name for s in workflow.steps[index:]]
            outcomes.extend(StepOutcome(name, "", NOT_RUN, 0.0) for name in left)
            say(f"{prefix}: FAILED after {seconds:.0f} s ({error.splitlines()[0][:300]})")
            raise WorkflowFailed(
                f"workflow {workflow.name} stopped: step '{step.name}' failed ({error.splitlines()[0][:500]}). "
                + (f"Not run: {', '.join(left)}. " if left else "")
                + "Fix the cause and run the same command again: complete steps are skipped.",
                outcomes,
            )
        outcomes.append(StepOutcome(step.name, command, RAN, seconds))
        say(f"{prefix}: done in {seconds:.0f} s (workflow {time.monotonic() - clock:.0f} s)")
    return outcomes
