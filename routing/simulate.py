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

Each emitted message is an *arrival*: (pub_id, topic_id, publisher, at, hops, latency, sender,
target), where `sender` sent it to `at`, `target` says it is addressed to that node (RANGE:
at == low; UNICAST: at RP(t); TREE: the node ends a route there) and `latency` is the sum of the
link latencies it travelled (null when the network has none). Deliveries, loads and metrics
are derived from the arrivals (`routing.outcome`).
"""

from __future__ import annotations

import logging
import time
from dataclasses import dataclass

from pyspark.sql import DataFrame
from pyspark.sql import functions as F

from overlay import schema as S
from overlay.progress import OnStep, report
from routing.network import AT, FDIST, FLAT, HIGH, HOPS, KEY, KIND, LATENCY, LOW, RP, SENDER, SUBS, TARGET, Network
from routing.protocols import BEACONVEY, PROTOCOLS, greedy_step, hop_latency, next_hops, range_span
from routing.trees import CHILD_AT, CHILD_KEY, CHILD_LATENCY, iscribe_tree, rendezvous, scribe_tree

log = logging.getLogger(__name__)

RANGE, UNICAST, TREE = 0, 1, 2
MESSAGE_COLUMNS = (S.PUB_ID, S.TOPIC_ID, S.PUBLISHER, AT, LOW, HIGH, HOPS, LATENCY, SENDER, KIND, KEY, TARGET)
ARRIVAL_COLUMNS = (S.PUB_ID, S.TOPIC_ID, S.PUBLISHER, AT, HOPS, LATENCY, SENDER, TARGET)
ARRIVAL_SCHEMA = (
    f"{S.PUB_ID} long, {S.TOPIC_ID} long, {S.PUBLISHER} long, {AT} long, {HOPS} int, {LATENCY} double, "
    f"{SENDER} long, {TARGET} boolean"
)


@dataclass
class Simulation:
    arrivals: DataFrame  # (pub_id, topic_id, publisher, at, hops, latency, sender, target)
    supersteps: int
    messages: int
    superstep_seconds: list[float]
    tree_seconds: float = 0.0


def default_max_supersteps(n: int) -> int:
    """Po's paths can be linear in |V| (BeaConvey section 4.2.1); anything longer is a bug."""
    return 4 * n + 64


