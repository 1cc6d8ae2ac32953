"""Small summaries of stored routing runs, for reports and dashboards (sized by runs, not nodes)."""

from __future__ import annotations

from pyspark.sql import DataFrame
from pyspark.sql import functions as F

from overlay import schema as S

OVERLAY_TYPE = S.OVERLAY_TYPE
PERCENTILE = "percentile"
MASS_SHARE = "mass_share"  # a dissemination's share of nodes down (from its params; null for routing)
PERCENTILES = tuple(round(i / 100, 2) for i in range(101))
BASELINE_PROTOCOL, BASELINE_OVERLAY = "scribe", "-"


def overlay_type_column(short: str, long: str) -> F.Column:
    """BeaConvey Table 2's name of a swico run (SL, S, L, -) from its ring and finger kinds: the
    Column form of `overlay.smallworld.gswico.overlay_type`."""
    s = F.when(F.col(short) == "gswico", F.lit("S")).otherwise(F.lit(""))
    l_ = F.when(F.col(long) == "gswico", F.lit("L")).otherwise(F.lit(""))
    both = F.concat(s, l_)
    return F.when(both == "", F.lit("-")).otherwise(both)


def routing_summary(routing_runs: DataFrame, metrics: DataFrame, overlay_runs: DataFrame) -> DataFrame:
    """One row per complete routing run on a current overlay run (`overlay_runs` as
    `overlay.summaries.current_runs` gives them): its metrics, and its overhead and average path
    length as ratios against Scribe(-) on the same instance and workload (null without one), and
    the share of nodes a dissemination took down (`mass_share`, null where none were)."""
    overlays = overlay_runs.select(
        S.RUN_ID,
        overlay_type_column("short", "long").alias(OVERLAY_TYPE),
        "long",
    )
    runs = (
        routing_runs.filter(F.col(S.STATUS) == S.COMPLETE)
        .select(
            S.ROUTING_RUN_ID,
            S.INSTANCE,
            S.SEED,
            S.SUPERSTEPS,
            S.MESSAGES,
            S.SECONDS,
            F.nullif(F.get_json_object(S.PARAMS, "$.mass_share").cast("double"), F.lit(0.0)).alias(MASS_SHARE),
        )
        .join(
            metrics.select(
                S.ROUTING_RUN_ID,
                S.RUN_ID,
                S.PROTOCOL,
                S.PUBLICATIONS,
                S.ROUTING_OVERHEAD,
                S.AVG_PATH_LENGTH,
                S.MAX_PATH_LENGTH,
                S.DELIVERY_RATIO,
            ),
            on=S.ROUTING_RUN_ID,
        )
        .join(overlays, on=S.RUN_ID)
    )
    workload = [S.INSTANCE, S.PUBLICATIONS, S.SEED]
    baseline = (
        runs.filter((F.col(S.PROTOCOL) == BASELINE_PROTOCOL) & (F.col(OVERLAY_TYPE) == BASELINE_OVERLAY))
        .groupBy(*workload)
        .agg(F.min(F.struct(F.col("long"), S.ROUTING_OVERHEAD, S.AVG_PATH_LENGTH)).alias("_base"))
    )
    return (
        runs.join(baseline, on=workload, how="left")
        .withColumn(
            S.OVERHEAD_RATIO, F.col(S.ROUTING_OVERHEAD) / F.nullif(F.col(f"_base.{S.ROUTING_OVERHEAD}"), F.lit(0))
        )
        .withColumn(S.PATH_RATIO, F.col(S.AVG_PATH_LENGTH) / F.nullif(F.col(f"_base.{S.AVG_PATH_LENGTH}"), F.lit(0)))
        .drop("_base", "long")
    )


def load_percentiles(load: DataFrame) -> DataFrame:
    """Per routing run, the messages a node receives at each percentile of nodes (0, 1, ..., 100):
    the shape of the per-node load in 101 rows, whatever the number of nodes."""
    return (
        load.groupBy(S.ROUTING_RUN_ID)
        .agg(
            F.percentile_approx(S.RECEIVED, list(PERCENTILES), 100000).alias("_received"),
            F.percentile_approx(S.PURE_FORWARDS, list(PERCENTILES), 100000).alias("_forwards"),
        )
        .select(
            S.ROUTING_RUN_ID,
            F.inline(
                F.arrays_zip(
                    F.array(*[F.lit(p) for p in PERCENTILES]).alias(PERCENTILE),
                    F.col("_received").alias(S.RECEIVED),
                    F.col("_forwards").alias(S.PURE_FORWARDS),
                )
            ),
        )
    )
