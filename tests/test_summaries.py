"""The report's summaries: current runs and their budgets, degree distributions, routing ratios."""

import json
from datetime import datetime

from chispa import assert_df_equality

from overlay import schema as S
from overlay.summaries import current_runs, degree_distribution
from routing.summaries import MASS_SHARE, load_percentiles, routing_summary


def test_degree_distribution_counts_nodes_with_at_least_each_degree(spark):
    edges = spark.createDataFrame([("r", 0, 1), ("r", 0, 2), ("r", 1, 2), ("r", 2, 3)], "run_id string, u long, v long")
    nodes = spark.createDataFrame([("r", 5)], "run_id string, nodes long")
    # Degrees 2, 2, 3, 1 and one node without links.
    expected = spark.createDataFrame(
        [("r", 3, 1), ("r", 2, 3), ("r", 1, 4), ("r", 0, 5)], "run_id string, degree long, nodes_at_least long"
    )
    assert_df_equality(degree_distribution(edges, nodes), expected, ignore_row_order=True, ignore_nullable=True)


def test_current_runs_keep_complete_runs_of_the_stored_instance_version(spark):
    def run(run_id, ingest, status, request):
        return (run_id, "i", ingest, request.get("algorithm", "gpm"), json.dumps({"request": request}), status)

    runs = spark.createDataFrame(
        [
            run("a", "v2", "complete", {"budget_ratio": 0.2}),
            run("b", "v2", "complete", {"max_degree": 4}),
            run("c", "v2", "complete", {"algorithm": "swico", "short": "gswico", "long": "chord"}),
            run("old", "v1", "complete", {"budget_ratio": 0.2}),
            run("bad", "v2", "failed", {"budget_ratio": 0.2}),
        ],
        "run_id string, instance string, ingest_id string, algorithm string, params string, status string",
    )
    instances = spark.createDataFrame([("i", "v2")], "instance string, ingest_id string")
    got = current_runs(runs, instances).select(S.RUN_ID, "budget", "budget_ratio")
    expected = spark.createDataFrame(
        [("a", "ratio 0.2", 0.2), ("b", "d = 4", None), ("c", "gswico-chord", None)],
        "run_id string, budget string, budget_ratio double",
    )
    assert_df_equality(got, expected, ignore_row_order=True, ignore_nullable=True)


def test_routing_ratios_are_against_scribe_on_the_oblivious_overlay_of_the_same_workload(spark):
    now = datetime(2026, 11, 26)
    routing_runs = spark.createDataFrame(
        [
            (rid, "i", seed, "complete", 5, 50, 1.0, now, params)
            for rid, seed, params in (
                ("s", 1, '{"seed": 1}'),
                ("p", 1, '{"mass_share": 0.05}'),
                ("q", 2, '{"mass_share": 0}'),
            )
        ],
        "routing_run_id string, instance string, seed long, status string, supersteps long, messages long, "
        "seconds double, started_at timestamp, params string",
    )
    metrics = spark.createDataFrame(
        [
            ("s", "base", "scribe", 10, 100, 10.0, 20, 1.0),
            ("p", "sw", "pie", 10, 25, 6.0, 9, 1.0),
            ("q", "sw", "pie", 10, 30, 7.0, 9, 1.0),
        ],
        "routing_run_id string, run_id string, protocol string, publications long, routing_overhead long, "
        "avg_path_length double, max_path_length long, delivery_ratio double",
    )
    overlays = spark.createDataFrame(
        [("base", "random", "chord"), ("sw", "gswico", "chord")], "run_id string, short string, long string"
    )
    got = routing_summary(routing_runs, metrics, overlays).select(
        S.ROUTING_RUN_ID, S.OVERLAY_TYPE, S.OVERHEAD_RATIO, S.PATH_RATIO, MASS_SHARE
    )
    expected = spark.createDataFrame(  # q: no Scribe(-) with seed 2; p: a dissemination with 5% of the nodes down
        [("s", "-", 1.0, 1.0, None), ("p", "S", 0.25, 0.6, 0.05), ("q", "S", None, None, None)],
        "routing_run_id string, overlay_type string, overhead_ratio double, path_ratio double, mass_share double",
    )
    assert_df_equality(got, expected, ignore_row_order=True, ignore_nullable=True)


def test_load_percentiles_give_101_points_per_run(spark):
    load = spark.createDataFrame(
        [("r", n, n * 10, n, 1) for n in range(1, 11)],
        "routing_run_id string, node_id long, received long, pure_forwards long, delivered long",
    )
    rows = load_percentiles(load).orderBy("percentile").collect()
    assert len(rows) == 101
    assert (rows[0]["received"], rows[50]["received"], rows[100]["received"]) == (10, 50, 100)
