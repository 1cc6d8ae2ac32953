"""What a gossip cycle measured, from its checkpointed state (docs/readings/feverfew.md#measures):
the cycle's summary (one small aggregate: one row to the driver), the ln-covered share per topic
(Fig. 5), the BubbleSample diffusions' events (Table 1's matching times, Table 2's traffic), and
the overlay the ln-covered views make. All but the summary stay lazy DataFrames.

In the memory regime a cycle's state is an Arrow table in this process: `summary_of`,
`coverage_of`, `diffusions_of` and `view_link_pairs` measure it there with no Spark job, the same
figures and rows (`tests/test_gossip_measures.py` holds each equal to its DataFrame form)."""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
from pyspark.sql import DataFrame
from pyspark.sql import functions as F

from overlay import schema as S
from overlay.design.baselines import numbered_links, undirected_links
from overlay.gossip.feverfew import SENT_KINDS

_SENT_COLUMNS = {"cyclon": S.CYCLON_MESSAGES, "gossip": S.GOSSIP_MESSAGES, "copies": S.COPIES, "matches": S.MATCHES}


def cycle_summary(state: DataFrame) -> dict:
    """One row of `gossip_cycles` without run, cycle and timing: `view_summary`'s figures and
    the cycle's messages by kind, in the same one Spark job."""
    sent = [F.sum(F.col("sent")[i]).alias(_SENT_COLUMNS[kind]) for i, kind in enumerate(SENT_KINDS)]
    return view_summary(state, *sent)


def view_summary(views: DataFrame, *more: F.Column) -> dict:
    """What the nodes chose, as the paper measures it (one job): nodes, choices (sum of |LV|),
    their mean (the paper's "average node degree"), the ln-coverage the choices give, and the
    sums `more` names."""
    covered = F.size("covered")
    row = (
        views.agg(
            F.count(F.lit(1)).alias(S.NODES),
            F.sum(F.size("lv")).alias(S.CHOICES),
            F.sum("needy").alias(S.SUBSCRIPTIONS),
            F.sum(covered).alias(S.COVERED_SUBSCRIPTIONS),
            F.sum(F.when(covered == F.col("needy"), 1).otherwise(0)).alias(S.COVERED_NODES),
            *more,
        )
        .first()
        .asDict()
    )
    summary = {name: int(value or 0) for name, value in row.items()}
    summary[S.VIEW_AVG] = summary[S.CHOICES] / summary[S.NODES] if summary[S.NODES] else 0.0
    subscriptions = summary[S.SUBSCRIPTIONS]
    summary[S.COVERED_SHARE] = summary[S.COVERED_SUBSCRIPTIONS] / subscriptions if subscriptions else None
    return summary


def topic_sizes(subscriptions: DataFrame) -> DataFrame:
    """(topic_id, subscribers) of the topics with two or more subscribers: the ones that need
    neighbours (a topic of one is left out of every coverage measure)."""
    return (
        subscriptions.groupBy(S.TOPIC_ID).agg(F.count(F.lit(1)).alias(S.SUBSCRIBERS)).filter(F.col(S.SUBSCRIBERS) >= 2)
    )


def nearest_topics(counted: DataFrame, sizes: tuple[int, ...], index: str = "pick") -> DataFrame:
    """(index, topic_id, subscribers): for the k-th size, the topic of `counted` (topic_id,
    subscribers) whose size is nearest (ties: the smaller id)."""
    picks = [
        counted.orderBy(F.abs(F.col(S.SUBSCRIBERS) - size), S.TOPIC_ID)
        .limit(1)
        .withColumn(index, F.lit(k).cast("long"))
        for k, size in enumerate(sizes)
    ]
    chosen = picks[0]
    for pick in picks[1:]:
        chosen = chosen.unionByName(pick)
    return chosen.select(index, S.TOPIC_ID, S.SUBSCRIBERS)


def topic_coverage(state: DataFrame, sizes: DataFrame, cycle: int) -> DataFrame:
    """(cycle, topic_id, subscribers, covered) for every topic of `sizes`."""
    covered = (
        state.select(F.explode("covered").alias(S.TOPIC_ID)).groupBy(S.TOPIC_ID).agg(F.count(F.lit(1)).alias(S.COVERED))
    )
    return sizes.join(covered, S.TOPIC_ID, "left").select(
        F.lit(cycle).cast("int").alias(S.CYCLE),
        S.TOPIC_ID,
        S.SUBSCRIBERS,
        F.coalesce(F.col(S.COVERED), F.lit(0)).cast("long").alias(S.COVERED),
    )


def diffusion_events(state: DataFrame, cycle: int) -> DataFrame:
    """The origins' diffusions that start, first match, or send their last copies in `cycle`."""
    own = state.select(
        S.NODE_ID,
        F.explode(F.arrays_zip("own_topic", "own_started", "own_ttl", "own_first_match", "own_matches")).alias("d"),
    )
    started, ttl, first = F.col("d.own_started"), F.col("d.own_ttl"), F.col("d.own_first_match")
    return own.filter((started == cycle) | (first == cycle) | (started + ttl - 1 == cycle)).select(
        F.lit(cycle).cast("int").alias(S.CYCLE),
        S.NODE_ID,
        F.col("d.own_topic").alias(S.TOPIC_ID),
        started.alias(S.STARTED_CYCLE),
        ttl.alias(S.TTL),
        F.when(first >= 0, first).alias(S.FIRST_MATCH_CYCLE),
        F.col("d.own_matches").cast("long").alias(S.MATCHES),
    )


