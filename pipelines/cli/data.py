"""Commands over instances, runs and tables: ingest, instances, runs, import-overlay, export,
register, info."""

from __future__ import annotations

import argparse

from overlay import schema as S
from overlay.instance.churn import ATTACHMENTS
from overlay.instance.synthetic import DISTRIBUTIONS
from pipelines import catalog, ingest, overlays, runs, view
from pipelines.cli.command import Command, add_command, checked
from pipelines.cli.flags import integer, non_negative_int, positive_int, share
from pipelines.console import format_table
from pipelines.lakehouse import Lakehouse
from pipelines.spark import stack_report

IMPORT_COLUMNS = (S.RUN_ID, S.INSTANCE, S.ALGORITHM, S.STATUS, S.ROWS_READ, S.EDGES, S.REJECTED, S.DUPLICATES)
HISTORY_COLUMNS = (
    S.INGEST_ID,
    "version",
    S.SOURCE,
    S.NODES,
    S.TOPICS,
    S.SUBSCRIPTIONS,
    S.CREATED_AT,
    S.SUPERSEDED_AT,
)


def print_instances(lakehouse: Lakehouse, names: list[str] | None = None) -> None:
    frame = lakehouse.read(S.INSTANCES)
    if names is not None:
        frame = frame.filter(frame[S.INSTANCE].isin(names))
    rows = [r.asDict() for r in frame.orderBy(S.INSTANCE).collect()]  # one row per instance
    if not rows:
        print("no instances yet: create one with `python -m pipelines ingest ...`")
        return
    print(format_table(rows, ingest.SUMMARY_COLUMNS))


def print_history(lakehouse: Lakehouse, instance: str) -> None:
    rows = [r.asDict() for r in lakehouse.instance_history(instance).collect()]  # the kept versions
    latest = lakehouse.instance_row(instance)
    current = latest[S.INGEST_ID]
    if not any(r[S.INGEST_ID] == current for r in rows):  # stored before versions were kept
        rows.insert(0, latest.asDict())
    for row in rows:
        row["version"] = "current" if row[S.INGEST_ID] == current else "earlier"
    print(f"Versions of instance {instance} (newest first; `history` in the settings says how many are kept):")
    print(format_table(rows, HISTORY_COLUMNS))


# ingest ------------------------------------------------------------------------------------


def _ingest_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--instance", required=True, help="name of the instance to create or replace")
    parser.add_argument("--source", required=True, choices=ingest.SOURCES, help="where the subscriptions come from")
    synthetic = parser.add_argument_group("--source synthetic")
    synthetic.add_argument("--dist", choices=DISTRIBUTIONS, help="topic popularity distribution")
    synthetic.add_argument("--nodes", type=positive_int, help="number of nodes |V|")
    synthetic.add_argument("--topics", type=positive_int, help="number of topics |T|")
    synthetic.add_argument("--min-subs", type=positive_int, help="smallest subscription size")
    synthetic.add_argument("--max-subs", type=positive_int, help="largest subscription size")
    synthetic.add_argument("--alpha", type=float, default=2.0, help="Zipf exponent (default 2.0)")
    synthetic.add_argument(
        "--expo-rate",
        type=float,
        default=10.0,
        help="Expo: weight of rank r is exp(-rate * r / T) (default 10.0)",
    )
    files = parser.add_argument_group("--source social / subscriptions")
    files.add_argument("--path", help="input file (social: edge list, .gz or .mtx; subscriptions: CSV or Parquet)")
    files.add_argument(
        "--dataset",
        choices=tuple(ingest.DATASETS),
        help="social: a graph shipped with the lab instead of --path (facebook: friendships; twitter: followers)",
    )
    files.add_argument("--directed", action="store_true", help="social: a line 'a b' means a follows b")
    files.add_argument("--reverse", action="store_true", help="social, directed: a line 'a b' means b follows a")
    files.add_argument("--sample-bfs", type=positive_int, help="social: BFS-sample this many nodes")
    files.add_argument(
        "--feed-seeds",
        type=positive_int,
        help="social: a feed sample (Rappel's LiveJournal workload; a friendship is two follows) from this many "
        "random seed journals; the universe is their followers",
    )
    files.add_argument(
        "--feed-publishers",
        type=positive_int,
        help="social: the feed sample's publishers, the journals most followed from the universe",
    )
    churn = parser.add_argument_group("--source churn (the next days of an instance: docs/concepts/day-two.md)")
    churn.add_argument(
        "--from",
        dest="from_instance",
        metavar="INSTANCE",
        help="churn: start from this instance's current version (default: --instance's own)",
    )
    churn.add_argument("--days", type=positive_int, help="churn: how many days (versions) to write")
    churn.add_argument(
        "--rate",
        type=share,
        help="churn: subscription changes a day, as a share of the subscriptions in [0, 1] "
        "(unsubscribe, swap and subscribe in equal thirds)",
    )
    churn.add_argument(
        "--node-rate",
        type=share,
        help="churn: nodes leaving a day as a share of the nodes in [0, 1] (as many arrive; default 0)",
    )
    churn.add_argument(
        "--attachment",
        choices=ATTACHMENTS,
        help="churn: how a subscriber picks a new topic: popularity (in proportion to its subscribers) or "
        "triadic (a topic of a co-subscriber: a friend of a friend); default triadic on social instances, "
        "else popularity",
    )
    parser.add_argument("--seed", type=non_negative_int, help="random seed (synthetic, BFS sampling, churn)")


