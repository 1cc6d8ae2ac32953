"""SpiderCastM: SpiderCast's neighbour selection with a maximum degree (ICDCS'16 section IX).

SpiderCast (Chockler, Melamed, Tock, Vitenberg, DEBS'07) has every node aim, for each of its
topics, at K_g neighbours sharing the topic chosen greedily ("greedy coverage") and K_r chosen at
random ("random coverage"). We use K_g = 3 and K_r = 1, the setting reported for SpiderCast by
Ma, Wang and Sun (Feverfew, Sci China Inf Sci 2014, section 4: "each node aims for greedy
3-coverage and random 1-coverage"). SpiderCastM (ICDCS'16) lets every node, with global
knowledge of the subscriptions, run this selection independently until its degree reaches d.

Our reading, made exact so that a seed gives one overlay:

* coverage cov(p, t) = number of p's neighbours subscribed to t, for t in T(p);
* node p's j-th link (j = degree + 1) is a *random* pick when j is a multiple of K_g + K_r,
  else a *greedy* pick, so links follow the K_g : K_r mix;
* greedy pick: the node q maximising |{t in T(p) & T(q) : cov(p, t) < K_g}| (ties: smallest
  xxhash64(seed, round, p, q)); with no such q with a positive count, a random pick instead;
* random pick: the topic t of p with cov(p, t) < K_r (any topic of p if none) of smallest
  hash, then the subscriber q of t of smallest hash;
* q must have degree < d, not be p or a neighbour of p.

The nodes run in synchronous rounds (batched Spark work): every node below degree d proposes
one link; a node accepts as many of the proposals touching it as it has free degree, in order of
xxhash64(seed, round, u, v); a proposal becomes a link when both ends accept it. Rounds repeat
until no node can propose.
"""

from __future__ import annotations

import logging
import time
from dataclasses import dataclass

from pyspark.sql import Column, DataFrame, Window
from pyspark.sql import functions as F

from overlay import schema as S
from overlay.design.baselines import numbered_links
from overlay.design.classes import Subscriptions
from overlay.design.pairs import SHARED, shared_topic_counts
from overlay.frames import local_frame

log = logging.getLogger(__name__)

GREEDY_COVERAGE = 3
RANDOM_COVERAGE = 1


@dataclass(frozen=True)
class SpiderCastParams:
    max_degree: int
    seed: int = 1
    greedy_coverage: int = GREEDY_COVERAGE
    random_coverage: int = RANDOM_COVERAGE
    max_rounds: int | None = None


def _hash(seed: int, round_no: int, *columns: Column) -> Column:
    return F.xxhash64(F.lit(seed), F.lit(round_no), *columns)


def _pair_scores(subscriptions: DataFrame) -> DataFrame:
    """(_p, _q, _score = |T(p) & T(q)|) of every ordered pair sharing a topic: the greedy score
    while no topic is covered yet. Counted as the greedy engine counts them (`overlay.design.pairs`,
    from its capped driver copy of the subscriptions), not by a self-join of sum |V(t)|^2 rows."""
    counts = shared_topic_counts(subscriptions.sparkSession, Subscriptions.collect(subscriptions))
    return counts.select(F.col(S.U).alias("_p"), F.col(S.V).alias("_q"), F.col(SHARED).alias("_score")).unionAll(
        counts.select(F.col(S.V).alias("_p"), F.col(S.U).alias("_q"), F.col(SHARED).alias("_score"))
    )


def _both_ways(edges: DataFrame) -> DataFrame:
    return edges.select(F.col(S.U).alias("_p"), F.col(S.V).alias("_q")).unionAll(
        edges.select(F.col(S.V).alias("_p"), F.col(S.U).alias("_q"))
    )


