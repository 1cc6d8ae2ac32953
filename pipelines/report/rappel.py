"""The report's Rappel part (ComNet'09): Fig. 1 (greedy best friends' coverage), Fig. 7
(latency and stretch over time through a failure), Fig. 9 (friend coverage and neighbour
overlap, by utility and alpha), Fig. 10 (against Scribe rooted at the publishers: forwarders that
do not subscribe, traffic against subscriptions) and Fig. 11 (rejoin requests by depth, control
traffic), each with the paper's numbers and a sentence saying whether its claim holds here.

Every frame is sized by runs, rounds, depths or subscription counts, never by nodes: per-node
rows are aggregated by Spark before they reach the driver."""

from __future__ import annotations

import json
from dataclasses import dataclass, field

import pandas as pd
from pyspark.sql import DataFrame
from pyspark.sql import functions as F

from overlay import schema as S
from overlay.rappel.greedy import full_coverage_by_friends
from pipelines.lakehouse import Lakehouse
from pipelines.rappel import PROTOCOL, ROUNDS_PER_HOUR

SECONDS_PER_ROUND = 3600 / ROUNDS_PER_HOUR
SETTINGS = "settings"
PAPER_FIG1 = (
    "over 95% of nodes have full coverage with the k = 6 greedy best friends (LiveJournal, 1,000 users of >= 5 feeds)"
)
PAPER_FIG7 = (
    "50% of nodes get each update within 100 ms and 95% within 500 ms; spikes at the start and after the failure "
    "and return fade fast; coordinate stretch median about 1.15, 95% below 1.25"
)
PAPER_FIG9 = (
    "91% of nodes have perfect coverage (seed of 250 feeds, 100 publishers, 5,582 subscribers); interest-only "
    "utility gives similar coverage but much lower neighbour overlap (overlap > 1 for 80%+ of nodes needs "
    "interest plus distance); alpha = 4 gives full coverage to 73% of multi-feed subscribers"
)
PAPER_FIG10 = (
    "Scribe reaches subscribers through non-subscribers (40 of them for 464 subscribers in the 5,001-node case); "
    "Rappel through none; Scribe's per-node traffic is unrelated to subscriptions, Rappel's grows with them"
)
PAPER_FIG11 = "rejoin requests per node fall exponentially with tree height; median control traffic under 2 msg/s"
RECOVERY = 1.25  # after the return, the median and p95 within 25% of their values before the failure
PAPER_COVERAGE, COVERAGE_SLACK = 0.91, 0.10  # Fig. 9: perfect coverage "near" the paper's within 10 points
MANY_FEEDS = 9  # Fig. 9: "each node that subscribes to 9 or more feeds has a minimum of 6 [alpha] feeds covered"
PAPER_ALPHA4 = 0.73  # Fig. 9: alpha 4 gives full coverage to 73% of multi-feed subscribers
DEPTH_NODES, FALLING = 5, -0.8  # Fig. 11a: depths of at least 5 nodes; Spearman's rho at most -0.8
RUN_COLUMNS = (
    S.RUN_ID,
    S.INSTANCE,
    S.NODES,
    SETTINGS,
    "rounds",
    "full_coverage_share",
    "multi_feed_full_share",
    "many_feeds_alpha_covered_share",
    "overlap_above_1_share",
    "overlap_median",
    "latency_median",
    "latency_p95",
    "stretch_median",
    "noise",
    "control_per_second_median",
    "control_per_second_p95",
)
TRAFFIC_COLUMNS = ("system", "run", S.FEEDS, "nodes", "data_sent_mean")
SCRIBE_COLUMNS = (
    S.ROUTING_RUN_ID,
    "feeds_of",
    S.PROTOCOL,
    S.PUBLICATIONS,
    "non_subscriber_forwarders",
    S.ROUTING_OVERHEAD,
    S.LATENCY_MEDIAN,
    S.LATENCY_P95,
    S.STRETCH_MEDIAN,
)
BOUND_COLUMNS = (S.INSTANCE, S.K, S.MIN_FEEDS, S.SAMPLE, S.SEED, "nodes", "friends", "full_coverage_share")
COVERAGE_COLUMNS = (
    S.RUN_ID,
    S.FEEDS,
    "nodes",
    "full_coverage_share",
    "covered_mean",
)  # feeds: MANY_FEEDS means "or more"


