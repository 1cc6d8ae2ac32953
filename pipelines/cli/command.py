"""A command's handler, attached to its subparser: what it checks without Spark, then what it
runs. The dispatcher calls `args.handler`; no command is named in an if/elif chain."""

from __future__ import annotations

import argparse
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from pipelines.overlays import check_run_id


def _nothing(_args: argparse.Namespace, _settings: Any) -> None:
    return None


@dataclass(frozen=True)
class Command:
    # (args, request, spark, lakehouse) -> exit code (None: 0)
    execute: Callable[..., int | None]
    # (args, settings) -> the validated request; every check that needs no Spark
    prepare: Callable[..., object] = _nothing
    spark: bool = True  # False: runs without a session or lakehouse (execute gets args, request)


def add_command(
    commands: argparse._SubParsersAction,
    name: str,
    summary: str,
    common: argparse.ArgumentParser,
    handler: Command | None,
    description: str | None = None,
) -> argparse.ArgumentParser:
    """A subparser with the global flags (`common`), its one-line help and its handler (None for
    a command whose subcommands carry the handlers)."""
    parser = commands.add_parser(name, parents=[common], help=summary, description=description or summary)
    if handler is not None:
        parser.set_defaults(handler=handler)
    return parser


def checked(request, run_id: str | None):
    """A request after its own checks, and the run id the user named (if any) checked too."""
    request.check()
    if run_id is not None:
        check_run_id(run_id)
    return request