def spidercast_m(subscriptions: DataFrame, params: SpiderCastParams) -> DataFrame:
    """(u, v, added_order, round) of the SpiderCastM overlay.

    The greedy scores are kept from round to round instead of recomputed: a score only falls when
    a topic of p reaches K_g coverage (each (p, t) once in a run), and a pair only leaves the table
    (an end at degree d, or linked). A round then costs work in the pairs still open and the topics
    the last round's links saturated, not in the sum of |subscribers(t)|^2 that a recount joins.
    """
    spark = subscriptions.sparkSession
    subs = subscriptions.select(S.NODE_ID, S.TOPIC_ID).localCheckpoint()
    nodes = subs.select(S.NODE_ID).distinct().localCheckpoint(eager=True)
    node_count = nodes.count()
    d, kg, kr = params.max_degree, params.greedy_coverage, params.random_coverage
    edges = local_frame(spark, [], f"{S.U} long, {S.V} long, {S.ROUND} int, _prio long")
    p_topics = subs.select(F.col(S.NODE_ID).alias("_p"), S.TOPIC_ID)
    q_topics = subs.select(F.col(S.NODE_ID).alias("_q"), S.TOPIC_ID)
    scores = _pair_scores(subs)
    limit = params.max_rounds or 50 * d + 50
    started = time.monotonic()
    for round_no in range(1, limit + 1):
        clock = time.monotonic()
        links = _both_ways(edges)
        degree = links.groupBy("_p").agg(F.count("*").alias("_deg"))
        state = (
            nodes.select(F.col(S.NODE_ID).alias("_p"))
            .join(degree, on="_p", how="left")
            .fillna(0, subset=["_deg"])
            .filter(F.col("_deg") < d)
            .localCheckpoint()
        )
        open_targets = state.select(F.col("_p").alias("_q"))
        coverage = (
            links.join(p_topics, on="_p").join(q_topics, on=["_q", S.TOPIC_ID])
            .groupBy("_p", S.TOPIC_ID).agg(F.count("*").alias("_cov"))
        )
        if round_no > 1:
            # The topics of p that last round's links brought to K_g coverage stop scoring for p.
            gained = (
                _both_ways(edges.filter(F.col(S.ROUND) == round_no - 1))
                .join(p_topics, on="_p").join(q_topics, on=["_q", S.TOPIC_ID])
                .groupBy("_p", S.TOPIC_ID).agg(F.count("*").alias("_gain"))
            )
            saturated = (
                coverage.join(gained, on=["_p", S.TOPIC_ID])
                .filter((F.col("_cov") >= kg) & (F.col("_cov") - F.col("_gain") < kg))
                .select("_p", S.TOPIC_ID)
            )
            # A union and a sum rather than a join: the optimizer's size estimate of the kept
            # table then adds up round after round instead of multiplying (see the edges' limit).
            lost = saturated.join(q_topics, on=S.TOPIC_ID).select("_p", "_q", F.lit(-1).cast("long").alias("_score"))
            scores = scores.unionByName(lost).groupBy("_p", "_q").agg(F.sum("_score").alias("_score"))
        # Only pairs of open, unlinked nodes with something to gain stay (degrees never fall).
        scores = (
            scores.filter(F.col("_score") > 0)
            .join(state.select("_p"), on="_p", how="left_semi")
            .join(open_targets, on="_q", how="left_semi")
            .join(links, on=["_p", "_q"], how="left_anti")
            .localCheckpoint()
        )
        topic_state = (
            state.join(p_topics, on="_p")
            .join(coverage, on=["_p", S.TOPIC_ID], how="left")
            .fillna(0, subset=["_cov"])
        )
        random_turn = ((F.col("_deg") + 1) % (kg + kr)) == 0
        greedy = (
            scores.join(state.filter(~random_turn).select("_p"), on="_p")
            .withColumn("_h", _hash(params.seed, round_no, F.col("_p"), F.col("_q")))
            .groupBy("_p").agg(F.max(F.struct(F.col("_score"), -F.col("_h"), F.col("_q"))).alias("_best"))
            .select("_p", F.col("_best._q").alias("_q"))
        )
        # Random picks: nodes on a random turn, and greedy-turn nodes with no greedy candidate.
        random_nodes = state.join(greedy.select("_p"), on="_p", how="left_anti")
        candidates = random_nodes.join(topic_state.select("_p", S.TOPIC_ID, "_cov"), on="_p")
        topic_rank = Window.partitionBy("_p").orderBy(
            (F.col("_cov") >= kr).cast("int"), _hash(params.seed, round_no, F.col("_p"), F.col(S.TOPIC_ID))
        )
        chosen_topic = candidates.withColumn("_r", F.row_number().over(topic_rank)).filter("_r = 1")
        random_pick = (
            chosen_topic.select("_p", S.TOPIC_ID).join(q_topics, on=S.TOPIC_ID)
            .join(open_targets, on="_q").filter(F.col("_p") != F.col("_q"))
            .join(links, on=["_p", "_q"], how="left_anti")
            .withColumn("_h", _hash(params.seed, round_no, F.col("_p"), F.col("_q")))
            .groupBy("_p").agg(F.min(F.struct(F.col("_h"), F.col("_q"))).alias("_best"))
            .select("_p", F.col("_best._q").alias("_q"))
        )
        proposals = (
            greedy.unionByName(random_pick)
            .select(F.least("_p", "_q").alias(S.U), F.greatest("_p", "_q").alias(S.V))
            .distinct()
            .withColumn("_prio", _hash(params.seed, round_no, F.col(S.U), F.col(S.V)))
            .localCheckpoint()
        )
        proposed = proposals.count()  # the stopping test, and the progress line
        if proposed == 0:
            break
        capacity = state.select(F.col("_p").alias("_n"), (d - F.col("_deg")).alias("_free"))
        ends = proposals.select(F.col(S.U).alias("_n"), S.U, S.V, "_prio").unionByName(
            proposals.select(F.col(S.V).alias("_n"), S.U, S.V, "_prio")
        )
        ranked = ends.withColumn("_rank", F.row_number().over(Window.partitionBy("_n").orderBy("_prio", S.U, S.V)))
        kept = ranked.join(capacity, on="_n").filter(F.col("_rank") <= F.col("_free"))
        accepted = (
            kept.groupBy(S.U, S.V, "_prio").agg(F.count("*").alias("_ends"))
            .filter(F.col("_ends") == 2)
            .select(S.U, S.V, F.lit(round_no).alias(S.ROUND), "_prio")
            .limit(node_count)  # never binds (one proposal per node); see below
        )
        # Why the limit: a checkpoint keeps the optimizer's size estimate of the plan it came from,
        # and every round joins the previous round's edges with themselves, so the estimate would
        # be squared round after round (at round 10 on FB 1K, Spark spent a minute multiplying
        # BigInts in SizeInBytesOnlyStatsPlanVisitor). A limit resets it to rows x row size.
        edges = edges.unionByName(accepted).localCheckpoint()
        log.info(
            "SpiderCastM round %d: %d proposals, %.1fs (elapsed %.0fs)",
            round_no, proposed, time.monotonic() - clock, time.monotonic() - started,
        )
    # No link count here: it would be one more Spark action only for this line (the run stores it).
    log.info("SpiderCastM: %d rounds, %.0fs", round_no, time.monotonic() - started)
    return numbered_links(edges, [S.ROUND, "_prio", S.U, S.V])