def view_links(state: DataFrame, last_cycle: int) -> DataFrame:
    """The overlay of the ln-covered views: {p, q} for q in LV(p), undirected, as overlay_edges
    rows (u < v, numbered 1, 2, ... in (u, v) order; the round is the last cycle)."""
    pairs = (
        state.select(F.col(S.NODE_ID).alias("p"), F.explode("lv").alias("q"))
        .select(F.least("p", "q").alias(S.U), F.greatest("p", "q").alias(S.V))
        .distinct()
        .withColumn(S.ROUND, F.lit(last_cycle))
    )
    return numbered_links(pairs, [S.U, S.V])


def _lengths(table: pa.Table, column: str) -> np.ndarray:
    return pc.list_value_length(table.column(column)).to_numpy(zero_copy_only=False).astype(np.int64)


def _flat(table: pa.Table, column: str) -> np.ndarray:
    return pc.list_flatten(table.column(column)).to_numpy(zero_copy_only=False)


def summary_of(table: pa.Table, sent: bool = True) -> dict:
    """`cycle_summary` (with `sent`) or `view_summary` of rows held in memory."""
    covered, needy = _lengths(table, "covered"), table.column("needy").to_numpy(zero_copy_only=False).astype(np.int64)
    summary = {
        S.NODES: table.num_rows,
        S.CHOICES: int(_lengths(table, "lv").sum()),
        S.SUBSCRIPTIONS: int(needy.sum()),
        S.COVERED_SUBSCRIPTIONS: int(covered.sum()),
        S.COVERED_NODES: int((covered == needy).sum()),
    }
    if sent:
        counts = _flat(table, "sent").astype(np.int64).reshape(-1, len(SENT_KINDS)).sum(axis=0)
        summary.update({_SENT_COLUMNS[kind]: int(counts[i]) for i, kind in enumerate(SENT_KINDS)})
    summary[S.VIEW_AVG] = summary[S.CHOICES] / summary[S.NODES] if summary[S.NODES] else 0.0
    subscriptions = summary[S.SUBSCRIPTIONS]
    summary[S.COVERED_SHARE] = summary[S.COVERED_SUBSCRIPTIONS] / subscriptions if subscriptions else None
    return summary


def sizes_of(topics: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """`topic_sizes` of the subscriptions' topic column: (topic ids, subscribers), two or more."""
    counts = np.bincount(topics) if len(topics) else np.zeros(0, np.int64)
    kept = np.flatnonzero(counts >= 2)
    return kept.astype(np.int64), counts[kept].astype(np.int64)


def coverage_of(table: pa.Table, sizes: tuple[np.ndarray, np.ndarray], cycle: int) -> pa.Table:
    """`topic_coverage` of rows held in memory; `sizes`: `sizes_of` the subscriptions."""
    topics, subscribers = sizes
    covered = _flat(table, "covered").astype(np.int64)
    counts = np.bincount(covered, minlength=int(topics.max(initial=-1)) + 1) if len(covered) else None
    return pa.table(
        {
            S.CYCLE: np.full(len(topics), cycle, np.int32),
            S.TOPIC_ID: topics,
            S.SUBSCRIBERS: subscribers,
            S.COVERED: counts[topics].astype(np.int64) if counts is not None else np.zeros(len(topics), np.int64),
        }
    )


def diffusions_of(table: pa.Table, cycle: int) -> pa.Table:
    """`diffusion_events` of rows held in memory."""
    node = np.repeat(table.column(S.NODE_ID).to_numpy(zero_copy_only=False), _lengths(table, "own_topic"))
    topic, started, ttl, first, matches = (
        _flat(table, name) for name in ("own_topic", "own_started", "own_ttl", "own_first_match", "own_matches")
    )
    at = (started == cycle) | (first == cycle) | (started + ttl - 1 == cycle)
    return pa.table(
        {
            S.CYCLE: np.full(int(at.sum()), cycle, np.int32),
            S.NODE_ID: node[at].astype(np.int64),
            S.TOPIC_ID: topic[at].astype(np.int64),
            S.STARTED_CYCLE: started[at].astype(np.int32),
            S.TTL: ttl[at].astype(np.int32),
            S.FIRST_MATCH_CYCLE: pa.array(first[at].astype(np.int32), mask=first[at] < 0),
            S.MATCHES: matches[at].astype(np.int64),
        }
    )


def view_link_pairs(table: pa.Table) -> np.ndarray:
    """The links of `view_links` from rows held in memory: k x 2, u < v, ascending."""
    p = np.repeat(table.column(S.NODE_ID).to_numpy(zero_copy_only=False), _lengths(table, "lv"))
    return undirected_links(p, _flat(table, "lv"))
