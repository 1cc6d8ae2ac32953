"""Publications routed as Pregel-style supersteps: every message moves one hop per superstep.

A superstep joins the live messages with the routing tables of the nodes holding them
(`routing.network`) and emits the next messages, all publications at once; no per-message
Python runs on the driver. Message kinds:

* RANGE (Po / Pa1 / Pie, Protocol 4): a message addressed to `low` with target range
  [low, high). At a node other than `low` it is forwarded by `send`; at `low` the next hops X are
  chosen (Protocol 5) and one message per X_j, covering [X_j, X_j+1), is sent on.
* UNICAST (Scribe / iScribe, publisher to RP(t)): forwarded by `send` to `low` = RP(t); at RP(t)
  it turns into the topic's tree multicast.
* TREE: a message at a tree node `key`; every tree child receives a copy.

Each emitted message is an *arrival*: (pub_id, topic_id, publisher, at, hops, target), where
`target` says the message is addressed to that node (RANGE: at == low; UNICAST: at RP(t); TREE:
the node ends a route there). Deliveries, loads and metrics are derived from the arrivals
(`routing.outcome`).
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from dataclasses import dataclass

from pyspark.sql import DataFrame
from pyspark.sql import functions as F

from overlay import schema as S
from routing.network import AT, FDIST, HIGH, HOPS, KEY, KIND, LOW, SUBS, TARGET, Network
from routing.protocols import BEACONVEY, PROTOCOLS, greedy_step, next_hops, range_span
from routing.trees import CHILD_AT, CHILD_KEY, iscribe_tree, rendezvous, scribe_tree

log = logging.getLogger(__name__)

RANGE, UNICAST, TREE = 0, 1, 2
MESSAGE_COLUMNS = (S.PUB_ID, S.TOPIC_ID, S.PUBLISHER, AT, LOW, HIGH, HOPS, KIND, KEY, TARGET)


@dataclass
class Simulation:
    arrivals: DataFrame  # (pub_id, topic_id, publisher, at, hops, target)
    supersteps: int
    messages: int
    superstep_seconds: list[float]
    tree_seconds: float = 0.0


def default_max_supersteps(n: int) -> int:
    """Po's paths can be linear in |V| (BeaConvey section 4.2.1); anything longer is a bug."""
    return 4 * n + 64


def _forward(messages: DataFrame, network: Network) -> DataFrame:
    """`send`: one hop towards `low` along the nearest finger (RANGE and UNICAST messages)."""
    n = network.n
    distance = F.pmod(F.col(LOW) - F.col(AT), F.lit(n))
    return (
        messages.join(network.fingers, on=AT)
        .withColumn(AT, F.pmod(F.col(AT) + greedy_step(F.col(FDIST), distance), F.lit(n)))
        .withColumn(TARGET, F.col(AT) == F.col(LOW))
    )


def _spread(messages: DataFrame, network: Network, protocol: str) -> DataFrame:
    """Protocol 4 at the node v = low: one message per next hop X_j, sent on at once."""
    n = network.n
    span = range_span(F.col(LOW), F.col(HIGH), n)
    chosen = (
        messages.join(network.fingers, on=AT)
        .join(network.topics, on=S.TOPIC_ID)
        .withColumn("_span", span)
        .withColumn("_x", next_hops(protocol, F.col(AT), F.col("_span"), F.col(FDIST), F.col(SUBS), n))
        .select("*", F.posexplode("_x").alias("_j", "_d"))
    )
    upper = F.coalesce(F.try_element_at(F.col("_x"), F.col("_j") + 2), F.col("_span"))
    return (
        chosen.withColumn(LOW, F.pmod(F.col(AT) + F.col("_d"), F.lit(n)))
        .withColumn(HIGH, F.pmod(F.col(AT) + upper, F.lit(n)))
        .withColumn(AT, F.pmod(F.col(AT) + greedy_step(F.col(FDIST), F.col("_d")), F.lit(n)))
        .withColumn(TARGET, F.col(AT) == F.col(LOW))
    )


def _multicast(messages: DataFrame, tree: DataFrame) -> DataFrame:
    """A copy to every tree child of the message's tree node."""
    return (
        messages.join(tree, on=[S.TOPIC_ID, KEY])
        .withColumn(AT, F.col(CHILD_AT))
        .withColumn(KEY, F.col(CHILD_KEY))
        .withColumn(TARGET, F.col("tree_target"))
    )


def initial_messages(publications: DataFrame, protocol: str, n: int) -> DataFrame:
    """Superstep 0: each publication at its publisher (publications: pub_id, topic_id, publisher
    as a ring position)."""
    frame = publications.select(S.PUB_ID, S.TOPIC_ID, S.PUBLISHER).withColumn(AT, F.col(S.PUBLISHER))
    if protocol in BEACONVEY:
        frame = frame.withColumn(LOW, F.col(AT)).withColumn(HIGH, F.col(AT)).withColumn(KIND, F.lit(RANGE))
    else:
        rp = rendezvous(F.col(S.TOPIC_ID), n)
        frame = (
            frame.withColumn(LOW, rp).withColumn(HIGH, rp)
            .withColumn(KIND, F.when(F.col(AT) == rp, F.lit(TREE)).otherwise(F.lit(UNICAST)))
        )
    return frame.select(
        S.PUB_ID, S.TOPIC_ID, S.PUBLISHER, AT, LOW, HIGH, F.lit(0).alias(HOPS), KIND,
        F.when(F.col(KIND) == TREE, F.array(F.col(AT))).otherwise(F.lit(None).cast("array<bigint>")).alias(KEY),
        F.lit(False).alias(TARGET),
    )


