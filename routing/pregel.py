"""Scribe as two GraphFrames Pregel runs over the overlay, next to the DataFrame supersteps of
`routing.simulate` (same arrivals, message by message; tests/test_pregel_routing.py).

The graph's vertices are ring positions with their finger distances (`fdist`), its edges the
fingers (src -> src + finger). Greedy routing (`send`) needs no routing table beyond the
sender's own fingers, so both runs read only the sender's state:

1. the topic trees: every subscriber of a published topic t sends "join t" along its route to
   RP(t); a node joins t's tree the first time it hears of t (RP(t) is the root and never
   joins) and passes the join on. A node's parent in t's tree is its next hop towards RP(t), as
   in `routing.trees.scribe_tree`;
2. the publications: a vertex holds the messages that reached it last superstep; a unicast
   message (publisher -> RP(t)) goes along the finger `send` picks, and a message at RP(t) or
   in the tree goes along the tree edges (parent -> child, labelled with the topic) to every
   child. Every arrival is appended to the vertex's log, from which the arrivals follow. Every
   edge carries its link's latency, which a message adds up.

The Pregel form places RP(t) by hash only: a network rooted at given nodes (`Network.rendezvous`)
routes with the DataFrame supersteps.

`simulate_on` picks a backend for a protocol: Pregel covers Scribe only; "auto" means the
DataFrame supersteps: the Pregel took 2.5x as long on tw-10k with 10,000 publications (64 s /
25 s) and 1.8x on fb-1k (benchmarks/backends.py).
"""

from __future__ import annotations

import logging
import time

from pyspark.sql import Column, DataFrame
from pyspark.sql import functions as F

from overlay import schema as S
from overlay.graph import DST, ID, SRC, Backend, Lineage
from overlay.graph_ops import active_pregel, pick_backend
from overlay.progress import OnStep, report
from routing.network import AT, FDIST, FLAT, HOPS, KIND, LATENCY, LOW, SENDER, TARGET, Network
from routing.protocols import greedy_step, hop_latency
from routing.simulate import TREE, UNICAST, Simulation, default_max_supersteps, initial_messages, simulate
from routing.trees import rendezvous

log = logging.getLogger(__name__)

PREGEL_PROTOCOLS = ("scribe",)
ROUTING_DEFAULT = "dataframe"
FINGER, TREE_TOPIC = "finger", "tree_topic"
_JOINING, _TREE, _HELD, _LOG = "_joining", "_tree", "_held", "_log"
_MESSAGE = (S.PUB_ID, S.TOPIC_ID, S.PUBLISHER, LOW, HOPS, LATENCY, SENDER, KIND, TARGET)
_TOPIC_ARRAY = "array<bigint>"
_MESSAGES = (
    f"array<struct<{S.PUB_ID}:bigint,{S.TOPIC_ID}:bigint,{S.PUBLISHER}:bigint,{LOW}:bigint,{HOPS}:int,"
    f"{LATENCY}:double,{SENDER}:bigint,{KIND}:int,{TARGET}:boolean>>"
)


def simulate_on(
    network: Network,
    publications: DataFrame,
    protocol: str,
    backend: Backend = "auto",
    lineage: Lineage = Lineage(),
    max_supersteps: int | None = None,
    partitions: int | None = None,
    on_step: OnStep | None = None,
) -> Simulation:
    """`routing.simulate.simulate` or, for a protocol with a Pregel form, `simulate_pregel`
    (`on_step`: their progress callback)."""
    chosen = pick_backend(publications.sparkSession, backend, ROUTING_DEFAULT)
    if chosen == "graphframes" and protocol not in PREGEL_PROTOCOLS:
        if backend == "graphframes":
            raise ValueError(f"no GraphFrames form of {protocol!r}; it has one for {', '.join(PREGEL_PROTOCOLS)}")
        chosen = "dataframe"
    if chosen == "graphframes":
        return simulate_pregel(network, publications, protocol, lineage, max_supersteps, on_step)
    return simulate(network, publications, protocol, max_supersteps, on_step=on_step, partitions=partitions)


def finger_edges(network: Network) -> DataFrame:
    """(src, dst, finger, latency): one edge per finger, src -> src + finger on the ring."""
    return network.fingers.select(
        F.col(AT).alias(SRC), F.inline(F.arrays_zip(F.col(FDIST).alias(FINGER), F.col(FLAT).alias(LATENCY)))
    ).select(SRC, F.pmod(F.col(SRC) + F.col(FINGER), F.lit(network.n)).alias(DST), FINGER, LATENCY)


