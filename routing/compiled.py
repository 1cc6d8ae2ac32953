"""The routing supersteps compiled: every publication carried to the end inside one Spark task.

`routing.simulate` moves all publications one hop per superstep, a Spark job or two a superstep:
a Po run at 10K nodes takes hundreds of them, and on small data each costs a second or more of
fixed work. Publications never interact, so this engine partitions the publications instead of
the supersteps: each task routes its publications message by message, superstep by superstep,
in compiled code (`routing.kernels`) over the routing tables, and emits exactly the arrivals the
DataFrame supersteps emit (the hop count of a message is its superstep). The whole run is one
Spark job, and a second small one for its counts.

The routing tables (fingers by position, subscribers by topic) go to the executors as one
broadcast: the deliberate, bounded driver step, O(|V| log |V| + |subscriptions|), capped as the
greedy engine's driver copy of the subscriptions is (`max_subscriptions`).
"""

from __future__ import annotations

import time
from collections.abc import Iterator

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
from pyspark.sql import DataFrame
from pyspark.sql import functions as F

from overlay import schema as S
from overlay.design.classes import MAX_DRIVER_SUBSCRIPTIONS
from overlay.errors import InputError
from overlay.progress import OnStep, report
from routing import kernels
from routing.in_memory import route_batch
from routing.network import AT, FDIST, FLAT, HOPS, RP, Network
from routing.protocols import PROTOCOLS
from routing.simulate import ARRIVAL_SCHEMA, Simulation, default_max_supersteps
from routing.trees import rendezvous_of


def _finger_table(network: Network) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Fingers by ring position, CSR: offsets (n + 1), sorted distances, their latencies (NaN
    without latencies)."""
    table = network.fingers.select(AT, FDIST, FLAT).toArrow().sort_by(AT)
    positions = table.column(AT).to_numpy()
    dist = table.column(FDIST).combine_chunks()
    lat = table.column(FLAT).combine_chunks()
    lengths = np.diff(np.asarray(dist.offsets)) if len(dist) else np.zeros(0, np.int64)
    counts = np.zeros(network.n, np.int64)
    counts[positions] = lengths
    offsets = np.concatenate([[0], np.cumsum(counts)]).astype(np.int64)
    values = np.asarray(dist.flatten(), dtype=np.int64) if len(dist) else np.zeros(0, np.int64)
    latencies = (
        pc.fill_null(lat.flatten().cast(pa.float64()), np.nan).to_numpy(zero_copy_only=False).astype(np.float64)
        if len(lat)
        else np.zeros(0, np.float64)
    )
    return offsets, values, latencies


def _topic_table(network: Network, max_subscriptions: int) -> tuple[np.ndarray, ...]:
    """Subscribers by topic, CSR over the sorted topic ids: ids, offsets, sorted positions, and
    each topic's tree root RP(t) (hashed, or the network's; -1 where the network has none)."""
    table = network.subscribed.select(S.TOPIC_ID, AT).limit(max_subscriptions + 1).toArrow()
    if table.num_rows > max_subscriptions:
        raise InputError(
            f"compiled routing keeps the routing tables on the driver and this network has more than "
            f"{max_subscriptions:,} subscriptions; raise max_subscriptions with more driver memory, or route "
            "with the DataFrame supersteps (route --engine supersteps)"
        )
    topic = table.column(S.TOPIC_ID).to_numpy().astype(np.int64)
    at = table.column(AT).to_numpy().astype(np.int64)
    order = np.lexsort((at, topic))
    topic, at = topic[order], at[order]
    ids, starts = np.unique(topic, return_index=True)
    offsets = np.concatenate([starts, [len(topic)]]).astype(np.int64)
    if network.rendezvous is None:  # one per topic, on the driver already
        roots = np.array([rendezvous_of(int(t), network.n) for t in ids], dtype=np.int64)
    else:
        given = network.rendezvous.select(S.TOPIC_ID, RP).toArrow()
        root_of = dict(zip(given.column(S.TOPIC_ID).to_pylist(), given.column(RP).to_pylist()))  # one row per topic
        roots = np.array([root_of.get(int(t), -1) for t in ids], dtype=np.int64)
    return ids, offsets, np.ascontiguousarray(at), roots


def simulate_compiled(
    network: Network,
    publications: DataFrame,
    protocol: str,
    max_supersteps: int | None = None,
    on_step: OnStep | None = None,
    partitions: int | None = None,
    max_subscriptions: int = MAX_DRIVER_SUBSCRIPTIONS,
) -> Simulation:
    """`routing.simulate.simulate`'s result (same arrivals) in one Spark job; publications:
    (pub_id, topic_id, publisher) with the publisher as a ring position, routed in `partitions`
    tasks (default: as many as the publications have). `on_step` hears of the run once (stage
    `routing`: supersteps and messages)."""
    if partitions is not None and partitions < 1:
        raise ValueError(f"partitions must be at least 1, got {partitions}")
    if protocol not in PROTOCOLS:
        raise ValueError(f"unknown protocol {protocol!r}; choose one of {', '.join(PROTOCOLS)}")
    if network.n >= 1 << 31:
        raise ValueError(f"compiled routing takes rings of fewer than 2^31 nodes, got {network.n}")
    clock = time.monotonic()
    spark = publications.sparkSession
    limit = max_supersteps or default_max_supersteps(network.n)
    f_offsets, f_dist, f_lat = _finger_table(network)
    ids, t_offsets, t_subs, t_root = _topic_table(network, max_subscriptions)
    code, n, has_latency = kernels.PROTOCOL_CODES[protocol], network.n, network.latencies
    tables = spark.sparkContext.broadcast((ids, f_offsets, f_dist, f_lat, t_offsets, t_subs, t_root))

    def route(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        held = tables.value
        for batch in batches:
            yield route_batch(
                code,
                n,
                limit,
                has_latency,
                held,
                *(
                    batch.column(c).to_numpy(zero_copy_only=False).astype(np.int64)
                    for c in (S.PUB_ID, S.TOPIC_ID, S.PUBLISHER)
                ),  # fmt: skip
            )

    source = publications.select(S.PUB_ID, S.TOPIC_ID, S.PUBLISHER)
    if partitions is not None:
        source = source.repartition(partitions)
    try:
        arrivals = network.lineage.cut(source.mapInArrow(route, ARRIVAL_SCHEMA))
    finally:
        tables.unpersist()
    counts = arrivals.agg(F.count("*").alias("messages"), F.max(HOPS).alias("supersteps")).first()
    messages, supersteps = int(counts["messages"]), int(counts["supersteps"] or 0)
    seconds = time.monotonic() - clock
    report(on_step, "routing", 1, total=1, figures={"supersteps": supersteps, "messages": messages}, seconds=seconds)
    return Simulation(arrivals=arrivals, supersteps=supersteps, messages=messages, superstep_seconds=[])
