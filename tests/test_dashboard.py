"""The AI/BI dashboard (resources/overlay_lab.lvdash.json) and the catalog registration it reads.

Every dataset query runs through Spark SQL on a lakehouse registered in a schema, so a renamed
column fails here, not on the dashboard; the numbers are the report's (`overlay.summaries`,
`routing.summaries`), and every widget names a dataset of the file and columns of that dataset.
"""

from __future__ import annotations

import contextlib
import json
import re
from datetime import datetime, timedelta
from pathlib import Path

import pytest
from pyspark.sql import functions as F
from pyspark.sql.types import BooleanType, DoubleType, IntegerType, LongType, StringType, TimestampType

from overlay import schema as S
from overlay.errors import InputError
from overlay.frames import local_frame
from overlay.instance.synthetic import SyntheticSpec
from overlay.summaries import (
    BUDGET,
    BUDGET_RATIO,
    DEGREE,
    NODES_AT_LEAST,
    RUN_LABEL,
    current_runs,
    degree_distribution,
    run_quality,
)
from pipelines import catalog
from pipelines.catalog import PRESENT, REGISTERED, REPOINTED, CatalogConflict, register_tables
from pipelines.lakehouse import Lakehouse
from routing.summaries import routing_summary
from tests.helpers import run_cli

DASHBOARD = Path(__file__).resolve().parent.parent / "resources" / "overlay_lab.lvdash.json"
SCHEMA = "dashboard_lab"
INSTANCE = "dash"
SPEC = SyntheticSpec(dist="zipf", nodes=12, topics=6, min_subs=1, max_subs=3, seed=2)
START = datetime(2026, 11, 26, 4, 0)

# What each dataset returns: the widgets and the dashboard's users rely on these names.
COLUMNS = {
    "overlay_quality": [
        S.INSTANCE,
        S.RUN_ID,
        RUN_LABEL,
        S.ALGORITHM,
        BUDGET,
        BUDGET_RATIO,
        S.NODES,
        S.EDGES,
        S.AVG_DEGREE,
        S.MAX_DEGREE,
        S.TCO_SUPPORT,
        S.TOPICS_CONNECTED,
        S.SUBSCRIBED_TOPICS,
        S.DIAMETER_AVG,
        S.DIAMETER_MAX,
        S.DIAMETER_METHOD,
        S.SECONDS,
        S.FINISHED_AT,
    ],
    "degree_distribution": [S.INSTANCE, S.RUN_ID, RUN_LABEL, S.ALGORITHM, DEGREE, NODES_AT_LEAST, "share_at_least"],
    "greedy_rounds": [
        S.INSTANCE,
        S.RUN_ID,
        RUN_LABEL,
        S.ALGORITHM,
        S.ROUND,
        S.PHASE,
        S.EDGES_ADDED,
        S.CANDIDATES,
        S.EDGES,
        S.TCC,
        S.TCO_SUPPORT,
        S.SECONDS,
        S.SPARK_SECONDS,
        "elapsed_seconds",
    ],
    "routing_ratios": [
        S.INSTANCE,
        S.ROUTING_RUN_ID,
        S.RUN_ID,
        RUN_LABEL,
        S.PROTOCOL,
        S.OVERLAY_TYPE,
        S.PUBLICATIONS,
        S.SEED,
        S.ROUTING_OVERHEAD,
        S.AVG_PATH_LENGTH,
        S.MAX_PATH_LENGTH,
        S.DELIVERY_RATIO,
        S.OVERHEAD_RATIO,
        S.PATH_RATIO,
        S.SUPERSTEPS,
        S.MESSAGES,
        S.SECONDS,
        S.STARTED_AT,
    ],
    "routing_load": [
        S.INSTANCE,
        S.ROUTING_RUN_ID,
        RUN_LABEL,
        S.PROTOCOL,
        S.OVERLAY_TYPE,
        "percentile",
        S.RECEIVED,
        S.PURE_FORWARDS,
    ],
    "comparisons": [
        S.COMPARISON_ID,
        S.INSTANCE,
        S.SYSTEM,
        S.OVERLAY_TYPE,
        S.PROTOCOL,
        S.ROUTING_RUN_ID,
        S.TCO_SUPPORT,
        S.ROUTING_OVERHEAD,
        S.AVG_PATH_LENGTH,
        S.MAX_PATH_LENGTH,
        S.OVERHEAD_RATIO,
        S.PATH_RATIO,
        S.PAPER_COLUMN,
        S.PAPER_OVERHEAD_RATIO,
        S.PAPER_PATH_RATIO,
        S.COMPUTED_AT,
    ],
    "comparison_ratios": [S.COMPARISON_ID, S.INSTANCE, S.SYSTEM, "source", S.OVERHEAD_RATIO, S.PATH_RATIO],
    "run_history": [
        "kind",
        "id",
        S.RUN_ID,
        S.INSTANCE,
        "method",
        S.STATUS,
        S.STARTED_AT,
        S.FINISHED_AT,
        S.SECONDS,
        "failed",
        S.MESSAGE,
    ],
    "design_time": [S.RUN_ID, S.INSTANCE, S.ALGORITHM, S.STARTED_AT, "stage", S.SECONDS],
    "instances": [
        S.INSTANCE,
        S.SOURCE,
        S.NODES,
        S.TOPICS,
        S.SUBSCRIPTIONS,
        S.ROWS_READ,
        S.ROWS_ACCEPTED,
        S.REJECTED,
        S.DUPLICATES,
        S.UNSAMPLED,
        S.CREATED_AT,
    ],
}


