"""The report's gossip part (Feverfew, SCIS'14): Fig. 5 (ln-covered share by topic size over
cycles), Fig. 8 (degree of Feverfew, Global Feverfew and SpiderCast against |V|), Table 1
(first matching times of BubbleSample beside Thm 2's), Table 3 (sampled topics' diameter and
clustering) and Fig. 9 (push-pull completion under churn and mass failure), each with the
paper's numbers and a sentence saying whether its claim holds here.

Every frame is sized by runs, cycles, buckets or publications, never by nodes: the per-node and
per-topic rows are aggregated by Spark before they reach the driver."""

from __future__ import annotations

import json
import os
from dataclasses import dataclass

import pandas as pd
from pyspark.sql import DataFrame
from pyspark.sql import functions as F

from overlay import registry
from overlay import schema as S
from overlay.gossip.theory import ttl_theory
from pipelines.disseminate import LIVE_PROTOCOL, PROTOCOL
from pipelines.lakehouse import Lakehouse

GOSSIP = registry.protocols(registry.OVERLAY_GOSSIP, cycles=True)
PROTOCOLS = ("feverfew", "global-feverfew", "spidercast-gossip", "spidercast-global")  # the figures' order
NAMES = {p: registry.PROTOCOLS[p].label for p in PROTOCOLS}
BUCKETS = ((2, 9), (10, 19), (20, 39), (40, 99), (100, None))  # topic sizes n_t, inclusive
BUCKET = "bucket"
SHARE = "share"
FAMILY = "family"
PAPER_DEGREE = "paper_degree"
DEGREE_COLUMNS = (
    FAMILY,
    S.NODES,
    S.ALGORITHM,
    S.RUN_ID,
    PAPER_DEGREE,
    S.VIEW_AVG,
    "choices_per_subscription",
    S.AVG_DEGREE,
    S.COVERED_SHARE,
    S.TCO_SUPPORT,
)
TABLE1_SIZES = (2, 10, 100, 200, 400, 600, 825, 1007, 1110, 1208, 1304)
TABLE1_THEORY = (11.5, 6.77, 3.30, 2.36, 1.49, 1.03, 0.72, 0.54, 0.46, 0.40, 0.34)  # N = 10^4
TABLE1_PRACTICAL = (11, 8, 5, 4, 2, 2, 2, 1, 1, 1, 1)
MATCH_COLUMNS = (S.RUN_ID, BUCKET, "diffusions", "matched_share", "first_match_mean", "theory_at_median_size")
TABLE3 = {  # n_t -> (diameter Feverfew, SpiderCast; clustering Feverfew, SpiderCast), the paper's
    10: (2, 2, 0.359, 0.533),
    100: (3, 3, 0.196, 0.142),
    200: (3, 3, 0.182, 0.124),
    400: (3, 3, 0.196, 0.120),
    600: (3, 3, 0.194, 0.117),
    825: (3, 4, 0.187, 0.111),
    1007: (3, 3, 0.195, 0.122),
    1110: (3, 3, 0.179, 0.101),
    1208: (3, 3, 0.175, 0.104),
    1304: (3, 4, 0.167, 0.100),
}
STRUCTURE_COLUMNS = (
    S.RUN_ID,
    S.WANTED,
    S.SUBSCRIBERS,
    S.CONNECTED,
    S.DIAMETER,
    S.CLUSTERING,
    "paper_diameter",
    "paper_clustering",
)
MODE = "mode"
# The two dissemination protocols: on the stored overlay, and inside the gossip (the overlay heals).
MODES = {PROTOCOL: "stored overlay", LIVE_PROTOCOL: "gossip going on"}
COMPLETION_COLUMNS = (
    S.RUN_ID,
    MODE,
    "failures",
    S.PUB_ID,
    S.SUBSCRIBERS,
    "first_complete",
    "peak_completion",
    "peak_cycle",
    "last_completion",
    "paper",
    S.ROUTING_RUN_ID,
)
PAPER_FIG5 = (
    "after 10 cycles at most 10% of the subscriptions of topics below 20 subscribers are covered, over 70% after "
    "30; almost every subscription of topics above 40 is covered by cycle 30 (1-2% of those above 50 still "
    "uncovered at cycle 21)"
)
PAPER_FIG8 = (
    "Feverfew close to Global Feverfew, both below SpiderCast and growing sub-linearly with |V|; degree per "
    "subscription below 0.7 (a node's degree: the neighbours it keeps, |LV(p)| for Feverfew)"
)
PAPER_FIG9 = (
    "every topic complete within 31 cycles under 0.5% and 1% substitution; the 1304-topic within 18 under 80% failure"
)