@dataclass
class RappelData:
    runs: pd.DataFrame  # RUN_COLUMNS, one row per current Rappel run
    rounds: pd.DataFrame  # run_id, round and the rappel_rounds measures
    traffic: pd.DataFrame  # TRAFFIC_COLUMNS: mean data messages sent per node by subscriptions
    rejoins: pd.DataFrame  # run_id, depth, nodes, rejoins_per_hour (single-feed runs)
    scribe: pd.DataFrame  # SCRIBE_COLUMNS: routing runs on a Rappel run's feeds
    bound: pd.DataFrame  # BOUND_COLUMNS: friend_bound summaries
    coverage: pd.DataFrame = field(default_factory=lambda: _empty(COVERAGE_COLUMNS))  # COVERAGE_COLUMNS (Fig. 9a)

    @property
    def empty(self) -> bool:
        return self.runs.empty and self.bound.empty and self.scribe.empty


def settings_of(params: str) -> str:
    """A run's settings in a few words (what differs between the runs of one figure)."""
    request = json.loads(params)["request"]
    words = [
        f"alpha {request['alpha']}",
        f"beta {request['beta']}",
        request["utility"],
        request["mode"],
        f"{request['hours']:g} h",
    ]
    if request.get("failure"):
        share, start, end = request["failure"]
        words.append(f"{share:.0%} fail at {start:g} h" + (f", back at {end:g} h" if end is not None else ""))
    if request.get("churn"):
        words.append(f"sessions {request['churn'][0]:g}/{request['churn'][1]:g} min")
    if request.get("proper_leaves"):
        words.append(f"{request['proper_leaves']:.0%} proper leaves")
    return ", ".join(words)


def _empty(columns) -> pd.DataFrame:
    return pd.DataFrame(columns=list(columns))


