"""Scribe and iScribe multicast trees (BeaConvey section 5.1), one per published topic.

The rendezvous node RP(t) sits where the topic hashes onto the ring: Knuth's multiplicative hash
of the dense topic id scaled to the ring,

    RP(t) = floor(((t * 2654435761) mod 2^32) * |V| / 2^32),

so every tool (and the tests' oracle) places it the same way, unless the network roots each
topic at a given node (`Network.rendezvous`: Rappel's comparison roots a feed at its publisher).

* Scribe routes from every subscriber to RP(t) with greedy unicast routing; the union of those
  routes is a tree (each node's next hop towards RP(t) is unique), and RP(t) multicasts down it.
* iScribe routes from RP(t) to every subscriber. Routes to different subscribers can part and
  meet again, so the tree is the trie of the routes: a tree node is a route prefix (the key, an
  array of positions from RP(t)), and routes share a message exactly while their prefixes agree.
  A subscriber delivers at the node that ends its own route.

Tree edges: (topic_id, key, child_key, child_at, child_latency, target) with keys arrays of
positions; `target` marks a child that delivers there (Scribe: every node, each appears once);
`child_latency` is the link's latency (null without latencies).
"""

from __future__ import annotations

import time

from pyspark.sql import Column, DataFrame
from pyspark.sql import functions as F

from overlay import schema as S
from overlay.progress import OnStep, report
from routing.network import AT, FDIST, FLAT, KEY, LOW, RP, SUBS, TARGET, Network
from routing.protocols import along, send_finger

KNUTH = 2654435761
CHILD_KEY, CHILD_AT, CHILD_LATENCY = "child_key", "child_at", "child_latency"


def rendezvous(topic: Column, n: int) -> Column:
    """RP(t) as a Spark column (see the module docstring)."""
    hashed = F.pmod(topic * F.lit(KNUTH), F.lit(1 << 32))
    return F.shiftright(hashed * F.lit(n), 32)


def rendezvous_of(topic: int, n: int) -> int:
    return ((topic * KNUTH) % (1 << 32)) * n >> 32


def _route_all(network: Network, start: DataFrame, max_steps: int, on_step: OnStep | None) -> list[DataFrame]:
    """Walk every route (topic_id, _s, at, low = destination, key) to its destination, one hop a
    step; the list of each step's moves (topic_id, _s, at, low, _parent, key, _hop) with `_hop`
    the link's latency. `on_step` hears of every hop (stage `tree hop`, with its time: counting
    the routes would cost a job)."""
    n = network.n
    moves = []
    active = start.filter(F.col(AT) != F.col(LOW))
    for step in range(1, max_steps + 1):
        clock = time.monotonic()
        distance = F.pmod(F.col(LOW) - F.col(AT), F.lit(n))
        stepped = network.lineage.cut(
            active.join(network.fingers, on=AT)
            .withColumn("_f", send_finger(F.col(FDIST), distance))
            .withColumn("_next", F.pmod(F.col(AT) + along(F.col(FDIST), F.col("_f")), F.lit(n)))
            .withColumn("_hop", along(F.col(FLAT), F.col("_f")))
            .select(
                S.TOPIC_ID,
                "_s",
                F.col("_next").alias(AT),
                LOW,
                F.col(KEY).alias("_parent"),
                F.concat(F.col(KEY), F.array(F.col("_next"))).alias(KEY),
                "_hop",
            )
        )
        moves.append(stepped)
        report(on_step, "tree hop", step, seconds=time.monotonic() - clock)
        active = stepped.filter(F.col(AT) != F.col(LOW)).select(S.TOPIC_ID, "_s", AT, LOW, KEY)
        if active.isEmpty():
            return moves
    raise RuntimeError(f"tree routes still moving after {max_steps} hops: the fingers do not route")


def _routes(network: Network, topics: DataFrame) -> DataFrame:
    """(topic_id, _s, _rp) for every subscriber of the given topics."""
    members = network.topics.join(topics, on=S.TOPIC_ID)
    if network.rendezvous is not None:
        return members.join(network.rendezvous, on=S.TOPIC_ID).select(
            S.TOPIC_ID, F.explode(SUBS).alias("_s"), F.col(RP).alias("_rp")
        )
    return members.select(
        S.TOPIC_ID, F.explode(SUBS).alias("_s"), rendezvous(F.col(S.TOPIC_ID), network.n).alias("_rp")
    )


def _moves(
    network: Network,
    topics: DataFrame,
    to_rendezvous: bool,
    max_steps: int,
    on_step: OnStep | None,
) -> DataFrame | None:
    """Every hop of every route between a subscriber and RP(t), towards RP(t) (Scribe) or away
    from it (iScribe): (topic_id, _s, at, low, _parent, key, _hop); None when no route has a hop."""
    routes = _routes(network, topics)
    source, target = ("_s", "_rp") if to_rendezvous else ("_rp", "_s")
    start = routes.select(
        S.TOPIC_ID, "_s", F.col(source).alias(AT), F.col(target).alias(LOW), F.array(F.col(source)).alias(KEY)
    )
    moves = _route_all(network, start, max_steps, on_step)
    if not moves:
        return None
    steps = moves[0]
    for more in moves[1:]:
        steps = steps.unionByName(more)
    return steps


def scribe_tree(network: Network, topics: DataFrame, max_steps: int, on_step: OnStep | None = None) -> DataFrame:
    """Scribe's tree edges: the reversed routes from the subscribers to RP(t)."""
    steps = _moves(network, topics, True, max_steps, on_step)
    if steps is None:
        return _empty_tree(network)
    # A move parent -> next on the way to RP(t) is the tree edge next -> parent.
    return network.lineage.cut(
        steps.select(
            S.TOPIC_ID,
            F.array(F.col(AT)).alias(KEY),
            F.array(F.try_element_at(F.col("_parent"), F.lit(-1))).alias(CHILD_KEY),
            F.try_element_at(F.col("_parent"), F.lit(-1)).alias(CHILD_AT),
            F.col("_hop").alias(CHILD_LATENCY),  # links are symmetric
            F.lit(True).alias(TARGET),
        ).distinct()
    )


def iscribe_tree(network: Network, topics: DataFrame, max_steps: int, on_step: OnStep | None = None) -> DataFrame:
    """iScribe's tree edges: the trie of the routes from RP(t) to the subscribers."""
    steps = _moves(network, topics, False, max_steps, on_step)
    if steps is None:
        return _empty_tree(network)
    return network.lineage.cut(
        steps.groupBy(S.TOPIC_ID, F.col("_parent").alias(KEY), F.col(KEY).alias(CHILD_KEY)).agg(
            F.first(AT).alias(CHILD_AT),
            F.first("_hop").alias(CHILD_LATENCY),
            F.max(F.col(AT) == F.col(LOW)).alias(TARGET),
        )
    )


def _empty_tree(network: Network) -> DataFrame:
    spark = network.topics.sparkSession
    return spark.createDataFrame(
        [],
        f"{S.TOPIC_ID} long, {KEY} array<bigint>, {CHILD_KEY} array<bigint>, {CHILD_AT} bigint, "
        f"{CHILD_LATENCY} double, {TARGET} boolean",
    )