def _towards(position: Column, n: int) -> Column:
    """The finger distance the sender (a Pregel triplet's src) forwards along towards `position`."""
    from graphframes.lib import Pregel

    return greedy_step(Pregel.src(FDIST), F.pmod(position - Pregel.src(ID), F.lit(n)))


def _unless_empty(build) -> Column:
    """`build()` as a Pregel message, null (no message) when empty. Built twice: one
    higher-order-function column used twice in a projection shares its lambda variable."""
    return F.when(F.size(build()) > 0, build())


def scribe_tree_pregel(network: Network, topics: DataFrame, lineage: Lineage, max_steps: int) -> DataFrame:
    """Scribe's tree edges (topic_id, src = parent, dst = child, latency) of the given topics, as
    ring positions."""
    from graphframes import GraphFrame
    from graphframes.lib import Pregel

    n = network.n
    joins = (
        network.subscribed.join(topics, on=S.TOPIC_ID)
        .filter(F.col(AT) != rendezvous(F.col(S.TOPIC_ID), n))
        .groupBy(AT)
        .agg(F.collect_set(S.TOPIC_ID).alias("_joins"))
    )
    vertices = network.fingers.join(joins, on=AT, how="left").select(
        F.col(AT).alias(ID), FDIST, F.coalesce(F.col("_joins"), F.array().cast(_TOPIC_ARRAY)).alias("_joins")
    )

    def news() -> Column:
        heard = F.coalesce(Pregel.msg(), F.array().cast(_TOPIC_ARRAY))
        return F.array_except(F.filter(heard, lambda t: rendezvous(t, n) != F.col(ID)), F.col(_TREE))

    def passed_on() -> Column:
        return F.filter(Pregel.src(_JOINING), lambda t: _towards(rendezvous(t, n), n) == Pregel.edge(FINGER))

    result = (
        active_pregel(GraphFrame(vertices, finger_edges(network)), lineage, max_steps + 1)
        .withVertexColumn(_TREE, F.col("_joins"), F.concat(F.col(_TREE), news()))
        .withVertexColumn(_JOINING, F.col("_joins"), news())
        .setInitialActiveVertexExpression(F.size("_joins") > 0)
        .setUpdateActiveVertexExpression(F.size(news()) > 0)
        .required_src_columns(FDIST, _JOINING)
        .sendMsgToDst(_unless_empty(passed_on))
        .aggMsgs(F.array_distinct(F.flatten(F.collect_list(Pregel.msg()))))
        .run()
    )
    if not result.filter(F.size(_JOINING) > 0).isEmpty():
        result.unpersist()
        raise RuntimeError(f"tree routes still moving after {max_steps} hops: the fingers do not route")
    members = result.join(network.fingers.select(F.col(AT).alias(ID), FLAT), on=ID).select(
        ID, FDIST, FLAT, F.explode(_TREE).alias(S.TOPIC_ID)
    )
    distance = F.pmod(rendezvous(F.col(S.TOPIC_ID), n) - F.col(ID), F.lit(n))
    towards_rp = greedy_step(F.col(FDIST), distance)
    edges = members.select(
        S.TOPIC_ID,
        F.pmod(F.col(ID) + towards_rp, F.lit(n)).alias(SRC),
        F.col(ID).alias(DST),
        hop_latency(F.col(FDIST), F.col(FLAT), distance).alias(LATENCY),  # the child's link to its parent
    ).localCheckpoint(eager=True)
    result.unpersist()
    return edges