def gather(lakehouse: Lakehouse, runs: DataFrame, instances: DataFrame) -> RappelData:
    """`runs`: the current overlay runs; `instances`: the instances table."""
    rappel = runs.filter(F.col(S.ALGORITHM) == PROTOCOL).select(S.RUN_ID, S.INSTANCE, S.PARAMS)
    listed = rappel.join(instances.select(S.INSTANCE, S.NODES), S.INSTANCE).toPandas()  # one row per run
    ids = listed[S.RUN_ID].tolist()
    bound = _bound(lakehouse)
    scribe = _scribe(lakehouse, ids)
    if not ids or not lakehouse.exists(S.RAPPEL_ROUNDS):
        return RappelData(
            _empty(RUN_COLUMNS),
            _empty((S.RUN_ID, S.ROUND)),
            _empty(TRAFFIC_COLUMNS),
            _empty((S.RUN_ID, S.DEPTH, "nodes", "rejoins_per_hour")),
            scribe,
            bound,
        )
    rounds = lakehouse.read(S.RAPPEL_ROUNDS).filter(F.col(S.RUN_ID).isin(ids)).drop(S.COMPUTED_AT).toPandas()
    alphas = lakehouse.spark.createDataFrame(
        [(run_id, int(json.loads(params)["request"]["alpha"])) for run_id, params in zip(ids, listed[S.PARAMS])],
        f"{S.RUN_ID} string, _alpha int",
    )
    full, feeds_ = F.col(S.COVERED) == F.col(S.FEEDS), F.col(S.FEEDS)

    def share(hit, among):  # of the nodes `among`, those `hit`; null when there are none
        return F.try_divide(F.sum((hit & among).cast("double")), F.sum(among.cast("double")))

    nodes = (
        lakehouse.read(S.RAPPEL_NODES)
        .filter(F.col(S.RUN_ID).isin(ids))
        .join(alphas, S.RUN_ID)
        .groupBy(S.RUN_ID)
        .agg(
            share(full, feeds_ > 0).alias("full_coverage_share"),
            share(full, feeds_ > 1).alias("multi_feed_full_share"),
            share(F.col(S.COVERED) >= F.least(F.col("_alpha"), feeds_), feeds_ >= MANY_FEEDS).alias(
                "many_feeds_alpha_covered_share"
            ),
            F.avg((F.col(S.OVERLAP_RATIO) > 1).cast("double")).alias("overlap_above_1_share"),
            F.percentile(S.OVERLAP_RATIO, F.lit(0.5)).alias("overlap_median"),
        )
        .toPandas()
    )  # one row per run
    coverage = (
        lakehouse.read(S.RAPPEL_NODES)
        .filter(F.col(S.RUN_ID).isin(ids) & (F.col(S.FEEDS) > 0))
        .withColumn("_full", (F.col(S.COVERED) == F.col(S.FEEDS)).cast("double"))
        .withColumn(S.FEEDS, F.least(F.col(S.FEEDS), F.lit(MANY_FEEDS)))
        .groupBy(S.RUN_ID, S.FEEDS)
        .agg(
            F.count(F.lit(1)).alias("nodes"),
            F.avg("_full").alias("full_coverage_share"),
            F.avg(S.COVERED).alias("covered_mean"),
        )
        .orderBy(S.RUN_ID, S.FEEDS)
        .toPandas()  # runs x at most MANY_FEEDS rows
    )
    traffic = lakehouse.read(S.RAPPEL_TRAFFIC).filter(F.col(S.RUN_ID).isin(ids))
    per_node = (
        traffic.groupBy(S.RUN_ID, S.NODE_ID)
        .agg(
            F.sum(S.DATA_MESSAGES).alias("_data"),
            F.sum(F.col(S.JOINS) + F.col(S.TREE_PINGS) + F.col(S.FRIENDSHIP_MESSAGES)).alias("_control"),
            F.count(F.lit(1)).alias("_rounds"),
            F.sum(S.REJOINS_IN).alias("_rejoins"),
        )
        .withColumn("_per_second", F.col("_control") / (F.col("_rounds") * F.lit(SECONDS_PER_ROUND)))
        .cache()
    )
    control = (
        per_node.groupBy(S.RUN_ID)
        .agg(
            F.percentile("_per_second", F.lit(0.5)).alias("control_per_second_median"),
            F.percentile("_per_second", F.lit(0.95)).alias("control_per_second_p95"),
        )
        .toPandas()
    )
    feeds = lakehouse.read(S.RAPPEL_NODES).filter(F.col(S.RUN_ID).isin(ids)).select(S.RUN_ID, S.NODE_ID, S.FEEDS)
    by_feeds = (
        per_node.join(feeds, [S.RUN_ID, S.NODE_ID])
        .withColumn("_per_hour", F.col("_data") / (F.col("_rounds") / F.lit(ROUNDS_PER_HOUR)))
        .groupBy(S.RUN_ID, S.FEEDS)
        .agg(F.count(F.lit(1)).alias("nodes"), F.avg("_per_hour").alias("data_sent_mean"))
        .toPandas()  # runs x distinct subscription counts
    )
    by_feeds.insert(0, "system", "Rappel (per hour online)")
    by_feeds = by_feeds.rename(columns={S.RUN_ID: "run"})
    traffic_rows = pd.concat([by_feeds, _scribe_traffic(lakehouse, scribe)], ignore_index=True)
    rejoins = _rejoins(lakehouse, per_node, listed)
    per_node.unpersist()
    summary = listed.merge(nodes, on=S.RUN_ID, how="left").merge(control, on=S.RUN_ID, how="left")
    measured = (
        rounds.groupby(S.RUN_ID)
        .agg(
            rounds=(S.ROUND, "max"),
            noise=(S.NOISE, "sum"),
            latency_median=(S.LATENCY_MEDIAN, "median"),
            latency_p95=(S.LATENCY_P95, "median"),
            stretch_median=(S.STRETCH_MEDIAN, "median"),
        )
        .reset_index()
    )
    summary = summary.merge(measured, on=S.RUN_ID, how="left")
    summary[SETTINGS] = [settings_of(p) for p in summary[S.PARAMS]]
    return RappelData(
        summary[list(RUN_COLUMNS) + [S.PARAMS]].sort_values(S.RUN_ID).reset_index(drop=True),
        rounds.merge(listed[[S.RUN_ID, S.PARAMS]], on=S.RUN_ID),
        traffic_rows,
        rejoins,
        scribe,
        bound,
        coverage[list(COVERAGE_COLUMNS)],
    )


