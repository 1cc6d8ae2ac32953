"""The one place that configures logging: the lab's own loggers only (stderr, short lines),
py4j silenced; the root logger and its handlers are never touched."""

from __future__ import annotations

import logging
import sys


class _StderrHandler(logging.StreamHandler):
    """Writes to whatever `sys.stderr` is when a record is emitted, not when configured: a
    command run in-process (a test, a notebook) may have swapped and closed the stream since."""

    def __init__(self) -> None:
        super().__init__(sys.stderr)

    @property
    def stream(self):
        return sys.stderr

    @stream.setter
    def stream(self, _value) -> None:
        """StreamHandler.__init__ and setStream assign a stream; this handler keeps none."""


PACKAGES = ("pipelines", "overlay", "routing")
FORMAT = "%(asctime)s %(levelname)s %(name)s: %(message)s"


def configure(verbosity: int = 0) -> None:
    """Set the lab's package loggers to the verbosity, and give them a stderr handler unless the
    process already shows log records (a notebook's or a test runner's handlers on the root
    logger): those handlers are left as they are and receive the lab's records too."""
    level = logging.WARNING if verbosity < 0 else logging.INFO if verbosity == 0 else logging.DEBUG
    shown_above = bool(logging.getLogger().handlers)
    for name in PACKAGES:
        logger = logging.getLogger(name)
        logger.setLevel(level)
        for handler in [h for h in logger.handlers if isinstance(h, _StderrHandler)]:
            logger.removeHandler(handler)
        if not shown_above:
            handler = _StderrHandler()
            handler.setFormatter(logging.Formatter(FORMAT, datefmt="%H:%M:%S"))
            logger.addHandler(handler)
    for noisy in ("py4j", "py4j.clientserver", "py4j.java_gateway"):
        logging.getLogger(noisy).setLevel(logging.ERROR)