class _Step:
    """The column expressions of one superstep, built once per simulation: every F.* call is a
    round trip to the JVM, and a hop's expressions take hundreds of them."""

    def __init__(self, network: Network, protocol: str) -> None:
        n = network.n
        self.network = network
        distance = F.pmod(F.col(LOW) - F.col(AT), F.lit(n))
        after = F.pmod(F.col(AT) + greedy_step(F.col(FDIST), distance), F.lit(n))
        # `target` is computed in a second projection: one higher-order-function column used
        # twice in a projection shares its lambda variable, and Spark then returned nulls.
        self.after = after.alias(AT)
        self.hop = (F.col(LATENCY) + hop_latency(F.col(FDIST), F.col(FLAT), distance)).alias(LATENCY)
        sent_here = F.col(AT).alias(SENDER)
        others = [c for c in MESSAGE_COLUMNS if c not in (AT, LATENCY, SENDER, TARGET)]
        self.forward = [*others, self.hop, sent_here, self.after]
        self.mark_target = [*[c for c in MESSAGE_COLUMNS if c != TARGET], (F.col(AT) == F.col(LOW)).alias(TARGET)]
        self.kept = (S.PUB_ID, S.TOPIC_ID, S.PUBLISHER, HOPS, LATENCY, KIND, KEY)
        self.span = range_span(F.col(LOW), F.col(HIGH), n).alias("_span")
        self.hops = next_hops(protocol, F.col(AT), F.col("_span"), F.col(FDIST), F.col(SUBS), n).alias("_x")
        upper = F.coalesce(F.try_element_at(F.col("_x"), F.col("_j") + 2), F.col("_span"))
        low = F.pmod(F.col(AT) + F.col("_d"), F.lit(n))
        after_spread = F.pmod(F.col(AT) + greedy_step(F.col(FDIST), F.col("_d")), F.lit(n))
        spread_latency = (F.col(LATENCY) + hop_latency(F.col(FDIST), F.col(FLAT), F.col("_d"))).alias(LATENCY)
        self.spread = [
            *[c for c in self.kept if c != LATENCY],
            spread_latency,
            sent_here,
            after_spread.alias(AT),
            low.alias(LOW),
            F.pmod(F.col(AT) + upper, F.lit(n)).alias(HIGH),
        ]
        others = [c for c in MESSAGE_COLUMNS if c not in (AT, KEY, LATENCY, SENDER, TARGET)]
        self.multicast = [
            *others,
            sent_here,
            F.col(CHILD_AT).alias(AT),
            F.col(CHILD_KEY).alias(KEY),
            (F.col(LATENCY) + F.col(CHILD_LATENCY)).alias(LATENCY),
            F.col("tree_target").alias(TARGET),
        ]
        self.enter_tree = [
            F.when(F.col(KIND) == UNICAST, F.array(F.col(AT))).otherwise(F.col(KEY)).alias(KEY)
            if c == KEY
            else F.lit(TREE).alias(KIND)
            if c == KIND
            else F.col(c)
            for c in MESSAGE_COLUMNS
        ]
        self.next_hop = [(F.col(HOPS) + 1).alias(HOPS) if c == HOPS else F.col(c) for c in MESSAGE_COLUMNS]
        self.moving = F.col(AT) != F.col(LOW)
        self.unicast_or_range = F.col(KIND) != TREE
        self.arrived_range = (F.col(KIND) == RANGE) & ~self.moving
        self.in_tree = (F.col(KIND) == TREE) | ((F.col(KIND) == UNICAST) & ~self.moving)

    def forward_all(self, messages: DataFrame) -> DataFrame:
        """`send`: one hop towards `low` along the nearest finger (RANGE and UNICAST messages)."""
        return (
            messages.filter(self.unicast_or_range & self.moving)
            .join(self.network.fingers, on=AT)
            .select(*self.forward)
            .select(*self.mark_target)
        )

    def spread_all(self, messages: DataFrame) -> DataFrame:
        """Protocol 4 at the node v = low: one message per next hop X_j, sent on at once."""
        kept = self.kept
        return (
            messages.filter(self.arrived_range)
            .join(self.network.fingers, on=AT)
            .join(self.network.topics, on=S.TOPIC_ID)
            .select(*kept, AT, FDIST, FLAT, self.span, SUBS)
            .select(*kept, AT, FDIST, FLAT, "_span", self.hops)
            .select(*kept, AT, FDIST, FLAT, "_span", "_x", F.posexplode("_x").alias("_j", "_d"))
            .select(*self.spread)
            .select(*self.mark_target)
        )

    def multicast_all(self, messages: DataFrame, tree: DataFrame) -> DataFrame:
        """A copy to every tree child of the message's tree node; a unicast message at RP(t)
        enters the tree at its root, [RP(t)]."""
        in_tree = messages.filter(self.in_tree).select(*self.enter_tree)
        return in_tree.join(tree, on=[S.TOPIC_ID, KEY]).select(*self.multicast)


def initial_messages(publications: DataFrame, protocol: str, network: Network) -> DataFrame:
    """Superstep 0: each publication at its publisher (publications: pub_id, topic_id, publisher
    as a ring position); RP(t) from the network's roots when it has them, else hashed."""
    frame = publications.select(S.PUB_ID, S.TOPIC_ID, S.PUBLISHER).withColumn(AT, F.col(S.PUBLISHER))
    if protocol in BEACONVEY:
        frame = frame.withColumn(LOW, F.col(AT)).withColumn(HIGH, F.col(AT)).withColumn(KIND, F.lit(RANGE))
    else:
        if network.rendezvous is not None:
            frame = frame.join(network.rendezvous, on=S.TOPIC_ID)
            rp = F.col(RP)
        else:
            rp = rendezvous(F.col(S.TOPIC_ID), network.n)
        frame = (
            frame.withColumn(LOW, rp)
            .withColumn(HIGH, rp)
            .withColumn(KIND, F.when(F.col(AT) == rp, F.lit(TREE)).otherwise(F.lit(UNICAST)))
        )
    start = F.lit(0.0) if network.latencies else F.lit(None).cast("double")
    return frame.select(
        S.PUB_ID,
        S.TOPIC_ID,
        S.PUBLISHER,
        AT,
        LOW,
        HIGH,
        F.lit(0).alias(HOPS),
        start.alias(LATENCY),
        F.lit(None).cast("long").alias(SENDER),
        KIND,
        F.when(F.col(KIND) == TREE, F.array(F.col(AT))).otherwise(F.lit(None).cast("array<bigint>")).alias(KEY),
        F.lit(False).alias(TARGET),
    )


