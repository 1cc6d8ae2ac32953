"""Push-pull dissemination on any stored overlay, under churn or mass failure (Feverfew Fig. 9;
docs/readings/feverfew.md#push-pull, #failures).

A publication is a topic and a publisher; it spreads on the topic's subgraph of the overlay
(links between two of its subscribers) by `pushpull.push_pull_counts`, one cycle at a time.
Publications are independent, so each runs on its own as one Python call over its members and
links (`mapInArrow` over one row per publication); nothing reaches the driver but the few
publications chosen.

Seeded choices (`overlay.draws`), all keyed so that the oracle repeats them:

* topics: the `count` topics with two or more subscribers of smallest draw(PUBLISHER, -1, t),
  publication k on the k-th; or, for `sizes`, the topic whose size is nearest each (ties: the
  smaller id);
* the publisher of topic t: its subscriber of smallest draw(PUBLISHER, t, node); it never fails
  (docs/readings/feverfew.md#push-pull: "a random subscriber that survives");
* substitution churn at rate r: from cycle 1, a node up at cycle c - 1 fails at c when
  draw(CHURN, c, node) < r 2^64, and is back at c + 1 (uninformed): each cycle a share r of the
  nodes fails, in expectation, and the ones failed the cycle before return;
* mass failure of share f at cycle c0: a node with draw(CHURN, 0, node) < f 2^64 fails at c0
  and stays down;
* the neighbour subscriber u contacts at cycle c: draw(PUSH_PULL, pub_id, c, u) modulo its
  alive neighbours in the topic subgraph (ascending ids).

The age limit is `theory.age_limit(n_t)`.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass

import numpy as np
import pyarrow as pa
from pyspark.sql import DataFrame
from pyspark.sql import functions as F
from pyspark.sql.types import StructType

from overlay import schema as S
from overlay.draws import CHURN, PUBLISHER, PUSH_PULL, draw
from overlay.frames import local_frame
from overlay.gossip.measures import nearest_topics, topic_sizes
from overlay.gossip.pushpull import completion, push_pull_counts
from overlay.gossip.theory import age_limit

_TWO_64 = float(1 << 64)
_RANK = "_rank"
_MEMBERS, _US, _VS = "_members", "_us", "_vs"
# `dissemination_completion` without its routing run id: what one dissemination computes.
COMPLETION_SCHEMA = StructType([f for f in S.DISSEMINATION_COMPLETION.schema.fields if f.name != S.ROUTING_RUN_ID])
COMPLETION_COLUMNS = tuple(COMPLETION_SCHEMA.fieldNames())


@dataclass(frozen=True)
class Failures:
    """Which nodes are down when: substitution churn at `substitution` per cycle, and a mass
    failure of `mass_share` of the nodes at cycle `mass_cycle` (0: none of either)."""

    substitution: float = 0.0
    mass_share: float = 0.0
    mass_cycle: int = 1

    def check(self) -> None:
        if not 0.0 <= self.substitution < 1.0:
            raise ValueError(f"the substitution rate must be in [0, 1), got {self.substitution}")
        if not 0.0 <= self.mass_share <= 1.0:
            raise ValueError(f"the mass failure share must be in [0, 1], got {self.mass_share}")
        if self.mass_cycle < 1:
            raise ValueError(f"the mass failure happens at a cycle >= 1, got {self.mass_cycle}")

    def alive(self, seed: int, nodes: np.ndarray, cycles: int, spared: int | np.ndarray) -> np.ndarray:
        """bool [cycles + 1, len(nodes)]: who is up at each cycle; `nodes[spared]` (one index or
        an array of them) always are."""
        down = np.zeros((cycles + 1, len(nodes)), dtype=bool)
        if self.substitution > 0:
            limit = np.uint64(min(int(self.substitution * _TWO_64), (1 << 64) - 1))
            for c in range(1, cycles + 1):
                down[c] = ~down[c - 1] & (draw(seed, CHURN, c, nodes) < limit)
        if self.mass_share > 0:
            if self.mass_share >= 1.0:
                gone = np.ones(len(nodes), dtype=bool)
            else:
                gone = draw(seed, CHURN, 0, nodes) < np.uint64(int(self.mass_share * _TWO_64))
            down[self.mass_cycle :] |= gone
        down[:, spared] = False
        return ~down


def choose_topics(
    subscriptions: DataFrame, seed: int, count: int | None = None, sizes: tuple[int, ...] = ()
) -> DataFrame:
    """(pub_id, topic_id, subscribers): the published topics (see the module doc)."""
    spark = subscriptions.sparkSession
    candidates = topic_sizes(subscriptions)
    if sizes:
        return nearest_topics(candidates, sizes, S.PUB_ID)

    def rank(batches):
        for batch in batches:
            topics = batch.column(S.TOPIC_ID).to_numpy()
            ranks = (draw(seed, PUBLISHER, -1, topics) ^ np.uint64(1 << 63)).view(np.int64)
            yield pa.RecordBatch.from_arrays(
                [batch.column(S.TOPIC_ID), batch.column(S.SUBSCRIBERS), pa.array(ranks)],
                names=[S.TOPIC_ID, S.SUBSCRIBERS, _RANK],
            )

    ranked = candidates.mapInArrow(rank, f"{S.TOPIC_ID} long, {S.SUBSCRIBERS} long, {_RANK} long")
    rows = ranked.orderBy(_RANK, S.TOPIC_ID).limit(count).collect()  # the `count` publications asked for
    return local_frame(
        spark,
        [(k, r[S.TOPIC_ID], r[S.SUBSCRIBERS]) for k, r in enumerate(rows)],
        f"{S.PUB_ID} long, {S.TOPIC_ID} long, {S.SUBSCRIBERS} long",
    )


def disseminate(
    subscriptions: DataFrame,
    links: DataFrame,
    topics: DataFrame,
    failures: Failures,
    cycles: int,
    seed: int,
) -> DataFrame:
    """Completion of every publication of `topics` (`choose_topics`) at cycles 0..`cycles` on the
    overlay `links` (u, v): one row per publication and cycle (`COMPLETION_COLUMNS`)."""
    failures.check()
    members = topics.join(subscriptions.select(S.NODE_ID, S.TOPIC_ID), S.TOPIC_ID)
    a = members.select(S.PUB_ID, F.col(S.NODE_ID).alias(S.U))
    b = members.select(S.PUB_ID, F.col(S.NODE_ID).alias(S.V))
    inside = links.select(S.U, S.V).join(a, S.U).join(b, [S.PUB_ID, S.V])
    grouped = (
        members.groupBy(S.PUB_ID, S.TOPIC_ID)
        .agg(F.sort_array(F.collect_list(S.NODE_ID)).alias(_MEMBERS))
        .join(
            inside.groupBy(S.PUB_ID).agg(F.collect_list(S.U).alias(_US), F.collect_list(S.V).alias(_VS)),
            S.PUB_ID,
            "left",
        )
    )

    def spread(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        for batch in batches:
            rows = [_one_publication(row, failures, cycles, seed) for row in batch.to_pylist()]
            if rows:
                yield pa.RecordBatch.from_pydict(
                    {name: np.concatenate([r[name] for r in rows]) for name in COMPLETION_COLUMNS}
                )

    return grouped.mapInArrow(spread, COMPLETION_SCHEMA)


def publisher_of(seed: int, topic: int, nodes: np.ndarray) -> int:
    """The position in `nodes` (a topic's subscribers) of its publisher: the least draw."""
    return int(np.argmin(draw(seed, PUBLISHER, topic, nodes)))


def _one_publication(row: dict, failures: Failures, cycles: int, seed: int) -> dict:
    nodes = np.asarray(row[_MEMBERS], dtype=np.int64)
    n, topic, pub = len(nodes), int(row[S.TOPIC_ID]), int(row[S.PUB_ID])
    us = np.searchsorted(nodes, np.asarray(row[_US] or [], dtype=np.int64))
    vs = np.searchsorted(nodes, np.asarray(row[_VS] or [], dtype=np.int64))
    heads, tails = np.concatenate([us, vs]), np.concatenate([vs, us])
    order = np.lexsort((tails, heads))
    indices = tails[order]
    indptr = np.searchsorted(heads[order], np.arange(n + 1))
    publisher = publisher_of(seed, topic, nodes)
    alive = failures.alive(seed, nodes, cycles, publisher)
    draws = np.stack([draw(seed, PUSH_PULL, pub, c, nodes) for c in range(cycles + 1)])
    up, informed = push_pull_counts(indptr, indices, publisher, alive, draws, age_limit(n))
    steps = cycles + 1
    return {
        S.PUB_ID: np.full(steps, pub, np.int64),
        S.TOPIC_ID: np.full(steps, topic, np.int64),
        S.PUBLISHER: np.full(steps, int(nodes[publisher]), np.int64),
        S.SUBSCRIBERS: np.full(steps, n, np.int64),
        S.CYCLE: np.arange(steps, dtype=np.int32),
        S.ALIVE: up,
        S.INFORMED: informed,
        S.COMPLETION: completion(up, informed),
    }
