"""The lakehouse's upkeep: maintain (Delta OPTIMIZE and VACUUM over the lab's tables)."""

from __future__ import annotations

import argparse

from pipelines import maintenance
from pipelines.cli.command import Command, add_command
from pipelines.cli.flags import non_negative_float
from pipelines.console import format_table

COLUMNS = ("table", "files_before", "files_after", "bytes_before", "bytes_after", "optimize_s", "vacuum_s")


def _prepare(args: argparse.Namespace, settings) -> maintenance.MaintainRequest:
    retain = settings.maintenance.retain_hours if args.retain_hours is None else args.retain_hours
    request = maintenance.MaintainRequest(retain, optimize=not args.skip_optimize, vacuum=not args.skip_vacuum)
    request.check()
    return request


def _maintain(args, request, spark, lakehouse) -> None:
    rows = maintenance.run_maintain(spark, lakehouse, request, progress=not args.quiet)
    print(format_table(rows, COLUMNS) if rows else "no lab table in this lakehouse")


def add_commands(commands: argparse._SubParsersAction, common: argparse.ArgumentParser) -> None:
    parser = add_command(
        commands,
        "maintain",
        "compact the lab's Delta tables (OPTIMIZE) and delete the files no version within the retention needs (VACUUM)",
        common,
        Command(_maintain, prepare=_prepare),
    )
    parser.add_argument(
        "--retain-hours",
        type=non_negative_float,
        help="keep every file a table version of the last H hours needs (default maintenance.retain_hours, 168: "
        "Delta's own; below it only when nothing else uses the lakehouse meanwhile)",
    )
    parser.add_argument("--skip-optimize", action="store_true", help="VACUUM only")
    parser.add_argument("--skip-vacuum", action="store_true", help="OPTIMIZE only")