def _ingest(args, request, spark, lakehouse) -> None:
    row = ingest.run(spark, lakehouse, args.instance, request.spec, request.kept, progress=not args.quiet)
    print_instances(lakehouse, [row[S.INSTANCE]])


def _instances(args, _request, _spark, lakehouse) -> None:
    if args.history is not None:
        print_history(lakehouse, args.history)
    else:
        print_instances(lakehouse)


# runs --------------------------------------------------------------------------------------


def _runs_arguments(parser: argparse.ArgumentParser, common: argparse.ArgumentParser) -> None:
    """`runs [filters]`, `runs show ID`, `runs delete ID`."""
    parser.add_argument("--instance", help="only runs on this instance")
    parser.add_argument("--algorithm", help="only runs made by this algorithm (or protocol)")
    parser.add_argument(
        "--status", choices=(S.RUNNING, S.COMPLETE, S.FAILED, S.DELETED), help="only runs in this state"
    )
    parser.add_argument("--kind", choices=tuple(runs.KINDS), help="only runs of this kind")
    parser.add_argument("--limit", type=positive_int, default=100, help="the newest this many (default 100)")
    actions = parser.add_subparsers(dest="runs_action", metavar="ACTION")
    kind_help = "when the id names runs of several kinds"
    show = actions.add_parser(
        "show", parents=[common], help="one run: its row, parameters, metrics, last rounds, dependents"
    )
    show.add_argument("id", metavar="ID")
    show.add_argument("--kind", dest="id_kind", choices=tuple(runs.KINDS), help=kind_help)
    show.add_argument(
        "--rounds", type=positive_int, default=10, help="how many of the last rounds to show (default 10)"
    )
    delete = actions.add_parser(
        "delete",
        parents=[common],
        help="delete a run and what derives from it; run again to finish an interrupted delete",
    )
    delete.add_argument("id", metavar="ID")
    delete.add_argument("--kind", dest="id_kind", choices=tuple(runs.KINDS), help=kind_help)


def _runs(args, _request, _spark, lakehouse) -> int:
    action = getattr(args, "runs_action", None)
    if action == "show":
        runs.print_details(runs.show_run(lakehouse, args.id, args.id_kind, args.rounds))
    elif action == "delete":
        deleted = runs.delete_run(lakehouse, args.id, args.id_kind)
        rows = [
            {
                runs.KIND: d.kind,
                S.RUN_ID: ", ".join(d.run_ids),
                "rows deleted": sum(d.rows.values()),
                "tables": ", ".join(sorted(d.rows)),
            }
            for d in deleted
        ]
        derived = sum(len(d.run_ids) for d in deleted) - 1
        print(f"Deleted {args.id} and {derived} run(s) derived from it:")
        print(format_table(rows, [runs.KIND, S.RUN_ID, "rows deleted", "tables"]))
    else:
        which = runs.RunFilter(args.instance, args.algorithm, args.status, args.kind, args.limit)
        listed, more = runs.list_runs(lakehouse, which)
        if not listed:
            print("no runs match: make one with `python -m pipelines design ...` (or import-overlay, route)")
            return 0
        print(format_table(listed, runs.LIST_COLUMNS))
        if more:
            print(f"(the newest {which.limit} shown; --limit N shows more)")
    return 0


# import-overlay, export, register, info ---------------------------------------------------


def _check_import(args, _settings) -> None:
    overlays.check_run_id(args.run_id)
    ingest.check_input_path(args.path)


def _import(args, _request, spark, lakehouse) -> None:
    run = overlays.run_import(spark, lakehouse, args.instance, args.run_id, args.path, replace=args.replace)
    print(format_table([run.asDict()], IMPORT_COLUMNS))


def _export(args, _request, spark, lakehouse) -> None:
    links = overlays.run_export(spark, lakehouse, args.run_id, args.out)
    print(f"wrote {links:,} links of run {args.run_id} to {args.out}")


