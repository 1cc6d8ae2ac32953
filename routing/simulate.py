"""Publications routed as Pregel-style supersteps: every message moves one hop per superstep.

This is the Spark form of routing the design card asks for (message passing, one superstep a
hop), and the one kept: the GraphFrames Pregel form covered Scribe only, with hashed roots, and
took 1.8-2.5x as long (benchmarks/backends.py, before it was removed). The compiled engine
(`routing.compiled`) gives the same arrivals in one Spark job and is the route job's default.

A superstep joins the live messages with the routing tables of the nodes holding them
(`routing.network`) and emits the next messages, all publications at once; no per-message
Python runs on the driver. A node's part of a hop (which finger `send` takes, Protocol 5's next
hops) is `routing.rules`, run on the executors through Arrow UDFs, the functions the compiled
engine runs too. Message kinds:

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
from routing.protocols import BEACONVEY, HOP_FINGER, HOP_HIGH, HOP_LOW, PROTOCOLS, along, hop_messages, send_finger
from routing.trees import CHILD_AT, CHILD_KEY, CHILD_LATENCY, iscribe_tree, rendezvous, scribe_tree

log = logging.getLogger(__name__)

RANGE, UNICAST, TREE = 0, 1, 2
_FINGER = "_finger"
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
    round trip to the JVM. The hop rules themselves are `routing.rules`, evaluated by Arrow UDFs
    (`routing.protocols`): the compiled engine runs the same functions."""

    def __init__(self, network: Network, protocol: str) -> None:
        n = network.n
        self.network = network
        distance = F.pmod(F.col(LOW) - F.col(AT), F.lit(n))
        # The finger index is a column of its own, computed once and read by the next projection.
        self.towards_low = send_finger(F.col(FDIST), distance).alias(_FINGER)
        self.after = F.pmod(F.col(AT) + along(F.col(FDIST), F.col(_FINGER)), F.lit(n)).alias(AT)
        sent_here = F.col(AT).alias(SENDER)
        self.mark_target = [*[c for c in MESSAGE_COLUMNS if c != TARGET], (F.col(AT) == F.col(LOW)).alias(TARGET)]
        self.kept = (S.PUB_ID, S.TOPIC_ID, S.PUBLISHER, HOPS, LATENCY, KIND, KEY)
        # Range protocols read the topic's subscribers at low; a unicast message never needs them.
        self.ranges = protocol in BEACONVEY
        subs = F.col(SUBS) if self.ranges else F.lit(None).cast("array<bigint>")
        self.hop_out = hop_messages(protocol, n, F.col(AT), F.col(LOW), F.col(HIGH), F.col(FDIST), subs).alias("_x")
        finger = F.col("_m")[HOP_FINGER]
        self.sent = [
            *[c for c in self.kept if c != LATENCY],
            (F.col(LATENCY) + along(F.col(FLAT), finger)).alias(LATENCY),
            sent_here,
            F.pmod(F.col(AT) + along(F.col(FDIST), finger), F.lit(n)).alias(AT),
            F.col("_m")[HOP_LOW].alias(LOW),
            F.col("_m")[HOP_HIGH].alias(HIGH),
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
        self.hopping = (F.col(KIND) == RANGE) | ((F.col(KIND) == UNICAST) & self.moving)
        self.in_tree = (F.col(KIND) == TREE) | ((F.col(KIND) == UNICAST) & ~self.moving)

    def hop_all(self, messages: DataFrame) -> DataFrame:
        """Protocol 4 for every RANGE and moving UNICAST message: `send` one hop towards low, or
        at low, one message per next hop X_j, sent on at once (`rules.hop_rows`, one Arrow UDF
        call a batch)."""
        kept = self.kept
        here = messages.filter(self.hopping).join(self.network.fingers, on=AT)
        if self.ranges:
            here = here.join(self.network.topics, on=S.TOPIC_ID, how="left")
        return (
            here.select(*kept, AT, FDIST, FLAT, self.hop_out)
            .select(*kept, AT, FDIST, FLAT, F.explode("_x").alias("_m"))
            .select(*self.sent)
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
    out = step.hop_all(messages).select(*MESSAGE_COLUMNS)
    if protocol not in BEACONVEY:
        # A union adds up its inputs' partitions: without the coalesce they would double every superstep.
        out = out.unionByName(step.multicast_all(messages, tree).select(*MESSAGE_COLUMNS))
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
    messages = network.lineage.cut(initial_messages(publications, protocol, network))
    partitions = partitions or messages.rdd.getNumPartitions()
    step_columns = _Step(network, protocol)
    arrivals: list[DataFrame] = []
    seconds: list[float] = []
    total = 0
    for step in range(1, limit + 1):
        clock = time.monotonic()
        messages = network.lineage.cut(superstep(messages, step_columns, protocol, tree, partitions))
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
    moving = network.lineage.cut(moving.filter(F.col(AT) != F.col(LOW)))
    for _ in range(limit):
        if moving.isEmpty():
            break
        stepped = network.lineage.cut(
            moving.join(network.fingers, on=AT)
            .select("pair", AT, LOW, HOPS, FDIST, step.towards_low)
            .select("pair", step.after, LOW, (F.col(HOPS) + 1).alias(HOPS))
        )
        done.append(stepped.filter(F.col(AT) == F.col(LOW)).select("pair", HOPS))
        moving = stepped.filter(F.col(AT) != F.col(LOW))
    else:
        raise RuntimeError(f"unicast messages still moving after {limit} supersteps")
    result = done[0]
    for more in done[1:]:
        result = result.unionByName(more)
    return result