def bucket_names() -> list[str]:
    return [f"{low}-{high}" if high is not None else f">={low}" for low, high in BUCKETS]


def bucket_of(size: F.Column) -> F.Column:
    label = F.lit(None).cast("string")
    for (low, high), name in reversed(list(zip(BUCKETS, bucket_names()))):
        inside = (size >= low) if high is None else ((size >= low) & (size <= high))
        label = F.when(inside, F.lit(name)).otherwise(label)
    return label


@dataclass
class GossipData:
    coverage: pd.DataFrame  # run, cycle, bucket, subscriptions, covered, share
    degrees: pd.DataFrame  # DEGREE_COLUMNS
    matching: pd.DataFrame  # MATCH_COLUMNS
    structure: pd.DataFrame  # STRUCTURE_COLUMNS
    completion: pd.DataFrame  # per push-pull run, publication and cycle
    summary: pd.DataFrame  # COMPLETION_COLUMNS

    @property
    def empty(self) -> bool:
        return all(frame.empty for frame in (self.coverage, self.degrees, self.structure, self.completion))


def _family(params: str, source: str, instance: str) -> str:
    """A social instance's graph and sampling seed (its samples' sizes differ), else the instance."""
    p = json.loads(params)
    if source == "social":
        graph = os.path.basename(p.get("dataset") or p.get("path") or "graph")
        return f"{graph}, BFS seed {p.get('seed')}" if p.get("sample_bfs") else f"{graph}, whole"
    return instance


def gather(lakehouse: Lakehouse, runs: DataFrame, quality: pd.DataFrame, instances: pd.DataFrame) -> GossipData:
    """`runs`: the current overlay runs; `quality`: their quality rows (pandas, one per run)."""
    gossip_runs = quality[quality[S.ALGORITHM].isin(PROTOCOLS)]
    ids = gossip_runs[S.RUN_ID].tolist()
    # Fig. 5 and Table 1 measure the gossip itself: Feverfew's runs (a spidercast-gossip run
    # gossips the same way and only chooses its links differently at the end).
    gossiped = gossip_runs[gossip_runs[S.ALGORITHM] == "feverfew"][S.RUN_ID].tolist()
    coverage = pd.DataFrame(columns=[S.RUN_ID, S.CYCLE, BUCKET, S.SUBSCRIPTIONS, S.COVERED, SHARE])
    matching = pd.DataFrame(columns=MATCH_COLUMNS)
    if gossiped and lakehouse.exists(S.GOSSIP_COVERAGE):
        rows = lakehouse.read(S.GOSSIP_COVERAGE).filter(F.col(S.RUN_ID).isin(gossiped))
        coverage = (
            rows.withColumn(BUCKET, bucket_of(F.col(S.SUBSCRIBERS)))
            .groupBy(S.RUN_ID, S.CYCLE, BUCKET)
            .agg(F.sum(S.SUBSCRIBERS).alias(S.SUBSCRIPTIONS), F.sum(S.COVERED).alias(S.COVERED))
            .toPandas()  # runs x cycles x buckets
        )
        coverage[SHARE] = coverage[S.COVERED] / coverage[S.SUBSCRIPTIONS]
    if gossiped and lakehouse.exists(S.GOSSIP_DIFFUSIONS):
        matching = _matching(lakehouse, gossiped, gossip_runs, instances)
    views = (
        lakehouse.read(S.GOSSIP_VIEWS)
        .filter(F.col(S.RUN_ID).isin(ids))
        .select(S.RUN_ID, S.VIEW_AVG, S.COVERED_SHARE)
        .toPandas()
        if ids and lakehouse.exists(S.GOSSIP_VIEWS)
        else pd.DataFrame(columns=[S.RUN_ID, S.VIEW_AVG, S.COVERED_SHARE])
    )  # one row per run
    degrees = _degrees(gossip_runs.merge(views, on=S.RUN_ID, how="left"), instances)
    structure = pd.DataFrame(columns=STRUCTURE_COLUMNS)
    if ids and lakehouse.exists(S.TOPIC_STRUCTURE):
        structure = lakehouse.read(S.TOPIC_STRUCTURE).filter(F.col(S.RUN_ID).isin(ids)).toPandas()  # sizes sampled
        algorithm = dict(zip(gossip_runs[S.RUN_ID], gossip_runs[S.ALGORITHM]))
        paper = [TABLE3.get(int(w)) for w in structure[S.WANTED]]
        spider = [algorithm[r].startswith("spidercast") for r in structure[S.RUN_ID]]
        structure["paper_diameter"] = [p[1 if s else 0] if p else None for p, s in zip(paper, spider)]
        structure["paper_clustering"] = [p[3 if s else 2] if p else None for p, s in zip(paper, spider)]
        structure = structure.sort_values([S.RUN_ID, S.WANTED])[list(STRUCTURE_COLUMNS)]
    completion, summary = _completion(lakehouse, runs)
    return GossipData(coverage, degrees, matching, structure, completion, summary)


