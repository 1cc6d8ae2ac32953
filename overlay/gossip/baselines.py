"""Feverfew's comparisons (NOTES-ktco-feverfew-rappel.md §2.2): per-node neighbour choices from a
set of known candidates, with full knowledge or with what gossip taught a node.

* Global Feverfew: Alg. 3 (`select.select_ln_covered`) over every node sharing a topic with p
  (every other node would add only candidates of u2 = 0).
* SpiderCast (DEBS'07 as Feverfew's section 4 runs it: greedy 3-coverage, random 1-coverage),
  the NOTES rule: greedy first, to the known q covering the most of p's topics whose greedy
  coverage is below min(K_g, n_t - 1) (ties: the smaller id), until no q covers any; then, for
  each topic of p in ascending order whose random coverage is below min(K_r, n_t - 1), a link to
  the known subscriber q of smallest draw(SPIDERCAST_RANDOM, p, t, q) that is not yet a
  neighbour, which counts for the random coverage of every topic q shares with p. Our reading:
  a node counts the links it chooses itself (nodes choose at once, so none can count the links
  others are choosing); the overlay is the union of all choices, undirected.

A choice is a per-node function, so the links come from one `mapInArrow` over the nodes
(with the subscriptions broadcast, as the cycle engine has them); `known` is either every
node sharing a topic (`global`) or the candidates each node's row lists (`gossip`).
"""

from __future__ import annotations

from collections.abc import Iterable

import numpy as np
import pyarrow as pa
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F

from overlay import schema as S
from overlay.design.baselines import numbered_links
from overlay.draws import SPIDERCAST_RANDOM, draw_int
from overlay.gossip.select import select_ln_covered
from overlay.gossip.theory import need

GREEDY_COVERAGE, RANDOM_COVERAGE = 3, 1
RULES = ("feverfew", "spidercast")
CANDIDATES = "candidates"


class Knowledge:
    """sub(q) of every node and the subscribers of every topic, from CSR arrays."""

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
        found = self._subs.get(node)
        if found is None:
            found = self._subs[node] = frozenset(self.topics[self.offsets[node]:self.offsets[node + 1]].tolist())
        return found

    def __getitem__(self, node: int) -> frozenset:  # the mapping select_ln_covered reads
        return self.subs(node)

    def sharing(self, node: int) -> list[int]:
        """Every other node sharing a topic with `node`, ascending."""
        parts = [self.members[self.by_topic[t]:self.by_topic[t + 1]] for t in self.subs(node)]
        if not parts:
            return []
        found = np.unique(np.concatenate(parts))
        return found[found != node].tolist()

    def need(self, topic: int) -> int:
        return need(int(self.sizes[topic]))


def spidercast_choices(p: int, known: Iterable[int], knowledge: Knowledge, seed: int,
                       greedy: int = GREEDY_COVERAGE, random: int = RANDOM_COVERAGE) -> list[int]:
    """The SpiderCast rule at node p (module doc): its chosen neighbours, in the order chosen."""
    mine = knowledge.subs(p)
    known = sorted(set(known) - {p})
    size = {t: int(knowledge.sizes[t]) for t in mine}
    target = {t: min(greedy, size[t] - 1) for t in mine}
    cover = dict.fromkeys(mine, 0)
    chosen: list[int] = []
    left = set(known)
    while left:
        best, gain = None, 0
        for q in sorted(left):
            count = sum(1 for t in knowledge.subs(q) & mine if cover[t] < target[t])
            if count > gain:
                best, gain = q, count
        if best is None:
            break
        left.discard(best)
        chosen.append(best)
        for t in knowledge.subs(best) & mine:
            cover[t] += 1
    random_cover = dict.fromkeys(mine, 0)
    for t in sorted(mine):
        if random_cover[t] >= min(random, size[t] - 1):
            continue
        options = [q for q in known if t in knowledge.subs(q) and q not in chosen]
        if not options:
            continue
        q = min(options, key=lambda x: (draw_int(seed, SPIDERCAST_RANDOM, p, t, x), x))
        chosen.append(q)
        for shared in knowledge.subs(q) & mine:
            random_cover[shared] += 1
    return chosen


def choose(rule: str, p: int, known: Iterable[int], knowledge: Knowledge, seed: int) -> list[int]:
    if rule == "feverfew":
        return select_ln_covered(p, knowledge, sorted(set(known) - {p}), knowledge.need)
    return spidercast_choices(p, known, knowledge, seed)


def chosen_links(spark: SparkSession, offsets: np.ndarray, topics: np.ndarray, rule: str, seed: int,
                 known: DataFrame | None, partitions: int, round_label: int = 0) -> DataFrame:
    """overlay_edges rows (u < v, numbered) of every node's choices by `rule`; `known`: rows
    (node_id, candidates array<bigint>), or None for full knowledge (every node sharing a topic)."""
    if rule not in RULES:
        raise ValueError(f"unknown rule {rule!r}; one of {', '.join(RULES)}")
    shared = spark.sparkContext.broadcast((offsets, topics))
    cache: dict = {}

    def knowledge() -> Knowledge:
        if "k" not in cache:
            cache["k"] = Knowledge(*shared.value)
        return cache["k"]

    def links(batches):
        k = knowledge()
        for batch in batches:
            nodes = batch.column(S.NODE_ID).to_pylist()
            lists = batch.column(CANDIDATES).to_pylist() if CANDIDATES in batch.schema.names else [None] * len(nodes)
            us, vs = [], []
            for p, candidates in zip(nodes, lists):
                for q in choose(rule, p, k.sharing(p) if candidates is None else candidates, k, seed):
                    us.append(min(p, q))
                    vs.append(max(p, q))
            yield pa.RecordBatch.from_arrays([pa.array(us, pa.int64()), pa.array(vs, pa.int64())], names=[S.U, S.V])

    nodes = known if known is not None else spark.range(len(offsets) - 1, numPartitions=partitions).select(
        F.col("id").alias(S.NODE_ID)
    )
    pairs = nodes.mapInArrow(links, f"{S.U} long, {S.V} long").distinct().withColumn(S.ROUND, F.lit(round_label))
    return numbered_links(pairs, [S.U, S.V])