def _rejoins(lakehouse: Lakehouse, per_node: DataFrame, listed: pd.DataFrame) -> pd.DataFrame:
    """Per single-feed run and depth in the final tree: the nodes and their mean rejoin requests
    received per hour online (Fig. 11a; with several feeds a node has several depths)."""
    layout = lakehouse.read(S.FEED_TREES).filter(F.col(S.RUN_ID).isin(listed[S.RUN_ID].tolist()))
    last = layout.groupBy(S.RUN_ID).agg(F.max(S.ROUND).alias("_last"), F.countDistinct(S.TOPIC_ID).alias("_feeds"))
    final = (
        layout.join(last, S.RUN_ID)
        .filter((F.col(S.ROUND) == F.col("_last")) & (F.col("_feeds") == 1))
        .filter(F.col(S.DEPTH).isNotNull())
        .select(S.RUN_ID, S.NODE_ID, S.DEPTH)
    )
    return (
        per_node.join(final, [S.RUN_ID, S.NODE_ID])
        .withColumn("_per_hour", F.col("_rejoins") / (F.col("_rounds") / F.lit(ROUNDS_PER_HOUR)))
        .groupBy(S.RUN_ID, S.DEPTH)
        .agg(F.count(F.lit(1)).alias("nodes"), F.avg("_per_hour").alias("rejoins_per_hour"))
        .orderBy(S.RUN_ID, S.DEPTH)
        .toPandas()  # runs x depths
    )


def _scribe(lakehouse: Lakehouse, rappel_ids: list[str]) -> pd.DataFrame:
    """The complete routing runs made with --feeds of a current Rappel run, with their count of
    nodes that forward without subscribing."""
    if not rappel_ids or not lakehouse.exists(S.ROUTING_RUNS):
        return _empty(SCRIBE_COLUMNS)
    routed = (
        lakehouse.read(S.ROUTING_RUNS)
        .filter(F.col(S.STATUS) == S.COMPLETE)
        .select(S.ROUTING_RUN_ID, F.get_json_object(S.PARAMS, "$.feeds").alias("feeds_of"))
    )
    routed = routed.filter(F.col("feeds_of").isin(rappel_ids))
    forwarders = (
        lakehouse.read(S.ROUTING_LOAD)
        .filter(F.col(S.PURE_FORWARDS) > 0)
        .groupBy(S.ROUTING_RUN_ID)
        .agg(F.count(F.lit(1)).alias("non_subscriber_forwarders"))
    )
    metrics = lakehouse.read(S.ROUTING_METRICS).select(
        S.ROUTING_RUN_ID,
        S.PROTOCOL,
        S.PUBLICATIONS,
        S.ROUTING_OVERHEAD,
        S.LATENCY_MEDIAN,
        S.LATENCY_P95,
        S.STRETCH_MEDIAN,
    )
    rows = (
        routed.join(metrics, S.ROUTING_RUN_ID)
        .join(forwarders, S.ROUTING_RUN_ID, "left")
        .fillna(0, subset=["non_subscriber_forwarders"])
    )
    return rows.toPandas()[list(SCRIBE_COLUMNS)].sort_values(S.ROUTING_RUN_ID).reset_index(drop=True)