def simulate_pregel(
    network: Network,
    publications: DataFrame,
    protocol: str = "scribe",
    lineage: Lineage = Lineage(),
    max_supersteps: int | None = None,
    on_step: OnStep | None = None,
) -> Simulation:
    """Route every publication with Scribe (publications: pub_id, topic_id, publisher as a ring
    position); the same `Simulation` as `routing.simulate.simulate` (no per-superstep times:
    Pregel runs its supersteps in one call, so `on_step` hears of its two runs, stage `pregel run`:
    the trees, then the publications with their messages and supersteps)."""
    from graphframes import GraphFrame
    from graphframes.lib import Pregel

    if protocol not in PREGEL_PROTOCOLS:
        raise ValueError(f"no Pregel form of {protocol!r}; there is one for {', '.join(PREGEL_PROTOCOLS)}")
    if network.rendezvous is not None:
        raise ValueError("the Pregel form places RP(t) by hash: route trees rooted at given nodes with the supersteps")
    n = network.n
    limit = max_supersteps or default_max_supersteps(n)
    clock = time.monotonic()
    tree = scribe_tree_pregel(network, publications.select(S.TOPIC_ID).distinct(), lineage, limit)
    tree_seconds = time.monotonic() - clock
    log.info("scribe trees of the published topics built with Pregel in %.1fs", tree_seconds)
    report(on_step, "pregel run", 1, total=2, figures={"built": "scribe trees"}, seconds=tree_seconds)

    start = (
        initial_messages(publications, protocol, network)
        .groupBy(AT)
        .agg(F.collect_list(F.struct(*_MESSAGE)).alias("_start"))
    )
    vertices = network.fingers.join(start, on=AT, how="left").select(
        F.col(AT).alias(ID), FDIST, F.coalesce(F.col("_start"), F.array().cast(_MESSAGES)).alias("_start")
    )
    edges = (
        finger_edges(network)
        .withColumn(TREE_TOPIC, F.lit(None).cast("long"))
        .unionByName(
            tree.select(SRC, DST, F.lit(None).cast("long").alias(FINGER), LATENCY, F.col(S.TOPIC_ID).alias(TREE_TOPIC))
        )
    )

    def moved(m: Column, kind: Column, target: Column) -> Column:
        return F.struct(
            m[S.PUB_ID].alias(S.PUB_ID),
            m[S.TOPIC_ID].alias(S.TOPIC_ID),
            m[S.PUBLISHER].alias(S.PUBLISHER),
            m[LOW].alias(LOW),
            (m[HOPS] + 1).alias(HOPS),
            (m[LATENCY] + Pregel.edge(LATENCY)).alias(LATENCY),
            Pregel.src(ID).alias(SENDER),
            kind.alias(KIND),
            target.alias(TARGET),
        )

    def sent() -> Column:
        """Along a finger: the unicast messages `send` forwards on it; along a tree edge: the
        messages in that topic's tree (or at its root) to the child."""
        held, here, to = Pregel.src(_HELD), Pregel.src(ID), Pregel.edge(DST)
        forwarded = F.transform(
            F.filter(
                held, lambda m: (m[KIND] == UNICAST) & (m[LOW] != here) & (_towards(m[LOW], n) == Pregel.edge(FINGER))
            ),
            lambda m: moved(m, F.lit(UNICAST), to == m[LOW]),
        )
        multicast = F.transform(
            F.filter(
                held, lambda m: ((m[KIND] == TREE) | (m[LOW] == here)) & (m[S.TOPIC_ID] == Pregel.edge(TREE_TOPIC))
            ),
            lambda m: moved(m, F.lit(TREE), F.lit(True)),
        )
        return F.when(Pregel.edge(TREE_TOPIC).isNull(), forwarded).otherwise(multicast)

    def arrived() -> Column:
        return F.coalesce(Pregel.msg(), F.array().cast(_MESSAGES))

    result = (
        active_pregel(GraphFrame(vertices, edges), lineage, limit + 1)
        .withVertexColumn(_HELD, F.col("_start"), arrived())
        .withVertexColumn(_LOG, F.array().cast(_MESSAGES), F.concat(F.col(_LOG), arrived()))
        .setInitialActiveVertexExpression(F.size("_start") > 0)
        .setUpdateActiveVertexExpression(F.size(arrived()) > 0)
        .required_src_columns(FDIST, _HELD)
        .sendMsgToDst(_unless_empty(sent))
        .aggMsgs(F.flatten(F.collect_list(Pregel.msg())))
        .run()
    )
    if not result.filter(F.size(_HELD) > 0).isEmpty():
        result.unpersist()
        raise RuntimeError(f"messages still moving after {limit} supersteps: routing does not terminate")
    arrivals = (
        result.select(F.col(ID).alias(AT), F.explode(_LOG).alias("_m"))
        .select(
            F.col("_m")[S.PUB_ID].alias(S.PUB_ID),
            F.col("_m")[S.TOPIC_ID].alias(S.TOPIC_ID),
            F.col("_m")[S.PUBLISHER].alias(S.PUBLISHER),
            AT,
            F.col("_m")[HOPS].alias(HOPS),
            F.col("_m")[LATENCY].alias(LATENCY),
            F.col("_m")[SENDER].alias(SENDER),
            F.col("_m")[TARGET].alias(TARGET),
        )
        .localCheckpoint(eager=True)
    )
    result.unpersist()
    totals = arrivals.agg(F.count(F.lit(1)).alias("messages"), F.max(HOPS).alias("supersteps")).first()
    report(
        on_step,
        "pregel run",
        2,
        total=2,
        seconds=time.monotonic() - clock - tree_seconds,
        figures={"supersteps": int(totals["supersteps"] or 0), "sent": int(totals["messages"])},
    )
    return Simulation(
        arrivals=arrivals,
        supersteps=int(totals["supersteps"] or 0),
        messages=int(totals["messages"]),
        superstep_seconds=[],
        tree_seconds=tree_seconds,
    )