def superstep(messages: DataFrame, step: _Step, protocol: str, tree: DataFrame | None, partitions: int) -> DataFrame:
    """The messages one hop later, in `partitions` partitions."""
    second = step.spread_all(messages) if protocol in BEACONVEY else step.multicast_all(messages, tree)
    out = step.forward_all(messages).select(*MESSAGE_COLUMNS).unionByName(second.select(*MESSAGE_COLUMNS))
    # A union adds up its inputs' partitions: without this they would double every superstep.
    return out.select(*step.next_hop).coalesce(partitions)


def simulate(
    network: Network,
    publications: DataFrame,
    protocol: str,
    max_supersteps: int | None = None,
    on_step: OnStep | None = None,
    partitions: int | None = None,
) -> Simulation:
    """Route every publication to completion; publications: (pub_id, topic_id, publisher) with
    the publisher as a ring position.

    `on_step` (optional) hears of every hop of the tree building (stage `tree hop`, Scribe and
    iScribe) and of every superstep (stage `superstep`: the messages in flight, that is sent this
    superstep, and those sent so far; both counted anyway for the stopping test). Deliveries so
    far would cost a Spark job per superstep and are not reported.

    Every superstep's messages are kept in `partitions` partitions (default: as many as the
    publications have). The caller chooses: a library never reads session config, whose value
    may not even be a number (`spark.sql.shuffle.partitions=auto` on a Databricks cluster)."""
    if partitions is not None and partitions < 1:
        raise ValueError(f"partitions must be at least 1, got {partitions}")
    if protocol not in PROTOCOLS:
        raise ValueError(f"unknown protocol {protocol!r}; choose one of {', '.join(PROTOCOLS)}")
    limit = max_supersteps or default_max_supersteps(network.n)
    tree = None
    clock = time.monotonic()
    if protocol in ("scribe", "iscribe"):
        topics = publications.select(S.TOPIC_ID).distinct()
        build = scribe_tree if protocol == "scribe" else iscribe_tree
        tree = build(network, topics, limit, on_step).withColumnRenamed(TARGET, "tree_target")
        log.info("%s trees of the published topics built in %.1fs", protocol, time.monotonic() - clock)
    tree_seconds = time.monotonic() - clock
    messages = initial_messages(publications, protocol, network).localCheckpoint(eager=True)
    partitions = partitions or messages.rdd.getNumPartitions()
    step_columns = _Step(network, protocol)
    arrivals: list[DataFrame] = []
    seconds: list[float] = []
    total = 0
    for step in range(1, limit + 1):
        clock = time.monotonic()
        messages = superstep(messages, step_columns, protocol, tree, partitions).localCheckpoint(eager=True)
        count = messages.count()
        if count == 0:
            break
        total += count
        seconds.append(time.monotonic() - clock)
        arrivals.append(messages.select(*ARRIVAL_COLUMNS))
        log.debug("superstep %d: %d messages, %.2fs", step, count, seconds[-1])
        report(on_step, "superstep", step, figures={"in flight": count, "sent": total}, seconds=seconds[-1])
    else:
        raise RuntimeError(f"messages still moving after {limit} supersteps: routing does not terminate")
    spark = publications.sparkSession
    if arrivals:
        union = arrivals[0]
        for more in arrivals[1:]:
            union = union.unionByName(more)
    else:
        union = spark.createDataFrame([], ARRIVAL_SCHEMA)
    return Simulation(
        arrivals=union, supersteps=len(seconds), messages=total, superstep_seconds=seconds, tree_seconds=tree_seconds
    )


def unicast_hops(network: Network, pairs: DataFrame, max_supersteps: int | None = None) -> DataFrame:
    """Plain greedy unicast (Protocol 4's `send`) for (pair, source, target) ring positions:
    (pair, hops), one superstep per hop for all pairs at once."""
    limit = max_supersteps or default_max_supersteps(network.n)
    step = _Step(network, "po")
    moving = pairs.select("pair", F.col("source").alias(AT), F.col("target").alias(LOW), F.lit(0).alias(HOPS))
    done = [moving.filter(F.col(AT) == F.col(LOW)).select("pair", HOPS)]
    moving = moving.filter(F.col(AT) != F.col(LOW)).localCheckpoint(eager=True)
    for _ in range(limit):
        if moving.isEmpty():
            break
        stepped = (
            moving.join(network.fingers, on=AT)
            .select("pair", step.after, LOW, (F.col(HOPS) + 1).alias(HOPS))
            .localCheckpoint(eager=True)
        )
        done.append(stepped.filter(F.col(AT) == F.col(LOW)).select("pair", HOPS))
        moving = stepped.filter(F.col(AT) != F.col(LOW))
    else:
        raise RuntimeError(f"unicast messages still moving after {limit} supersteps")
    result = done[0]
    for more in done[1:]:
        result = result.unionByName(more)
    return result