def _prepare_view(args, _settings) -> view.ViewRequest:
    return checked(view.ViewRequest(args.run_id, args.out, args.topic, args.max_nodes, args.seed), None)


def _view(_args, request, spark, lakehouse) -> None:
    shown = view.run_view(spark, lakehouse, request)
    print(f"wrote {request.out}: {shown.title}; {len(shown.links):,} links")


def _check_register(args, _settings) -> None:
    catalog.check_name(args.schema, "schema")
    if args.catalog:
        catalog.check_name(args.catalog, "catalog")


def _register(args, _request, spark, lakehouse) -> None:
    registered = catalog.register_tables(
        spark,
        lakehouse,
        args.schema,
        args.catalog or None,
        create_missing=args.create_missing,
        repoint=args.repoint,
    )
    print(f"Tables of {lakehouse.root} in schema {'.'.join(filter(None, (args.catalog, args.schema)))}:")
    print(format_table([r.as_row() for r in registered], catalog.COLUMNS))


def _info(_args, repositories, spark, lakehouse) -> None:
    info = stack_report(spark, repositories)
    info["lakehouse"] = lakehouse.root
    print(format_table([{"piece": k, "version / state": v} for k, v in info.items()], ["piece", "version / state"]))


def add_commands(commands: argparse._SubParsersAction, common: argparse.ArgumentParser) -> None:
    _ingest_arguments(
        add_command(
            commands,
            "ingest",
            "create or replace an instance from a synthetic, social or subscriptions source, or churn its next days",
            common,
            Command(_ingest, prepare=ingest.ingest_request),
        )
    )
    instances = add_command(
        commands, "instances", "list the stored instances and their counts", common, Command(_instances)
    )
    instances.add_argument(
        "--history",
        metavar="NAME",
        help="list the stored versions of one instance (runs on kept versions stay readable)",
    )
    _runs_arguments(
        add_command(
            commands,
            "runs",
            "list runs of every kind, or show or delete one: runs [show|delete ID]",
            common,
            Command(_runs),
        ),
        common,
    )
    importer = add_command(
        commands,
        "import-overlay",
        "store an existing overlay (CSV/Parquet with u,v in node keys) as a run",
        common,
        Command(_import, prepare=_check_import),
    )
    importer.add_argument("--instance", required=True, help="the instance whose node keys the file uses")
    importer.add_argument("--run-id", required=True, help="the id to store the overlay under")
    importer.add_argument("--path", required=True, help="a CSV or Parquet file with columns u, v")
    importer.add_argument("--replace", action="store_true", help="delete a stored run of this id first (runs delete)")
    export = add_command(
        commands, "export", "write a run's links as u,v,added_order in node keys", common, Command(_export)
    )
    export.add_argument("--run-id", required=True, help="a complete run of any kind")
    export.add_argument("--out", required=True, help="a .csv or .parquet file")
    viewer = add_command(
        commands,
        "view",
        "an overlay run, or one topic's subgraph of it, as an interactive self-contained HTML page",
        common,
        Command(_view, prepare=_prepare_view),
    )
    viewer.add_argument("--run-id", required=True, help="a complete run of any kind")
    viewer.add_argument("--topic", metavar="KEY", help="show this topic's subgraph (a topic key of the run's instance)")
    viewer.add_argument("--out", required=True, help="the .html file to write (it opens offline)")
    viewer.add_argument(
        "--max-nodes",
        type=positive_int,
        default=view.MAX_NODES,
        help=f"show at most this many nodes: a larger graph is a breadth-first sample (default {view.MAX_NODES})",
    )
    viewer.add_argument("--seed", type=integer, default=1, help="the sample's seed (default 1)")
    registrar = add_command(
        commands,
        "register",
        "register the lakehouse's Delta tables in a catalog schema, for SQL clients (the dashboard)",
        common,
        Command(_register, prepare=_check_register),
    )
    registrar.add_argument("--schema", required=True, help="the schema to register them in (created if missing)")
    registrar.add_argument("--catalog", default="", help="default: the session's current catalog")
    registrar.add_argument(
        "--create-missing",
        action="store_true",
        help="first create the declared tables no job has written yet, empty, so every query over the schema resolves",
    )
    registrar.add_argument(
        "--repoint",
        action="store_true",
        help="re-point an external table of the same name registered on another location (a moved lakehouse)",
    )
    add_command(
        commands,
        "info",
        "show the Spark / Delta / GraphFrames stack in use",
        common,
        Command(_info, prepare=lambda _args, settings: settings.jars.maven_repositories),
    )