def dashboard() -> dict:
    return json.loads(DASHBOARD.read_text())


def dataset_queries() -> dict[str, str]:
    return {d["name"]: "".join(d["queryLines"]) for d in dashboard()["datasets"]}


@contextlib.contextmanager
def in_schema(spark, schema: str):
    """Unqualified table names resolve in `schema`, as the dashboard's dataset_schema makes them."""
    previous = spark.catalog.currentDatabase()
    spark.catalog.setCurrentDatabase(schema)
    try:
        yield
    finally:
        spark.catalog.setCurrentDatabase(previous)


# A small lakehouse: rows as the jobs write them (writing them costs seconds, running the jobs
# minutes): current, failed and stale design runs, a Scribe(-) baseline, a workload without one.

_FILLER = {StringType: "x", LongType: 0, IntegerType: 0, DoubleType: 0.0, BooleanType: False, TimestampType: START}


def _append(spark, lakehouse: Lakehouse, table: S.TableSpec, records: list[dict]) -> None:
    """Rows with every column of the table: the values given, nulls or fillers elsewhere."""
    rows = [
        tuple(r.get(f.name, None if f.nullable else _FILLER[type(f.dataType)]) for f in table.schema.fields)
        for r in records
    ]
    local_frame(spark, rows, table.schema).write.format("delta").mode("append").save(lakehouse.path(table))


def _design(run_id: str, algorithm: str, request: dict, ingest_id: str, hour: int, status: str = S.COMPLETE, **values):
    params = json.dumps({"request": {"algorithm": algorithm, "seed": 1, **request}, "budget": {}}, sort_keys=True)
    started = START + timedelta(hours=hour)
    return {
        S.RUN_ID: run_id,
        S.INSTANCE: INSTANCE,
        S.INGEST_ID: ingest_id,
        S.ALGORITHM: algorithm,
        S.PARAMS: params,
        S.STATUS: status,
        S.STARTED_AT: started,
        S.FINISHED_AT: started + timedelta(seconds=30),
        S.SECONDS: 30.0,
        **values,
    }


