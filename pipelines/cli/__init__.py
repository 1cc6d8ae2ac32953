"""`python -m pipelines [global flags] COMMAND ...` (also the `overlay-lab` console script).

Global flags (before or after the command): --lakehouse PATH, --config FILE, --master,
--shuffle-partitions, --driver-memory, --spark-conf KEY=VALUE, -v / -q. Each command's module
adds its subparser with a handler (`pipelines.cli.command.Command`): `main` checks what needs no
Spark (`prepare`), then starts one session and runs it (`execute`).
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

from overlay.errors import InputError
from pipelines import logs
from pipelines.cli.flags import StepArgumentError, StepParser
from pipelines.cli.parser import build_parser, parse_arguments
from pipelines.cli.workflows import DEFAULT_WORKFLOW, WorkflowPlan, execute_workflow, parse_step, plan_workflow
from pipelines.config import ConfigError, LabSettings, apply_overrides, load_settings
from pipelines.lakehouse import (
    Lakehouse,
    UnknownInstanceError,
    UnknownRunError,
    UnknownTableError,
    UnknownVersionError,
)
from pipelines.ledger import RunTakenOver
from pipelines.spark import cycle_regime_for, get_spark, lineage_for

__all__ = [
    "DEFAULT_WORKFLOW",
    "StepArgumentError",
    "StepParser",
    "WorkflowPlan",
    "build_parser",
    "execute",
    "execute_workflow",
    "main",
    "parse_arguments",
    "parse_step",
    "plan_workflow",
    "prepare",
    "settings_from",
]

USER_ERRORS = (
    InputError,
    ConfigError,
    UnknownInstanceError,
    UnknownRunError,
    UnknownTableError,
    UnknownVersionError,
    RunTakenOver,
)


def settings_from(args: argparse.Namespace) -> LabSettings:
    settings = load_settings(None if args.config is None else Path(args.config))
    overrides: dict[str, Any] = {
        "lakehouse": args.lakehouse,
        "spark.master": args.master,
        "spark.shuffle_partitions": args.shuffle_partitions,
        "spark.driver_memory": args.driver_memory,
        "spark.conf": dict(args.spark_conf) if args.spark_conf else None,
        # -v shows the JVM's warnings (and -vv its info lines) on the console; errors always.
        "spark.log_level": {0: None, 1: "WARN"}.get(args.verbose, "INFO"),
    }
    return apply_overrides(settings, overrides)


def prepare(args: argparse.Namespace, settings: LabSettings) -> object:
    """Every check of one command that needs no Spark: its validated request (or None)."""
    return args.handler.prepare(args, settings)


def execute(args: argparse.Namespace, request: object, spark, lakehouse: Lakehouse) -> int:
    """Run one prepared command on a session and lakehouse; its exit code."""
    return args.handler.execute(args, request, spark, lakehouse) or 0


def one_line(message: str) -> str:
    """A user error as one printable line: a message that lists its problems on lines of their
    own ("invalid settings in X:" then "  - ..." lines) joins them with "; "."""
    first, *rest = [line.strip() for line in message.splitlines() if line.strip()] or [""]
    line = " ".join([first, "; ".join(item.removeprefix("- ") for item in rest)]) if rest else first
    return "".join(c if c.isprintable() else "?" for c in line)


def main(argv: list[str] | None = None) -> int:
    args = parse_arguments(argv)
    logs.configure(-1 if args.quiet else args.verbose)
    try:
        settings = settings_from(args)
        request = prepare(args, settings)
        if not args.handler.spark:
            return args.handler.execute(args, request) or 0
        spark = get_spark(settings)
        lakehouse = Lakehouse(
            spark, settings.lakehouse_location(), lineage_for(spark, settings), cycle_regime_for(spark, settings)
        )
        return execute(args, request, spark, lakehouse)
    except USER_ERRORS as error:
        print(f"error: {one_line(str(error))}", file=sys.stderr)
        return 2
