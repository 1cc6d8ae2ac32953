"""Feverfew's comparisons (docs/readings/feverfew.md#baselines): per-node neighbour choices from a
set of known candidates, with full knowledge or with what gossip taught a node.

* Global Feverfew: Alg. 3 (`select.select_ln_covered`) over every node sharing a topic with p
  (every other node would add only candidates of u2 = 0).
* SpiderCast (DEBS'07 as Feverfew's section 4 runs it: greedy 3-coverage, random 1-coverage),
  our reading of the rule: greedy first, to the known q covering the most of p's topics whose greedy
  coverage is below min(K_g, n_t - 1) (ties: the smaller id), until no q covers any; then, for
  each topic of p in ascending order whose random coverage is below min(K_r, n_t - 1), a link to
  the known subscriber q of smallest draw(SPIDERCAST_RANDOM, p, t, q) that is not yet a
  neighbour, which counts for the random coverage of every topic q shares with p. Our reading:
  a node counts the links it chooses itself (nodes choose at once, so none can count the links
  others are choosing); the overlay is the union of all choices, undirected.

A choice is a per-node function, so the choices come from one `mapInArrow` over the nodes
(with the subscriptions broadcast, as the cycle engine has them), as view rows shaped like the
simulator's final state; `known` is either every node sharing a topic (`global`) or the
candidates each node's row lists (`gossip`).
"""

from __future__ import annotations

from collections.abc import Iterable

import numpy as np
import pyarrow as pa
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F

from overlay import schema as S
from overlay.draws import SPIDERCAST_RANDOM, draw_int
from overlay.gossip.select import ln_covered_choice
from overlay.gossip.theory import need

GREEDY_COVERAGE, RANDOM_COVERAGE = 3, 1
RULES = ("feverfew", "spidercast")
CANDIDATES = "candidates"


class Knowledge:
    """Every node's topics and every topic's subscribers, from CSR arrays."""

    def __init__(self, offsets: np.ndarray, topics: np.ndarray) -> None:
        self.offsets, self.topics = offsets, topics
        nodes = len(offsets) - 1
        owners = np.repeat(np.arange(nodes, dtype=np.int64), np.diff(offsets))
        order = np.lexsort((owners, topics))
        span = int(topics.max()) + 1 if len(topics) else 0
        self.by_topic = np.searchsorted(topics[order], np.arange(span + 1))
        self.members = owners[order]
        self.sizes = np.diff(self.by_topic)
        self._subs: dict[int, frozenset] = {}

    def subs(self, node: int) -> frozenset:
        """sub(node), as a set (kept once asked for)."""
        found = self._subs.get(node)
        if found is None:
            found = self._subs[node] = frozenset(self.topics[self.offsets[node] : self.offsets[node + 1]].tolist())
        return found

    def subscribers(self, topic: int) -> np.ndarray:
        """The topic's subscribers, ascending."""
        return self.members[self.by_topic[topic] : self.by_topic[topic + 1]]

    def sizes_of(self, nodes: np.ndarray) -> np.ndarray:
        """|sub(q)| of each node."""
        return (self.offsets[nodes + 1] - self.offsets[nodes]).astype(np.int64)

    def sharing(self, node: int) -> np.ndarray:
        """Every other node sharing a topic with `node`, ascending."""
        mine = self.topics[self.offsets[node] : self.offsets[node + 1]]
        parts = [self.subscribers(t) for t in mine.tolist()]
        if not parts:
            return np.zeros(0, dtype=np.int64)
        found = np.unique(np.concatenate(parts))
        return found[found != node]

    def need(self, topic: int) -> int:
        return need(int(self.sizes[topic]))

    def matrix(self, p: int, known: Iterable[int]) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """(candidates ascending without p, member [candidates x p's topics], p's topics)."""
        mine = self.topics[self.offsets[p] : self.offsets[p + 1]]
        candidates = np.unique(np.asarray(list(known), dtype=np.int64))
        candidates = candidates[candidates != p]
        member = np.zeros((len(candidates), len(mine)), dtype=bool)
        for j, t in enumerate(mine.tolist()):
            subscribers = self.subscribers(t)
            at = np.searchsorted(candidates, subscribers)
            hit = at < len(candidates)
            at, subscribers = at[hit], subscribers[hit]
            member[at[candidates[at] == subscribers], j] = True
        return candidates, member, mine


