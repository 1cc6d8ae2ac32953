"""Synthetic workloads of ICDCS'16 section IX-A (and BeaConvey, kTCO): Unif, Zipf, Expo.

The generator, exactly:

* Topics are ranked 0..T-1; topic id = rank, key `t<rank>`. Popularity weight of rank r:
  - `unif`: w(r) = 1;
  - `zipf`: w(r) = (r + 1) ** -alpha            (alpha = 2.0 in the paper);
  - `expo`: w(r) = exp(-expo_rate * r / T)      (expo_rate = 10.0 by default: the most popular
    topic is e^10 ~ 22,000 times as popular as the least, whatever T is).
* Node v (id v, key `n<v>`) draws its subscription size k uniformly from [min_subs, max_subs],
  then k distinct topics by successive weighted sampling without replacement (each next topic
  picked with probability proportional to its weight among the topics not yet picked). This is
  done with the Gumbel-top-k trick: the k largest of log w(r) + Gumbel noise.
* Randomness: node v uses `numpy.random.default_rng([seed, v])`: the size first, then T Gumbel
  draws. So an instance depends only on (dist, nodes, topics, sizes, alpha/rate, seed), not on
  partitioning or executor count.

Nodes are generated in parallel with `mapInPandas`; nothing is collected to the driver.
"""

from __future__ import annotations

import math
from collections.abc import Iterator
from dataclasses import asdict, dataclass
from typing import Literal

import numpy as np
import pandas as pd
from pyspark.sql import SparkSession
from pyspark.sql import functions as F

from overlay import schema as S
from overlay.errors import InputError
from overlay.instance.model import InstanceFrames, RowTally
from overlay.lineage import LOCAL, Lineage

Distribution = Literal["unif", "zipf", "expo"]
DISTRIBUTIONS: tuple[str, ...] = ("unif", "zipf", "expo")
NODES_PER_TASK = 2_000


@dataclass(frozen=True)
class SyntheticSpec:
    dist: Distribution
    nodes: int
    topics: int
    min_subs: int
    max_subs: int
    seed: int
    alpha: float = 2.0
    expo_rate: float = 10.0

    def validate(self) -> None:
        problems = []
        if self.dist not in DISTRIBUTIONS:
            problems.append(f"--dist must be one of {', '.join(DISTRIBUTIONS)}, got {self.dist!r}")
        for name in ("nodes", "topics", "min_subs", "max_subs"):
            if getattr(self, name) <= 0:
                flag = "--" + name.replace("_", "-")
                problems.append(f"{flag} must be a positive integer, got {getattr(self, name)}")
        if self.min_subs > self.max_subs:
            problems.append(f"--min-subs ({self.min_subs}) is larger than --max-subs ({self.max_subs})")
        if 0 < self.topics < self.max_subs:
            problems.append(
                f"--max-subs ({self.max_subs}) exceeds --topics ({self.topics}): a node cannot "
                "subscribe to more distinct topics than exist"
            )
        if not (self.alpha > 0 and math.isfinite(self.alpha)):
            problems.append(f"--alpha must be a positive number, got {self.alpha}")
        if not (self.expo_rate > 0 and math.isfinite(self.expo_rate)):
            problems.append(f"--expo-rate must be a positive number, got {self.expo_rate}")
        if self.seed < 0:
            problems.append(f"--seed must be zero or positive, got {self.seed}")
        if problems:
            raise InputError("synthetic instance: " + "; ".join(problems))


def log_weights(dist: str, topics: int, alpha: float, expo_rate: float) -> np.ndarray:
    """log w(r) for ranks r = 0..topics-1 (logs keep Zipf's tail finite)."""
    ranks = np.arange(topics, dtype=np.float64)
    if dist == "unif":
        return np.zeros(topics)
    if dist == "zipf":
        return -alpha * np.log1p(ranks)
    if dist == "expo":
        return -expo_rate * ranks / topics
    raise InputError(f"unknown distribution {dist!r}")


def draw_node_topics(spec: SyntheticSpec, node: int, logw: np.ndarray) -> np.ndarray:
    """The sorted topic ids of one node: the reference definition of the generator."""
    rng = np.random.default_rng([spec.seed, node])
    size = int(rng.integers(spec.min_subs, spec.max_subs + 1))
    keys = logw + rng.gumbel(size=spec.topics)
    if size == spec.topics:
        return np.arange(spec.topics)
    return np.sort(np.argpartition(-keys, size - 1)[:size])


def _generate(spec: SyntheticSpec):
    logw = log_weights(spec.dist, spec.topics, spec.alpha, spec.expo_rate)

    def generate(batches: Iterator[pd.DataFrame]) -> Iterator[pd.DataFrame]:
        for batch in batches:
            node_ids, topic_ids = [], []
            for node in batch["id"].to_numpy():
                chosen = draw_node_topics(spec, int(node), logw)
                node_ids.append(np.full(len(chosen), node, dtype=np.int64))
                topic_ids.append(chosen.astype(np.int64))
            if node_ids:
                yield pd.DataFrame({S.NODE_ID: np.concatenate(node_ids), S.TOPIC_ID: np.concatenate(topic_ids)})

    return generate


def synthetic_instance(spark: SparkSession, spec: SyntheticSpec, lineage: Lineage = LOCAL) -> InstanceFrames:
    spec.validate()
    tasks = max(1, math.ceil(spec.nodes / NODES_PER_TASK))
    subscriptions = lineage.cut(
        spark.range(0, spec.nodes, numPartitions=tasks).mapInPandas(
            _generate(spec), schema=f"{S.NODE_ID} long, {S.TOPIC_ID} long"
        )
    )
    total = subscriptions.count()
    node_keys = spark.range(spec.nodes).select(F.concat(F.lit("n"), F.col("id")).alias(S.KEY), F.col("id").alias(S.ID))
    topic_keys = spark.range(spec.topics).select(
        F.concat(F.lit("t"), F.col("id")).alias(S.KEY), F.col("id").alias(S.ID)
    )
    rejected = spark.createDataFrame([], S.REJECTED_FRAME_SCHEMA)
    return InstanceFrames(
        source="synthetic",
        params=asdict(spec),
        subscriptions=subscriptions,
        node_keys=node_keys,
        topic_keys=topic_keys,
        rejected=rejected,
        tally=RowTally(read=total, accepted=total, rejected=0, duplicates=0),
    )