def _degrees(gossip_runs: pd.DataFrame, instances: pd.DataFrame) -> pd.DataFrame:
    if gossip_runs.empty:
        return pd.DataFrame(columns=DEGREE_COLUMNS)
    meta = instances[[S.INSTANCE, S.SOURCE, S.PARAMS, S.SUBSCRIPTIONS]]
    rows = gossip_runs.merge(meta, on=S.INSTANCE)
    rows[FAMILY] = [_family(p, s, i) for p, s, i in zip(rows[S.PARAMS], rows[S.SOURCE], rows[S.INSTANCE])]
    rows["choices_per_subscription"] = rows[S.VIEW_AVG] * rows[S.NODES] / rows[S.SUBSCRIPTIONS]
    # What a node keeps: Feverfew its own LV; SpiderCast every neighbour (its links are
    # connections both ends keep), so the undirected degree.
    spider = rows[S.ALGORITHM].str.startswith("spidercast")
    rows[PAPER_DEGREE] = rows[S.AVG_DEGREE].where(spider, rows[S.VIEW_AVG])
    return rows[list(DEGREE_COLUMNS)].sort_values([FAMILY, S.NODES, S.ALGORITHM]).reset_index(drop=True)


def _matching(lakehouse: Lakehouse, ids: list[str], gossip_runs: pd.DataFrame, instances: pd.DataFrame) -> pd.DataFrame:
    """Per run and topic-size bucket: diffusions started, the share that matched, the mean cycles
    from start to first match (Table 1's "practical"), beside Thm 2 at the bucket's median size."""
    events = lakehouse.read(S.GOSSIP_DIFFUSIONS).filter(F.col(S.RUN_ID).isin(ids))
    per = events.groupBy(S.RUN_ID, S.NODE_ID, S.TOPIC_ID, S.STARTED_CYCLE).agg(
        F.min(S.FIRST_MATCH_CYCLE).alias(S.FIRST_MATCH_CYCLE)
    )
    sizes = (
        lakehouse.read(S.GOSSIP_COVERAGE)
        .filter(F.col(S.RUN_ID).isin(ids))
        .select(S.RUN_ID, S.TOPIC_ID, S.SUBSCRIBERS)
        .distinct()
    )
    table = (
        per.join(sizes, [S.RUN_ID, S.TOPIC_ID])
        .withColumn(BUCKET, bucket_of(F.col(S.SUBSCRIBERS)))
        .groupBy(S.RUN_ID, BUCKET)
        .agg(
            F.count(F.lit(1)).alias("diffusions"),
            F.avg(F.col(S.FIRST_MATCH_CYCLE).isNotNull().cast("double")).alias("matched_share"),
            F.avg(F.col(S.FIRST_MATCH_CYCLE) - F.col(S.STARTED_CYCLE)).alias("first_match_mean"),
            F.percentile_approx(S.SUBSCRIBERS, 0.5).alias("_median"),
        )
        .toPandas()  # runs x buckets
    )
    nodes = dict(zip(gossip_runs[S.RUN_ID], gossip_runs[S.NODES]))
    table["theory_at_median_size"] = [
        ttl_theory(int(nodes[r]), int(m)) for r, m in zip(table[S.RUN_ID], table["_median"])
    ]
    rank = {name: i for i, name in enumerate(bucket_names())}
    return (
        table[list(MATCH_COLUMNS)]
        .sort_values([S.RUN_ID, BUCKET], key=lambda c: c.map(rank) if c.name == BUCKET else c)
        .reset_index(drop=True)
    )