def _metrics(run_id: str, edges: int, avg_degree: float, max_degree: int, tco_support: float) -> dict:
    return {
        S.RUN_ID: run_id,
        S.INSTANCE: INSTANCE,
        S.NODES: SPEC.nodes,
        S.EDGES: edges,
        S.AVG_DEGREE: avg_degree,
        S.MAX_DEGREE: max_degree,
        S.TCO_SUPPORT: tco_support,
        S.DIAMETER_METHOD: "skipped",
        S.COMPUTED_AT: START,
    }


def _routing(
    routing_run_id: str,
    run_id: str,
    protocol: str,
    publications: int,
    overhead: int,
    path: float | None,
    status: str = S.COMPLETE,
) -> tuple[dict, dict]:
    run = {
        S.ROUTING_RUN_ID: routing_run_id,
        S.RUN_ID: run_id,
        S.INSTANCE: INSTANCE,
        S.PROTOCOL: protocol,
        S.PUBLICATIONS: publications,
        S.SEED: 1,
        S.PARAMS: "{}",
        S.STATUS: status,
        S.STARTED_AT: START,
        S.SECONDS: 12.0,
        S.SUPERSTEPS: 5,
        S.MESSAGES: 100,
        S.MESSAGE: "lost a delivery" if status == S.FAILED else None,
    }
    metrics = {
        S.ROUTING_RUN_ID: routing_run_id,
        S.RUN_ID: run_id,
        S.PROTOCOL: protocol,
        S.PUBLICATIONS: publications,
        S.ROUTING_OVERHEAD: overhead,
        S.AVG_PATH_LENGTH: path,
        S.MAX_PATH_LENGTH: 7,
        S.DELIVERY_RATIO: 1.0,
        S.SUPERSTEPS: 5,
        S.COMPUTED_AT: START,
    }
    return run, metrics