def _scribe_traffic(lakehouse: Lakehouse, scribe: pd.DataFrame) -> pd.DataFrame:
    """Per routing run on feeds and subscription count: mean messages a node sent on."""
    if scribe.empty:
        return _empty(TRAFFIC_COLUMNS)
    ids = scribe[S.ROUTING_RUN_ID].tolist()
    runs = lakehouse.read(S.ROUTING_RUNS).filter(F.col(S.ROUTING_RUN_ID).isin(ids)).select(S.ROUTING_RUN_ID, S.INSTANCE)
    versions = (
        lakehouse.read(S.INSTANCES).join(runs.select(S.INSTANCE).distinct(), S.INSTANCE).select(S.INSTANCE, S.INGEST_ID)
    )
    subscriptions = (
        lakehouse.read(S.SUBSCRIPTIONS_TABLE)
        .join(versions, [S.INSTANCE, S.INGEST_ID])
        .groupBy(S.INSTANCE, S.NODE_ID)
        .agg(F.count(F.lit(1)).alias(S.FEEDS))
    )
    load = lakehouse.read(S.ROUTING_LOAD).filter(F.col(S.ROUTING_RUN_ID).isin(ids)).join(runs, S.ROUTING_RUN_ID)
    rows = (
        load.join(subscriptions, [S.INSTANCE, S.NODE_ID], "left")
        .fillna(0, subset=[S.FEEDS])
        .groupBy(S.ROUTING_RUN_ID, S.FEEDS)
        .agg(F.count(F.lit(1)).alias("nodes"), F.avg(S.SENT).alias("data_sent_mean"))
        .toPandas()  # routing runs x distinct subscription counts
    )
    rows.insert(0, "system", "Scribe (per publication workload)")
    return rows.rename(columns={S.ROUTING_RUN_ID: "run"})[list(TRAFFIC_COLUMNS)]


def _bound(lakehouse: Lakehouse) -> pd.DataFrame:
    """Per stored friend_bound computation on a current instance version and j = 1..k: the
    share of sampled nodes fully covered by their first j greedy best friends."""
    if not lakehouse.exists(S.FRIEND_BOUND):
        return _empty(BOUND_COLUMNS)
    versions = lakehouse.read(S.INSTANCES).select(S.INSTANCE, S.INGEST_ID)
    keys = [S.INSTANCE, S.K, S.MIN_FEEDS, S.SAMPLE, S.SEED]
    rows = lakehouse.read(S.FRIEND_BOUND).join(versions, [S.INSTANCE, S.INGEST_ID])
    counted = full_coverage_by_friends(rows, keys).orderBy(*keys, "friends").toPandas()  # computations x k
    return counted[list(BOUND_COLUMNS)]


def _words(ok: bool) -> str:
    return "holds" if ok else "does not hold"