def spidercast_choices(
    p: int,
    known: Iterable[int],
    knowledge: Knowledge,
    seed: int,
    greedy: int = GREEDY_COVERAGE,
    random: int = RANDOM_COVERAGE,
) -> list[int]:
    """The SpiderCast rule at node p (module doc): its chosen neighbours, in the order chosen."""
    candidates, member, mine = knowledge.matrix(p, known)
    sizes = knowledge.sizes[mine]
    target = np.minimum(greedy, sizes - 1)
    cover = np.zeros(len(mine), dtype=np.int64)
    left = np.ones(len(candidates), dtype=bool)
    chosen: list[int] = []
    while left.any():
        counts = member[:, cover < target].sum(axis=1)
        counts[~left] = 0
        best = int(np.argmax(counts))  # the first of the most: the smaller id
        if counts[best] == 0:
            break
        left[best] = False
        chosen.append(int(candidates[best]))
        cover += member[best]
    random_cover = np.zeros(len(mine), dtype=np.int64)
    for j in np.argsort(mine, kind="stable").tolist():
        if random_cover[j] >= min(random, int(sizes[j]) - 1):
            continue
        options = np.flatnonzero(member[:, j] & left)
        if not len(options):
            continue
        t = int(mine[j])
        pick = min(
            options.tolist(),
            key=lambda i: (draw_int(seed, SPIDERCAST_RANDOM, p, t, int(candidates[i])), int(candidates[i])),
        )
        left[pick] = False
        chosen.append(int(candidates[pick]))
        random_cover += member[pick]
    return chosen


def choose(
    rule: str, p: int, known: Iterable[int], knowledge: Knowledge, seed: int
) -> tuple[list[int], list[int], int]:
    """p's choices by `rule` over `known`: (chosen, p's ln-covered topics by them, p's topics
    with two or more subscribers)."""
    candidates, member, mine = knowledge.matrix(p, known)
    need_of = np.array([knowledge.need(int(t)) for t in mine], dtype=np.int64)
    if rule == "feverfew":
        chosen = ln_covered_choice(candidates, member, knowledge.sizes_of(candidates), need_of)
    else:
        chosen = spidercast_choices(p, known, knowledge, seed)
    rows = np.searchsorted(candidates, np.asarray(chosen, dtype=np.int64))
    cover = member[rows].sum(axis=0) if len(rows) else np.zeros(len(mine), dtype=np.int64)
    needy = need_of > 0
    return chosen, mine[needy & (cover >= need_of)].tolist(), int(needy.sum())


VIEW_SCHEMA = f"{S.NODE_ID} long, lv array<long>, covered array<long>, needy int"


def chosen_views(
    spark: SparkSession,
    offsets: np.ndarray,
    topics: np.ndarray,
    rule: str,
    seed: int,
    known: DataFrame | None,
    partitions: int,
) -> DataFrame:
    """Every node's choices by `rule` as view rows (node_id, lv, covered, needy): the shape of the
    simulator's final state, so the same measures and links apply (`overlay.gossip.measures`).
    `known`: rows (node_id, candidates array<bigint>), or None for full knowledge (every node
    sharing a topic)."""
    if rule not in RULES:
        raise ValueError(f"unknown rule {rule!r}; one of {', '.join(RULES)}")
    shared = spark.sparkContext.broadcast((offsets, topics))
    cache: dict = {}

    def knowledge() -> Knowledge:
        if "k" not in cache:
            cache["k"] = Knowledge(*shared.value)
        return cache["k"]

    def views(batches):
        k = knowledge()
        for batch in batches:
            nodes = batch.column(S.NODE_ID).to_pylist()
            lists = batch.column(CANDIDATES).to_pylist() if CANDIDATES in batch.schema.names else [None] * len(nodes)
            chosen, covered, needy = [], [], []
            for p, candidates in zip(nodes, lists):
                c, cov, n = choose(rule, p, k.sharing(p) if candidates is None else candidates, k, seed)
                chosen.append(c)
                covered.append(cov)
                needy.append(n)
            yield pa.RecordBatch.from_arrays(
                [
                    pa.array(nodes, pa.int64()),
                    pa.array(chosen, pa.list_(pa.int64())),
                    pa.array(covered, pa.list_(pa.int64())),
                    pa.array(needy, pa.int32()),
                ],
                names=[S.NODE_ID, "lv", "covered", "needy"],
            )

    nodes = (
        known
        if known is not None
        else spark.range(len(offsets) - 1, numPartitions=partitions).select(F.col("id").alias(S.NODE_ID))
    )
    return nodes.mapInArrow(views, VIEW_SCHEMA)
