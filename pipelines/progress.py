"""Progress of the long commands (design, route, compare, evaluate, ingest): a tqdm bar when
stderr is a terminal, one INFO log line per step otherwise, nothing with `-q`.

A job makes one `Progress` per long piece of work and calls `step` as each step completes; a
library function reports its own steps through an `on_step` callback (`overlay.progress`), for
which `Progress.on_step` is the adapter. Reporting never starts a Spark job: a step shows the
figures its code has at hand.

Quiet: `enabled=False` (the commands pass `progress=not args.quiet`), or a logger that does not
log INFO (`-q` sets WARNING), shows nothing. On a terminal the bar replaces the lines (they are
logged at DEBUG, so `-v` shows them too), and log lines of other modules are written above the
bar instead of through it.
"""

from __future__ import annotations

import logging
import sys
import time

from overlay.progress import StepInfo

log = logging.getLogger(__name__)


def _figure(value: object) -> str:
    if isinstance(value, bool):
        return str(value).lower()
    if isinstance(value, int):
        return f"{value:,}"
    if isinstance(value, float):
        return f"{value:.4g}"
    return str(value)


def describe(info: StepInfo) -> str:
    """A library step as one line: `superstep 3: in flight 1,204, sent 3,411, 0.42s`."""
    head = f"{info.stage} {info.step}" + (f"/{info.total}" if info.total is not None else "")
    parts = [f"{name} {_figure(value)}" for name, value in info.figures.items()]
    if info.seconds is not None:
        parts.append(f"{info.seconds:.2f}s")
    return head + (": " + ", ".join(parts) if parts else "")


def _is_terminal(stream) -> bool:
    try:
        return bool(stream.isatty())
    except (AttributeError, ValueError):  # no stream, or a closed one
        return False


class Progress:
    """One long piece of work: `label` names it (a run id, `compare ID`), `total` counts its units
    when known (the bar's length), `unit` names them (step, edge, superstep)."""

    def __init__(
        self,
        label: str,
        total: int | None = None,
        unit: str = "step",
        enabled: bool = True,
        logger: logging.Logger | None = None,
    ):
        self.label = label
        self.log = logger or log
        self.enabled = enabled and self.log.isEnabledFor(logging.INFO)
        self.steps = 0
        self.clock = time.monotonic()
        self.bar = None
        self._redirect = None
        stream = sys.stderr
        if self.enabled and _is_terminal(stream):
            from tqdm import tqdm
            from tqdm.contrib.logging import logging_redirect_tqdm

            self._redirect = logging_redirect_tqdm(tqdm_class=tqdm)
            self._redirect.__enter__()
            self.bar = tqdm(
                total=total, unit=unit, desc=label, leave=False, file=stream, dynamic_ncols=True, miniters=1
            )

    def step(self, description: str = "", advance: int = 1, **postfix: object) -> None:
        """One completed step: a log line `LABEL DESCRIPTION (elapsed Ns)`, or on a terminal the
        bar moved by `advance` with `postfix` (default: the description) next to it."""
        if not self.enabled:
            return
        self.steps += 1
        elapsed = time.monotonic() - self.clock
        if self.bar is None:
            self.log.info("%s %s (elapsed %.0fs)", self.label, description, elapsed)
            return
        self.log.debug("%s %s (elapsed %.0fs)", self.label, description, elapsed)
        if postfix:
            self.bar.set_postfix({k: _figure(v) for k, v in postfix.items()}, refresh=False)
        elif description:
            self.bar.set_postfix_str(description if len(description) <= 60 else description[:57] + "...", refresh=False)
        if not (advance and self.bar.update(advance)):  # update redraws at most every 0.1 s
            self.bar.refresh()  # a step is seconds long: always show it

    def on_step(self, info: StepInfo) -> None:
        """The `on_step` callback of a library function (see `overlay.progress`)."""
        if self.enabled:
            self.step(describe(info), advance=info.advance, **{info.stage: info.step, **info.figures})

    def close(self) -> None:
        if self.bar is not None:
            self.bar.close()
            self.bar = None
        if self._redirect is not None:
            self._redirect.__exit__(None, None, None)
            self._redirect = None

    def __enter__(self) -> Progress:
        return self

    def __exit__(self, *exc) -> None:
        self.close()