def checks(data: RappelData) -> list[str]:
    """The issue's item 7, as sentences that say whether each claim holds here."""
    lines = []
    for key, rows in data.bound.groupby([S.INSTANCE, S.K, S.MIN_FEEDS, S.SAMPLE, S.SEED]):
        at = rows.set_index("friends")["full_coverage_share"]
        k = min(6, int(rows["friends"].max()))
        lines.append(
            f"Fig. 1, {key[0]} ({int(rows['nodes'].iloc[0])} nodes of >= {key[2]} feeds): with the {k} greedy best "
            f"friends {at[k]:.1%} have full coverage; most nodes (over half): {_words(at[k] > 0.5)} "
            f"(paper: {PAPER_FIG1})."
        )
    for run in data.runs.itertuples():
        request = json.loads(run.params)["request"]
        rows = data.rounds[data.rounds[S.RUN_ID] == run.run_id].sort_values(S.ROUND)
        if request.get("failure") and request["failure"][2] is not None:
            lines.append(_fig7(run, request, rows))
        near = abs(run.full_coverage_share - PAPER_COVERAGE) <= COVERAGE_SLACK
        lines.append(
            f"Fig. 9, {run.run_id} ({run.settings}): {run.full_coverage_share:.1%} of subscribers have every feed "
            f"covered by a friend (within {COVERAGE_SLACK:.0%} of the paper's {PAPER_COVERAGE:.0%}: {_words(near)}), "
            f"{run.overlap_above_1_share:.1%} of nodes have neighbour overlap above 1 (paper: {PAPER_FIG9})."
        )
        alpha = int(request["alpha"])
        if pd.notna(run.many_feeds_alpha_covered_share):
            every = run.many_feeds_alpha_covered_share == 1.0
            lines.append(
                f"Fig. 9a, {run.run_id}: {run.many_feeds_alpha_covered_share:.1%} of the nodes of >= {MANY_FEEDS} feeds "
                f"have >= {alpha} (alpha) of them covered; every one: {_words(every)} (paper: every one)."
            )
        if alpha == 4 and pd.notna(run.multi_feed_full_share):
            near4 = abs(run.multi_feed_full_share - PAPER_ALPHA4) <= COVERAGE_SLACK
            lines.append(
                f"Fig. 9, {run.run_id}: alpha 4 gives full coverage to {run.multi_feed_full_share:.1%} of multi-feed "
                f"subscribers (within {COVERAGE_SLACK:.0%} of the paper's {PAPER_ALPHA4:.0%}: {_words(near4)})."
            )
        lines.append(
            f"Noise, {run.run_id}: {int(run.noise)} updates reached a non-subscriber (zero by construction): "
            f"{_words(run.noise == 0)}."
        )
        if pd.notna(run.control_per_second_median):
            lines.append(
                f"Fig. 11, {run.run_id}: median control traffic {run.control_per_second_median:.2f} msg/s per node "
                f"(95th percentile {run.control_per_second_p95:.2f}); under 2 msg/s: "
                f"{_words(run.control_per_second_median < 2)} (paper: {PAPER_FIG11})."
            )
    lines += _utility_checks(data.runs)
    for run_id, rows in data.rejoins.groupby(S.RUN_ID):
        rows = rows[rows[S.DEPTH] >= 1].sort_values(S.DEPTH)
        values = rows["rejoins_per_hour"].tolist()
        kept = rows[rows["nodes"] >= DEPTH_NODES]
        rho = _spearman(kept[S.DEPTH].tolist(), kept["rejoins_per_hour"].tolist()) if len(kept) >= 3 else None
        lines.append(
            f"Fig. 11a, {run_id}: rejoin requests received per node and hour by depth 1, 2, ...: "
            f"{', '.join(f'{v:.2f}' for v in values)} (nodes: {', '.join(str(int(n)) for n in rows['nodes'])}); "
            + (
                f"falling with depth over the depths of at least {DEPTH_NODES} nodes (Spearman's rho {rho:.2f} <= "
                f"{FALLING}): {_words(rho <= FALLING)}"
                if rho is not None
                else "too few depths to say"
            )
            + f" (paper: {PAPER_FIG11})."
        )
    lines += _fig10(data)
    return lines


def _fig7(run, request: dict, rows: pd.DataFrame) -> str:
    """Latency recovers after the failure: the median and p95 over the rounds after the return
    (from 10 min after it) within RECOVERY of those over the 20 rounds before the failure."""
    share, start, end = request["failure"]
    fail_round, back_round = int(start * ROUNDS_PER_HOUR), int(end * ROUNDS_PER_HOUR)
    before = rows[(rows[S.ROUND] > fail_round - 20) & (rows[S.ROUND] <= fail_round)]
    after = rows[rows[S.ROUND] > back_round + 20]
    if before.empty or after.empty:
        return f"Fig. 7, {run.run_id}: the run does not reach 10 min after the return; no check."
    ok = all(after[c].median() <= RECOVERY * before[c].median() for c in (S.LATENCY_MEDIAN, S.LATENCY_P95))
    return (
        f"Fig. 7, {run.run_id}: median latency {before[S.LATENCY_MEDIAN].median():.0f} ms before the failure, "
        f"{after[S.LATENCY_MEDIAN].median():.0f} ms after the return; p95 {before[S.LATENCY_P95].median():.0f} / "
        f"{after[S.LATENCY_P95].median():.0f} ms; both back within {RECOVERY - 1:.0%}: {_words(ok)}; stretch median "
        f"{rows[S.STRETCH_MEDIAN].median():.2f} (paper: {PAPER_FIG7})."
    )


