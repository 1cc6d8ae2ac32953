"""The lakehouse's upkeep: maintain (Delta OPTIMIZE and VACUUM over the lab's tables)."""

from __future__ import annotations

import argparse

from pipelines import ledger, maintenance
from pipelines.cli.command import Command, add_command
from pipelines.cli.flags import non_negative_float, positive_int
from pipelines.console import format_table

COLUMNS = ("table", "settled", "files_before", "files_after", "bytes_before", "bytes_after", "optimize_s", "vacuum_s")


def _prepare(args: argparse.Namespace, settings) -> maintenance.MaintainRequest:
    kept = settings.maintenance
    request = maintenance.MaintainRequest(
        kept.retain_hours if args.retain_hours is None else args.retain_hours,
        optimize=not args.skip_optimize,
        vacuum=not args.skip_vacuum,
        delete_dropped_runs=kept.delete_dropped_runs and not args.keep_dropped_runs,
        log_retain_hours=kept.log_retain_hours if args.log_retain_hours is None else args.log_retain_hours,
    )
    request.check()
    return request


def _maintain(args, request, spark, lakehouse) -> None:
    done = maintenance.run_maintain(spark, lakehouse, request, progress=not args.quiet)
    if request.delete_dropped_runs:
        routed = sum(len(d.run_ids) for d in done.deleted if d.kind == ledger.ROUTING.name)
        print(
            f"Deleted {done.runs_deleted - routed} overlay run(s) built on dropped instance versions"
            f" and {routed} routing run(s) on them"
        )
    print(format_table(done.tables, COLUMNS) if done.tables else "no lab table in this lakehouse")


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
    parser.add_argument(
        "--log-retain-hours",
        type=positive_int,
        help="keep each table's Delta log for H hours (default maintenance.log_retain_hours; unset: the "
        "table's own, Delta's 30 days); at least the VACUUM window",
    )
    parser.add_argument(
        "--keep-dropped-runs",
        action="store_true",
        help="keep the runs built on instance versions the retention dropped (deleted by default)",
    )
    parser.add_argument("--skip-optimize", action="store_true", help="VACUUM only")
    parser.add_argument("--skip-vacuum", action="store_true", help="OPTIMIZE only")