def _completion(lakehouse: Lakehouse, runs: DataFrame) -> tuple[pd.DataFrame, pd.DataFrame]:
    columns = [S.ROUTING_RUN_ID, S.RUN_ID, MODE, "failures", S.PUB_ID, S.SUBSCRIBERS, S.CYCLE, S.COMPLETION]
    if not lakehouse.exists(S.DISSEMINATION_COMPLETION):
        return pd.DataFrame(columns=columns), pd.DataFrame(columns=COMPLETION_COLUMNS)
    routed = (
        lakehouse.read(S.ROUTING_RUNS)
        .filter(F.col(S.PROTOCOL).isin(*MODES) & (F.col(S.STATUS) == S.COMPLETE))
        .join(runs.select(S.RUN_ID), S.RUN_ID)
        .select(S.ROUTING_RUN_ID, S.RUN_ID, S.PARAMS, S.PROTOCOL)
    )
    rows = lakehouse.read(S.DISSEMINATION_COMPLETION).join(routed, S.ROUTING_RUN_ID).toPandas()  # pubs x cycles
    if rows.empty:
        return pd.DataFrame(columns=columns), pd.DataFrame(columns=COMPLETION_COLUMNS)
    rows["failures"] = [_failures(p) for p in rows[S.PARAMS]]
    rows[MODE] = rows[S.PROTOCOL].map(MODES)
    rows = rows[columns].sort_values([S.ROUTING_RUN_ID, S.PUB_ID, S.CYCLE]).reset_index(drop=True)
    summary = []
    for (routing_run, run_id, mode, failures, pub, size), line in rows.groupby(
        [S.ROUTING_RUN_ID, S.RUN_ID, MODE, "failures", S.PUB_ID, S.SUBSCRIBERS]
    ):
        complete = line[line[S.COMPLETION] >= 1.0]
        summary.append(
            {
                S.ROUTING_RUN_ID: routing_run,
                S.RUN_ID: run_id,
                MODE: mode,
                "failures": failures,
                S.PUB_ID: int(pub),
                S.SUBSCRIBERS: int(size),
                "first_complete": int(complete[S.CYCLE].min()) if len(complete) else None,
                "peak_completion": float(line[S.COMPLETION].max()),
                "peak_cycle": int(line.loc[line[S.COMPLETION].idxmax(), S.CYCLE]),
                "last_completion": float(line[S.COMPLETION].iloc[-1]),
                "paper": 31 if failures.startswith("substitution") else 18 if failures.startswith("mass") else None,
            }
        )
    return rows, pd.DataFrame(summary, columns=COMPLETION_COLUMNS).sort_values(
        ["failures", S.RUN_ID, MODE, S.PUB_ID]
    ).reset_index(drop=True)


def _failures(params: str) -> str:
    p = json.loads(params)
    parts = []
    if p.get("substitution"):
        parts.append(f"substitution {p['substitution']:.1%}")
    if p.get("mass_share"):
        parts.append(f"mass {p['mass_share']:.0%} at cycle {p['mass_cycle']}")
    return ", ".join(parts) or "none"