def superstep(messages: DataFrame, network: Network, protocol: str, tree: DataFrame | None) -> DataFrame:
    """The messages one hop later."""
    moving = F.col(AT) != F.col(LOW)
    parts = [_forward(messages.filter((F.col(KIND) != TREE) & moving), network)]
    if protocol in BEACONVEY:
        parts.append(_spread(messages.filter((F.col(KIND) == RANGE) & ~moving), network, protocol))
    else:
        arrived = messages.filter((F.col(KIND) == UNICAST) & ~moving).withColumn(KEY, F.array(F.col(AT)))
        in_tree = messages.filter(F.col(KIND) == TREE).unionByName(arrived)
        parts.append(_multicast(in_tree, tree).withColumn(KIND, F.lit(TREE)))
    out = parts[0].select(*MESSAGE_COLUMNS)
    for part in parts[1:]:
        out = out.unionByName(part.select(*MESSAGE_COLUMNS))
    return out.withColumn(HOPS, F.col(HOPS) + 1)


def simulate(
    network: Network,
    publications: DataFrame,
    protocol: str,
    max_supersteps: int | None = None,
    on_superstep: Callable[[int, int, float], None] | None = None,
) -> Simulation:
    """Route every publication to completion; publications: (pub_id, topic_id, publisher) with
    the publisher as a ring position."""
    if protocol not in PROTOCOLS:
        raise ValueError(f"unknown protocol {protocol!r}; choose one of {', '.join(PROTOCOLS)}")
    limit = max_supersteps or default_max_supersteps(network.n)
    tree = None
    clock = time.monotonic()
    if protocol in ("scribe", "iscribe"):
        topics = publications.select(S.TOPIC_ID).distinct()
        build = scribe_tree if protocol == "scribe" else iscribe_tree
        tree = build(network, topics, limit).withColumnRenamed(TARGET, "tree_target")
        log.info("%s trees: %d edges in %.1fs", protocol, tree.count(), time.monotonic() - clock)
    tree_seconds = time.monotonic() - clock
    messages = initial_messages(publications, protocol, network.n).localCheckpoint(eager=True)
    arrivals: list[DataFrame] = []
    seconds: list[float] = []
    total = 0
    for step in range(1, limit + 1):
        clock = time.monotonic()
        messages = superstep(messages, network, protocol, tree).localCheckpoint(eager=True)
        count = messages.count()
        if count == 0:
            break
        total += count
        seconds.append(time.monotonic() - clock)
        arrivals.append(messages.select(S.PUB_ID, S.TOPIC_ID, S.PUBLISHER, AT, HOPS, TARGET))
        log.info("superstep %d: %d messages, %.2fs", step, count, seconds[-1])
        if on_superstep is not None:
            on_superstep(step, count, seconds[-1])
    else:
        raise RuntimeError(f"messages still moving after {limit} supersteps: routing does not terminate")
    spark = publications.sparkSession
    if arrivals:
        union = arrivals[0]
        for more in arrivals[1:]:
            union = union.unionByName(more)
    else:
        union = spark.createDataFrame(
            [], f"{S.PUB_ID} long, {S.TOPIC_ID} long, {S.PUBLISHER} long, {AT} long, {HOPS} int, {TARGET} boolean"
        )
    return Simulation(arrivals=union, supersteps=len(seconds), messages=total, superstep_seconds=seconds, tree_seconds=tree_seconds)


def unicast_hops(network: Network, pairs: DataFrame, max_supersteps: int | None = None) -> DataFrame:
    """Plain greedy unicast (Protocol 4's `send`) for (pair, source, target) ring positions:
    (pair, hops), one superstep per hop for all pairs at once."""
    limit = max_supersteps or default_max_supersteps(network.n)
    moving = pairs.select("pair", F.col("source").alias(AT), F.col("target").alias(LOW), F.lit(0).alias(HOPS))
    done = [moving.filter(F.col(AT) == F.col(LOW)).select("pair", HOPS)]
    moving = moving.filter(F.col(AT) != F.col(LOW)).localCheckpoint(eager=True)
    for _ in range(limit):
        if moving.isEmpty():
            break
        stepped = _forward(moving, network).select("pair", AT, LOW, (F.col(HOPS) + 1).alias(HOPS)).localCheckpoint(eager=True)
        done.append(stepped.filter(F.col(AT) == F.col(LOW)).select("pair", HOPS))
        moving = stepped.filter(F.col(AT) != F.col(LOW))
    else:
        raise RuntimeError(f"unicast messages still moving after {limit} supersteps")
    result = done[0]
    for more in done[1:]:
        result = result.unionByName(more)
    return result
