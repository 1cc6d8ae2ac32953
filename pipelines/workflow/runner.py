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


HANDED_OVER_WAIT = 6 * 3600.0  # seconds a step taken over by another process is awaited
HANDED_OVER_POLL = 5.0


@dataclass(frozen=True)
class StepActions:
    """`complete(step)`: why the step's outputs are complete already (None: they are not).
    `run(step)`: run it; its exit code (0: success). `handed_over(error)`: whether the error says
    another process took the step's run over and will complete it (the same workflow started
    twice): then this process waits for the step's outputs instead of failing, up to `wait`
    seconds, looking every `poll` seconds."""

    complete: Callable[[Step], str | None]
    run: Callable[[Step], int]
    handed_over: Callable[[BaseException], bool] = lambda error: False
    wait: float = HANDED_OVER_WAIT
    poll: float = HANDED_OVER_POLL


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
            error = describe(exc)
            if actions.handed_over(exc):
                error = _await_other(step, actions, prefix, say)
                if not error:
                    detail = "completed by another process that took it over"
                    outcomes.append(StepOutcome(step.name, command, SKIPPED, time.monotonic() - started, detail))
                    say(f"{prefix}: {detail}")
                    continue
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


def describe(exc: BaseException) -> str:
    """An exception as the line a failed step reports: a JVM error (py4j's, whose own first line
    only names the call) by its Java exception's class and message."""
    java = getattr(exc, "java_exception", None)
    if java is not None:
        try:
            return str(java.toString()).strip()
        except Exception:  # the gateway may be gone with the JVM: py4j's own text then
            log.debug("the Java exception of a failed step could not be read", exc_info=True)
    return f"{type(exc).__name__}: {exc}".strip()


def _await_other(step: Step, actions: StepActions, prefix: str, say: Callable[[str], None]) -> str:
    """Wait for the process that took the step's run over to complete its outputs: "" once they
    are, else why not. Nothing is taken back: two processes never fight over one run."""
    say(f"{prefix}: another process took its run over; waiting for it to complete (up to {actions.wait:.0f} s)")
    clock = last_said = time.monotonic()
    while time.monotonic() - clock < actions.wait:
        if actions.complete(step) is not None:
            return ""
        time.sleep(actions.poll)
        if time.monotonic() - last_said >= 60:
            say(f"{prefix}: still waiting for the other process ({time.monotonic() - clock:.0f} s)")
            last_said = time.monotonic()
    return (
        f"another process took its run over and did not complete it in {actions.wait:.0f} s "
        "(it may have failed or been killed)"
    )