@pytest.fixture(scope="module")
def lakehouse(spark, module_lakehouse) -> Lakehouse:
    lh = module_lakehouse
    ingest_id = "20261126T040000-dash"
    _append(
        spark,
        lh,
        S.INSTANCES,
        [
            {
                S.INSTANCE: INSTANCE,
                S.INGEST_ID: ingest_id,
                S.SOURCE: "synthetic",
                S.PARAMS: "{}",
                S.NODES: SPEC.nodes,
                S.TOPICS: SPEC.topics,
                S.CREATED_AT: START,
            }
        ],
    )
    timing = {S.SECONDS_SETUP: 2.0, S.SECONDS_ROUNDS: 20.0, S.SECONDS_COMMITS: 5.0, S.SECONDS_EVALUATE: 3.0}
    _append(
        spark,
        lh,
        S.OVERLAY_RUNS,
        [
            _design("dash.minmaxoda.s1", "minmaxoda", {}, ingest_id, 0, **timing),
            _design("dash.gpm.r0.2.s1", "gpm", {"budget_ratio": 0.2}, ingest_id, 1, **timing),
            _design("dash.gpm.r0.5.s1", "gpm", {"budget_ratio": 0.5}, ingest_id, 2),
            _design("dash.random-m.d3.s1", "random-m", {"max_degree": 3}, ingest_id, 3),
            _design("dash.swico.gswico-chord.s1", "swico", {"short": "gswico", "long": "chord"}, ingest_id, 4),
            _design("dash.swico.random-chord.s1", "swico", {"short": "random", "long": "chord"}, ingest_id, 5),
            _design("dash.gpm.r0.3.s1", "gpm", {"budget_ratio": 0.3}, ingest_id, 26, S.FAILED, **{S.MESSAGE: "boom"}),
            _design("dash.gpm.r0.4.s1", "gpm", {"budget_ratio": 0.4}, "an-earlier-ingest", 27),  # history, not current
        ],
    )
    _append(
        spark,
        lh,
        S.OVERLAY_METRICS,
        [
            _metrics("dash.minmaxoda.s1", 8, 1.333, 4, 1.0),
            _metrics("dash.gpm.r0.2.s1", 3, 0.5, 1, 0.4),
            _metrics("dash.gpm.r0.5.s1", 5, 0.833, 2, 0.8),
            _metrics("dash.random-m.d3.s1", 6, 1.0, 3, 0.3),
            _metrics("dash.swico.gswico-chord.s1", 24, 4.0, 4, 0.9),
            _metrics("dash.swico.random-chord.s1", 24, 4.0, 4, 0.5),
            _metrics("dash.gpm.r0.4.s1", 4, 0.667, 2, 0.6),
        ],
    )
    links = {
        "dash.minmaxoda.s1": [(0, 1), (0, 2), (0, 3), (1, 2), (4, 5), (5, 6), (6, 7), (8, 9)],
        "dash.gpm.r0.2.s1": [(0, 1), (2, 3), (4, 5)],
        "dash.gpm.r0.4.s1": [(0, 1)],
    }
    _append(
        spark,
        lh,
        S.OVERLAY_EDGES,
        [
            {S.RUN_ID: run_id, S.U: u, S.V: v, S.ADDED_ORDER: i, S.ROUND: i // 3}
            for run_id, pairs in links.items()
            for i, (u, v) in enumerate(pairs)
        ],
    )
    _append(
        spark,
        lh,
        S.OVERLAY_ROUNDS,
        [
            {
                S.RUN_ID: "dash.minmaxoda.s1",
                S.ROUND: r,
                S.EDGES_ADDED: 3,
                S.EDGES: 3 * (r + 1),
                S.TCO_SUPPORT: 0.3 * (r + 1),
                S.SECONDS: 1.5,
                S.COMPUTED_AT: START,
            }
            for r in range(3)
        ],
    )
    runs, metrics = zip(
        _routing("dash.scribe", "dash.swico.random-chord.s1", "scribe", 10, 40, 4.0),
        _routing("dash.pie", "dash.swico.gswico-chord.s1", "pie", 10, 10, 3.0),
        _routing("dash.pie.p20", "dash.swico.gswico-chord.s1", "pie", 20, 16, 3.5),  # no Scribe(-) on this workload
        _routing("dash.po.failed", "dash.swico.gswico-chord.s1", "po", 10, 0, None, S.FAILED),
    )
    _append(spark, lh, S.ROUTING_RUNS, list(runs))
    _append(spark, lh, S.ROUTING_METRICS, list(metrics))
    _append(
        spark,
        lh,
        S.ROUTING_LOAD,
        [
            {S.ROUTING_RUN_ID: rid, S.NODE_ID: n, S.RECEIVED: n * k, S.PURE_FORWARDS: n % 3, S.DELIVERED: 1}
            for rid, k in (("dash.scribe", 3), ("dash.pie", 1))
            for n in range(SPEC.nodes)
        ],
    )
    _append(
        spark,
        lh,
        S.ROUTING_COMPARISON,
        [
            {
                S.COMPARISON_ID: "dash.c1",
                S.INSTANCE: INSTANCE,
                S.SYSTEM: "BeaConvey(S, Pie)",
                S.OVERLAY_TYPE: "S",
                S.PROTOCOL: "pie",
                S.ROUTING_RUN_ID: "dash.pie",
                S.ROUTING_OVERHEAD: 10,
                S.OVERHEAD_RATIO: 0.25,
                S.PATH_RATIO: 0.75,
                S.PAPER_COLUMN: "FB1K",
                S.PAPER_OVERHEAD_RATIO: 0.355,
                S.PAPER_PATH_RATIO: 0.902,
                S.COMPUTED_AT: START,
            },
            {
                S.COMPARISON_ID: "dash.c1",
                S.INSTANCE: INSTANCE,
                S.SYSTEM: "Scribe(-)",
                S.OVERLAY_TYPE: "-",
                S.PROTOCOL: "scribe",
                S.ROUTING_RUN_ID: "dash.scribe",
                S.ROUTING_OVERHEAD: 40,
                S.OVERHEAD_RATIO: 1.0,
                S.PATH_RATIO: 1.0,
                S.COMPUTED_AT: START,
            },
        ],
    )
    return lh


@pytest.fixture(scope="module")
def registered(spark, lakehouse) -> list:
    return register_tables(spark, lakehouse, SCHEMA)


@pytest.fixture(scope="module")
def results(spark, registered) -> dict[str, tuple[list[str], list]]:
    """Each dataset's columns and rows, its query run in the registered schema."""
    with in_schema(spark, SCHEMA):
        frames = {name: spark.sql(sql) for name, sql in dataset_queries().items()}
        return {name: (frame.columns, frame.collect()) for name, frame in frames.items()}  # sized by runs


def test_registration_covers_the_stored_tables_and_is_idempotent(spark, lakehouse, registered):
    stored = [t.name for t in S.ALL_TABLES if lakehouse.exists(t)]
    assert [r.table for r in registered] == [f"{SCHEMA}.{name}" for name in stored]
    assert {r.status for r in registered} == {REGISTERED} and not any(r.created_empty for r in registered)
    assert [r.location for r in registered] == [lakehouse.path(S.table_named(name)) for name in stored]
    assert spark.table(f"{SCHEMA}.{S.OVERLAY_RUNS.name}").count() == lakehouse.read(S.OVERLAY_RUNS).count() == 8

    again = register_tables(spark, lakehouse, SCHEMA)
    assert [(r.table, r.location, r.status) for r in again] == [(r.table, r.location, PRESENT) for r in registered]
    assert {t.name for t in spark.catalog.listTables(SCHEMA) if not t.isTemporary} == set(stored)


def test_a_name_taken_elsewhere_is_refused_and_an_external_one_can_be_repointed(spark, tmp_path):
    first, moved = Lakehouse(spark, tmp_path / "first"), Lakehouse(spark, tmp_path / "moved")
    for lh in (first, moved):
        lh.ensure(S.INSTANCES)
    moved.ensure(S.OVERLAY_RUNS)
    schema = "dashboard_conflicts"
    try:
        instances, resilience = register_tables(
            spark,
            first,
            schema,
            create_missing=True,
            tables=(S.INSTANCES, S.RESILIENCE),
        )
        assert (instances.status, instances.location, instances.created_empty) == (
            REGISTERED,
            first.path(S.INSTANCES),
            False,
        )
        assert (resilience.status, resilience.created_empty) == (REGISTERED, True)  # made empty: queries resolve
        assert first.exists(S.RESILIENCE) and spark.table(f"{schema}.{S.RESILIENCE.name}").count() == 0
        spark.sql(f"CREATE TABLE {schema}.{S.OVERLAY_RUNS.name} (x INT) USING DELTA")  # managed: never dropped
        taken = rf"{schema}.instances is registered on \S*first/instances, not on"
        with pytest.raises(CatalogConflict, match=taken):
            register_tables(spark, moved, schema)
        with pytest.raises(CatalogConflict, match="is a managed table, not the lakehouse table"):
            register_tables(spark, moved, schema, repoint=True)
        spark.sql(f"DROP TABLE {schema}.{S.OVERLAY_RUNS.name}")
        statuses = {r.table.split(".")[-1]: r.status for r in register_tables(spark, moved, schema, repoint=True)}
        assert statuses == {"instances": REPOINTED, "overlay_runs": REGISTERED}
        _append(spark, moved, S.OVERLAY_RUNS, [{S.RUN_ID: "r", S.STATUS: S.RUNNING}])
        assert spark.table(f"{schema}.{S.OVERLAY_RUNS.name}").count() == 1  # a later commit, no new registration
        assert first.exists(S.INSTANCES)  # re-pointing dropped the catalog entry, not the files
    finally:
        spark.sql(f"DROP SCHEMA IF EXISTS {schema} CASCADE")


def test_a_volume_location_says_why_it_cannot_be_registered():
    class Refusing:
        def sql(self, statement):
            raise RuntimeError("[UC] cannot create a table in a volume")

    with pytest.raises(InputError, match="Unity Catalog defines no table on files in a volume"):
        catalog._create(Refusing(), "`main`.`lab`.`instances`", "/Volumes/main/lab/lakehouse/instances")
    with pytest.raises(RuntimeError, match="in a volume"):  # elsewhere the catalog's own error
        catalog._create(Refusing(), "`main`.`lab`.`instances`", "s3://bucket/lakehouse/instances")
    assert catalog.comparable("file:///tmp/lh/instances/") == catalog.comparable("/tmp/lh/instances")
    assert catalog.comparable("dbfs:/Volumes/a") == "/Volumes/a"


def test_register_command(lakehouse, registered):
    code, out, err = run_cli("--lakehouse", lakehouse.root, "register", "--schema", SCHEMA)
    assert code == 0, err
    assert f"Tables of {lakehouse.root} in schema {SCHEMA}:" in out
    assert f"{SCHEMA}.overlay_runs" in out and "already registered" in out
    code, _, err = run_cli("--lakehouse", lakehouse.root, "register", "--schema", "no spaces")
    assert code == 2 and "schema name 'no spaces' is not allowed" in err


def test_every_dataset_query_runs_and_returns_its_columns(results):
    assert set(results) == set(COLUMNS)
    for name, (columns, _rows) in results.items():
        assert columns == COLUMNS[name], name


def test_quality_views_are_the_reports(spark, lakehouse, results):
    _, rows = results["overlay_quality"]
    runs = current_runs(lakehouse.read(S.OVERLAY_RUNS), lakehouse.read(S.INSTANCES))
    report = run_quality(runs, lakehouse.read(S.OVERLAY_METRICS)).collect()
    keys = (BUDGET, BUDGET_RATIO, S.EDGES, S.AVG_DEGREE, S.MAX_DEGREE, S.TCO_SUPPORT)
    shown = {r[S.RUN_ID]: tuple(r[k] for k in keys) for r in rows}
    assert shown == {r[S.RUN_ID]: tuple(r[k] for k in keys) for r in report}
    labels = {r[S.RUN_ID]: r[RUN_LABEL] for r in rows}
    assert labels == {  # current runs only: not the failed one, not the one on an earlier instance version
        "dash.minmaxoda.s1": "minmaxoda",
        "dash.gpm.r0.2.s1": "gpm (ratio 0.2)",
        "dash.gpm.r0.5.s1": "gpm (ratio 0.5)",
        "dash.random-m.d3.s1": "random-m (d = 3)",
        "dash.swico.gswico-chord.s1": "swico (gswico-chord)",
        "dash.swico.random-chord.s1": "swico (random-chord)",
    }

    _, rows = results["degree_distribution"]
    ids = ["dash.minmaxoda.s1", "dash.gpm.r0.2.s1"]
    edges = lakehouse.read(S.OVERLAY_EDGES).filter(F.col(S.RUN_ID).isin(ids))
    nodes = spark.createDataFrame([(i, SPEC.nodes) for i in ids], f"{S.RUN_ID} string, {S.NODES} long")
    expected = {(r[S.RUN_ID], r[DEGREE], r[NODES_AT_LEAST]) for r in degree_distribution(edges, nodes).collect()}
    assert {(r[S.RUN_ID], r[DEGREE], r[NODES_AT_LEAST]) for r in rows if r[S.RUN_ID] in ids} == expected
    assert {r[S.RUN_ID] for r in rows} == set(labels)  # runs without links: everyone at degree 0
    assert all(r["share_at_least"] == 1.0 for r in rows if r[DEGREE] == 0)

    _, rows = results["greedy_rounds"]
    assert [(r[S.ROUND], r["elapsed_seconds"]) for r in rows] == [(0, 1.5), (1, 3.0), (2, 4.5)]


def test_routing_views_are_the_reports(lakehouse, results):
    _, rows = results["routing_ratios"]
    runs = current_runs(lakehouse.read(S.OVERLAY_RUNS), lakehouse.read(S.INSTANCES))
    report = routing_summary(lakehouse.read(S.ROUTING_RUNS), lakehouse.read(S.ROUTING_METRICS), runs).collect()
    keys = (S.OVERLAY_TYPE, S.ROUTING_OVERHEAD, S.OVERHEAD_RATIO, S.PATH_RATIO)
    shown = {r[S.ROUTING_RUN_ID]: tuple(r[k] for k in keys) for r in rows}
    assert shown == {r[S.ROUTING_RUN_ID]: tuple(r[k] for k in keys) for r in report}
    assert shown == {  # the failed run is left out; a workload without Scribe(-) has no ratios
        "dash.scribe": ("-", 40, 1.0, 1.0),
        "dash.pie": ("S", 10, 0.25, 0.75),
        "dash.pie.p20": ("S", 16, None, None),
    }

    _, rows = results["routing_load"]
    curve = {(r[S.ROUTING_RUN_ID], r["percentile"]): r[S.RECEIVED] for r in rows}
    assert len(curve) == 2 * 21 and curve["dash.scribe", 0] == 0 and curve["dash.scribe", 100] == 3 * (SPEC.nodes - 1)

    _, rows = results["comparison_ratios"]
    assert sorted((r[S.SYSTEM], r["source"], r[S.OVERHEAD_RATIO]) for r in rows) == [
        ("BeaConvey(S, Pie)", "paper (FB1K)", 0.355),
        ("BeaConvey(S, Pie)", "this lab", 0.25),
        ("Scribe(-)", "this lab", 1.0),
    ]


def test_run_history_has_every_run_and_why_it_failed(results):
    _, rows = results["run_history"]
    assert len(rows) == 8 + 4 and sum(r["failed"] for r in rows) == 2
    failed = {r["id"]: r[S.MESSAGE] for r in rows if r[S.STATUS] == S.FAILED}
    assert failed == {"dash.gpm.r0.3.s1": "boom", "dash.po.failed": "lost a delivery"}
    _, rows = results["design_time"]
    stages = {(r[S.RUN_ID], r["stage"]): r[S.SECONDS] for r in rows}
    assert stages == {
        (run, stage): s
        for run in ("dash.minmaxoda.s1", "dash.gpm.r0.2.s1")
        for stage, s in (("setup", 2.0), ("rounds", 20.0), ("commits", 5.0), ("evaluate", 3.0))
    }


def _field_names(query: dict) -> set[str]:
    return {field["name"] for field in query["fields"]}


def _encoded_fields(encodings: dict) -> list[dict]:
    found = []
    for value in encodings.values():
        for item in value if isinstance(value, list) else [value]:
            if isinstance(item, dict) and "fieldName" in item:
                found.append(item)
    return found


def test_every_widget_names_a_dataset_and_its_columns(results):
    definition = dashboard()
    datasets = [d["name"] for d in definition["datasets"]]
    assert len(set(datasets)) == len(datasets)
    widgets = [item["widget"] for page in definition["pages"] for item in page["layout"]]
    assert len({w["name"] for w in widgets}) == len(widgets)
    used = set()
    for widget in widgets:
        queries = {q["name"]: q["query"] for q in widget.get("queries", [])}
        for query in queries.values():
            assert query["datasetName"] in results, (widget["name"], query["datasetName"])
            used.add(query["datasetName"])
            columns = set(results[query["datasetName"]][0])
            for field in query["fields"]:
                referenced = set(re.findall(r"`([^`]+)`", field["expression"]))
                assert referenced and referenced <= columns, (widget["name"], field)
        for encoded in _encoded_fields(widget.get("spec", {}).get("encodings", {})):
            query = queries[encoded["queryName"]] if "queryName" in encoded else queries["main_query"]
            assert encoded["fieldName"] in _field_names(query), (widget["name"], encoded)
    assert used == set(datasets)  # no dataset without a widget
    assert [page["displayName"] for page in definition["pages"]] == ["Overlay quality", "Routing", "Run history"]