def _utility_checks(runs: pd.DataFrame) -> list[str]:
    """Interest-only against interest-plus-distance on the same instance, alpha and seed."""
    lines = []
    if runs.empty:
        return lines
    keyed = runs.assign(_req=[json.loads(p)["request"] for p in runs[S.PARAMS]])
    keyed["_key"] = [(i, r["alpha"], r["seed"], r["hours"]) for i, r in zip(keyed[S.INSTANCE], keyed["_req"])]
    keyed["_utility"] = [r["utility"] for r in keyed["_req"]]
    for key, rows in keyed.groupby("_key"):
        by = rows.set_index("_utility")
        if {"interest", "interest-distance"} <= set(by.index):
            both, only = by.loc["interest-distance"], by.loc["interest"]
            lower = only["overlap_above_1_share"] < both["overlap_above_1_share"]
            lines.append(
                f"Fig. 9 ablation, {key[0]} alpha {key[1]}: nodes with overlap above 1: {both['overlap_above_1_share']:.1%} "
                f"with interest plus distance, {only['overlap_above_1_share']:.1%} interest-only; lower interest-only: "
                f"{_words(lower)}; perfect coverage {both['full_coverage_share']:.1%} / {only['full_coverage_share']:.1%} "
                f"(paper: {PAPER_FIG9})."
            )
    return lines


def _fig10(data: RappelData) -> list[str]:
    lines = []
    for row in data.scribe.itertuples():
        rappel = data.runs[data.runs[S.RUN_ID] == row.feeds_of]
        noise = int(rappel["noise"].iloc[0]) if len(rappel) else None
        lines.append(
            f"Fig. 10, {row.routing_run_id}: {row.protocol} reaches subscribers through {int(row.non_subscriber_forwarders)} "
            f"non-subscribers ({int(row.routing_overhead)} messages), Rappel ({row.feeds_of}) through "
            f"{noise if noise is not None else '?'}; Scribe needs non-subscribers and Rappel none: "
            f"{_words(row.non_subscriber_forwarders > 0 and noise == 0)}; median latency {row.latency_median:.0f} ms "
            f"(Rappel: {rappel['latency_median'].iloc[0]:.0f} ms) (paper: {PAPER_FIG10})."
            if len(rappel) and pd.notna(row.latency_median)
            else f"Fig. 10, {row.routing_run_id}: {int(row.non_subscriber_forwarders)} non-subscriber forwarders."
        )
        slopes = {}
        for system, run in (("Rappel", row.feeds_of), ("Scribe", row.routing_run_id)):
            rows = data.traffic[data.traffic["run"] == run]
            if len(rows) >= 2:
                slopes[system] = _correlation(rows)
        if len(slopes) == 2:
            ok = slopes["Rappel"] >= 0.5 and abs(slopes["Scribe"]) < 0.5
            lines.append(
                f"Fig. 10b, {row.routing_run_id}: correlation of a node's data traffic with its subscriptions "
                f"(weighted by nodes): Rappel {slopes['Rappel']:.2f}, Scribe {slopes['Scribe']:.2f}; Rappel's grows "
                f"(>= 0.5) and Scribe's does not (|r| < 0.5): {_words(ok)}."
            )
    return lines


def _spearman(x: list, y: list) -> float:
    """Spearman's rank correlation (average ranks for ties)."""
    ranked = pd.DataFrame({"x": x, "y": y}).rank()
    return float(ranked["x"].corr(ranked["y"])) if ranked["y"].nunique() > 1 else 0.0


def _correlation(rows: pd.DataFrame) -> float:
    """Pearson's r between subscriptions and the mean traffic at each count, weighted by nodes."""
    x, y, w = (rows[c].astype(float) for c in (S.FEEDS, "data_sent_mean", "nodes"))
    mx, my = (x * w).sum() / w.sum(), (y * w).sum() / w.sum()
    cov = (w * (x - mx) * (y - my)).sum()
    spread = ((w * (x - mx) ** 2).sum() * (w * (y - my) ** 2).sum()) ** 0.5
    return float(cov / spread) if spread else 0.0
