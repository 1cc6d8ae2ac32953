"""Small summaries of stored overlay runs, for reports and dashboards.

Each function takes the lakehouse tables as DataFrames and returns a DataFrame whose size is set by
the number of runs (or degrees), not by the instance, so callers may bring it to the driver.
"""

from __future__ import annotations

from pyspark.sql import DataFrame, Window
from pyspark.sql import functions as F

from overlay import schema as S

BUDGET_RATIO = "budget_ratio"
BUDGET = "budget"
SHORT = "short"
LONG = "long"
RUN_LABEL = "run_label"
DEGREE = "degree"
NODES_AT_LEAST = "nodes_at_least"


def current_runs(runs: DataFrame, instances: DataFrame) -> DataFrame:
    """Complete runs built on the instance version stored now (older ones are history), with the
    budget they were asked for read from their params."""
    current = instances.select(S.INSTANCE, S.INGEST_ID)
    return with_budget(runs.filter(F.col(S.STATUS) == S.COMPLETE).join(current, on=[S.INSTANCE, S.INGEST_ID]))


def with_budget(runs: DataFrame) -> DataFrame:
    """Overlay runs with the budget they were asked for, read from their params: the ratio, d, m,
    the small-world rules or k (`budget` says which, as text)."""
    request = F.col(S.PARAMS)
    return (
        runs.withColumn(BUDGET_RATIO, F.get_json_object(request, "$.request.budget_ratio").cast("double"))
        .withColumn(SHORT, F.get_json_object(request, "$.request.short"))
        .withColumn(LONG, F.get_json_object(request, "$.request.long"))
        .withColumn(S.K, F.get_json_object(request, "$.request.k").cast("int"))
        .withColumn(
            BUDGET,
            F.coalesce(
                F.concat(
                    F.lit("ratio "),
                    F.get_json_object(request, "$.request.budget_ratio"),
                    F.when(
                        F.get_json_object(request, "$.request.ratio_edges") == "degree", F.lit(", m = d|V|/2")
                    ).otherwise(F.lit("")),
                ),
                F.concat(F.lit("d = "), F.get_json_object(request, "$.request.max_degree")),
                F.concat(F.lit("m = "), F.get_json_object(request, "$.request.max_edges")),
                F.when(F.col(S.ALGORITHM) == "swico", F.concat_ws("-", SHORT, LONG)),
                F.concat(F.lit("k = "), F.col(S.K).cast("string")),
                F.lit("none"),
            ),
        )
    )


def run_quality(runs: DataFrame, metrics: DataFrame) -> DataFrame:
    """One row per current run: its budget and its quality metrics."""
    return runs.select(S.INSTANCE, S.RUN_ID, S.ALGORITHM, BUDGET, BUDGET_RATIO, SHORT, LONG, S.K, S.SECONDS).join(
        metrics.select(
            S.RUN_ID,
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
        ),
        on=S.RUN_ID,
    )


def degree_distribution(edges: DataFrame, nodes: DataFrame) -> DataFrame:
    """Per run and degree k: how many nodes have degree at least k (the CCDF's counts), from k = 0.

    `edges`: run_id, u, v; `nodes`: run_id, nodes (the instance's node count, so nodes without
    links count at degree 0)."""
    ends = edges.select(S.RUN_ID, F.col(S.U).alias(S.NODE_ID)).unionByName(
        edges.select(S.RUN_ID, F.col(S.V).alias(S.NODE_ID))
    )
    degrees = ends.groupBy(S.RUN_ID, S.NODE_ID).agg(F.count(F.lit(1)).alias(DEGREE))
    histogram = degrees.groupBy(S.RUN_ID, DEGREE).agg(F.count(F.lit(1)).alias("_n"))
    linked = histogram.groupBy(S.RUN_ID).agg(F.sum("_n").alias("_linked"))
    isolated = nodes.join(linked, on=S.RUN_ID, how="left").select(
        S.RUN_ID,
        F.lit(0).cast("long").alias(DEGREE),
        (F.col(S.NODES) - F.coalesce(F.col("_linked"), F.lit(0))).alias("_n"),
    )
    counts = histogram.unionByName(isolated)
    at_least = Window.partitionBy(S.RUN_ID).orderBy(F.desc(DEGREE)).rowsBetween(Window.unboundedPreceding, 0)
    return counts.select(S.RUN_ID, DEGREE, F.sum("_n").over(at_least).alias(NODES_AT_LEAST))