def checks(data: GossipData) -> list[str]:
    """The issue's item 7, as sentences that say whether each claim holds here."""
    lines = []
    for run_id, rows in data.coverage.groupby(S.RUN_ID):
        last = rows[S.CYCLE].max()
        at = rows[rows[S.CYCLE] == min(30, last)].set_index(BUCKET)[SHARE]
        large = [at[b] for b in at.index if b in ("40-99", ">=100")]
        rises = all((g.sort_values(S.CYCLE)[SHARE].diff().dropna() >= -1e-12).all() for _, g in rows.groupby(BUCKET))
        early = rows[rows[S.CYCLE] == min(10, last)].set_index(BUCKET)[SHARE]
        order = [early.get(b) for b in bucket_names() if early.get(b) is not None]
        larger_first = all(b >= a - 1e-12 for a, b in zip(order, order[1:]))
        lines.append(
            f"Fig. 5, {run_id}: coverage never falls: {'holds' if rises else 'does not hold'}; larger topics "
            f"covered first (cycle {min(10, last)}: {', '.join(f'{v:.0%}' for v in order)} from small to large): "
            f"{'holds' if larger_first else 'does not hold'}; at cycle {min(30, last)}, topics of 40 or more: "
            + (f"{min(large):.1%} covered at least" if large else "none")
            + f" (paper: {PAPER_FIG5})."
        )
    for family, rows in data.degrees.groupby(FAMILY):
        rows = rows.sort_values(S.RUN_ID)  # of two runs of one protocol and size, the first-named
        by = rows.pivot_table(index=S.NODES, columns=S.ALGORITHM, values=PAPER_DEGREE, aggfunc="first")
        alike = rows.pivot_table(index=S.NODES, columns=S.ALGORITHM, values=S.AVG_DEGREE, aggfunc="first")
        parts = []
        if {"feverfew", "spidercast-gossip"} <= set(by.columns):
            below = bool((by["feverfew"] <= by["spidercast-gossip"]).all())
            parts.append(f"Feverfew <= SpiderCast (gossip) at every |V|: {'holds' if below else 'does not hold'}")
        if {"global-feverfew", "spidercast-global"} <= set(by.columns):
            below = bool((by["global-feverfew"] <= by["spidercast-global"]).all())
            parts.append(f"Global Feverfew <= SpiderCast (global): {'holds' if below else 'does not hold'}")
        if {"feverfew", "spidercast-gossip"} <= set(alike.columns):
            below = bool((alike["feverfew"] <= alike["spidercast-gossip"]).all())
            parts.append(
                f"like for like (undirected degree of both overlays) Feverfew <= SpiderCast (gossip): "
                f"{'holds' if below else 'does not hold'}"
            )
        if {"feverfew", "global-feverfew"} <= set(by.columns):
            ratio = (by["feverfew"] / by["global-feverfew"]).dropna()
            parts.append(f"Feverfew / Global Feverfew {', '.join(f'{r:.2f}' for r in ratio)}")
        ours = rows[rows[S.ALGORITHM] == "feverfew"]["choices_per_subscription"].dropna()
        if len(ours):
            parts.append(
                f"Feverfew's neighbours per subscription {ours.max():.2f} at most (below 1: "
                f"{'holds' if (ours < 1).all() else 'does not hold'})"
            )
        if parts:
            lines.append(f"Fig. 8, {family}: " + "; ".join(parts) + f" (paper: {PAPER_FIG8}).")
    order = bucket_names()
    for run_id, rows in data.matching.groupby(S.RUN_ID):
        times = rows.set_index(BUCKET)["first_match_mean"].dropna()
        times = [float(times[b]) for b in order if b in times.index]
        falling = all(b <= a + 1e-12 for a, b in zip(times, times[1:]))
        lines.append(
            f"Table 1, {run_id}: mean cycles to a first match by topic size, small to large: "
            f"{', '.join(f'{t:.2f}' for t in times)}: falling as n_t grows: {'holds' if falling else 'does not hold'} "
            f"(paper at N = 10^4: {', '.join(map(str, TABLE1_PRACTICAL))} for n_t = {', '.join(map(str, TABLE1_SIZES))})."
        )
    if not data.structure.empty:
        connected = bool(data.structure[S.CONNECTED].all())
        lines.append(f"Table 3: every sampled topic connected: {'holds' if connected else 'does not hold'}.")
    for (run_id, mode, failures), rows in data.summary.groupby([S.RUN_ID, MODE, "failures"]):
        done = rows["first_complete"]
        reached = bool(done.notna().all())
        lines.append(
            f"Fig. 9, {failures} on {run_id} ({mode}): completion reaches 1 for every publication: "
            f"{'holds' if reached else 'does not hold'}"
            + (f", by cycle {int(done.max())}" if reached else f" (lowest peak {rows['peak_completion'].min():.3f})")
            + f" (paper: {PAPER_FIG9})."
        )
    return lines


def table1_rows() -> list[dict]:
    """The paper's Table 1 at N = 10^4 beside Thm 2 as `theory.ttl_theory` computes it."""
    return [
        {"n_t": n, "paper_theory": p, "formula": round(ttl_theory(10_000, n), 2), "paper_practical": q}
        for n, p, q in zip(TABLE1_SIZES, TABLE1_THEORY, TABLE1_PRACTICAL)
    ]
