"""Routing in memory: the routing tables, the publications and their arrivals held in this
process, routed by the compiled kernel (`routing.kernels`) and summarised with numpy; Spark only
reads the inputs and writes the results.

The memory regime of `route` (engine `memory`, the default). The Spark regime (`routing.compiled`,
each task routing its share of the publications; `routing.simulate`, one DataFrame superstep a
hop) builds the same tables as DataFrames and derives the same outcome with joins
(`routing.outcome`): `tests/test_routing.py` holds both to the oracle and to each other, row for
row. What stays on the driver here grows with the instance (the routing tables, as the compiled
engine's broadcast, capped by `max_subscriptions`) and with the workload (its arrivals: about 60
bytes each, a few per delivery).

Column contract of the inputs (Arrow tables): ring (node_id, position), fingers (node_id,
finger), subscriptions (node_id, topic_id), coordinates (node_id, x_ms, y_ms), roots (topic_id,
node_id), publications (pub_id, topic_id, publisher) with the publisher a node id.
"""

from __future__ import annotations

import time
from dataclasses import dataclass

import numba as nb
import numpy as np
import pyarrow as pa

from overlay import schema as S
from overlay.design.classes import MAX_DRIVER_SUBSCRIPTIONS
from overlay.errors import InputError
from overlay.progress import OnStep, report
from routing import kernels
from routing.network import AT, HOPS, LATENCY, SENDER, TARGET
from routing.outcome import Outcome, counter_example_text
from routing.protocols import PROTOCOLS
from routing.simulate import ARRIVAL_COLUMNS, default_max_supersteps
from routing.trees import rendezvous_of


@dataclass(frozen=True)
class Tables:
    """A small-world overlay's routing tables in ring positions, as the kernel takes them."""

    n: int
    node_at: np.ndarray  # node id by ring position (-1: no node there)
    position_of: np.ndarray  # ring position by node id (-1: not on the ring)
    f_offsets: np.ndarray  # fingers by position, CSR (n + 1)
    f_dist: np.ndarray  # sorted clockwise distances
    f_lat: np.ndarray  # their link latencies (NaN without coordinates)
    topic_ids: np.ndarray  # sorted topic ids with a subscriber on the ring
    t_offsets: np.ndarray  # subscribers by topic index, CSR
    t_subs: np.ndarray  # sorted positions
    t_root: np.ndarray  # each topic's tree root RP(t) (-1: none given)
    xy: np.ndarray | None  # (n, 2) coordinates by position (ms); None: links without latency

    @property
    def latencies(self) -> bool:
        return self.xy is not None


def _column(table: pa.Table, name: str) -> np.ndarray:
    return np.asarray(table.column(name).to_numpy(), dtype=np.int64)


def routing_tables(
    ring: pa.Table,
    fingers: pa.Table,
    subscriptions: pa.Table,
    n: int,
    coordinates: pa.Table | None = None,
    roots: pa.Table | None = None,
    max_subscriptions: int = MAX_DRIVER_SUBSCRIPTIONS,
) -> Tables:
    """`routing.network.build_network`'s tables from rows in memory: a finger reached in two
    phases counts once, a link or subscription of a node off the ring is dropped, and a topic's
    root is its given node's position or, without `roots`, the hashed RP(t)."""
    if subscriptions.num_rows > max_subscriptions:
        raise InputError(
            f"routing in memory holds the routing tables in this process and this instance has more than "
            f"{max_subscriptions:,} subscriptions; raise max_subscriptions with more driver memory, or route "
            "in the Spark regime (route --engine compiled, or supersteps)"
        )
    nodes, positions = _column(ring, S.NODE_ID), _column(ring, S.POSITION)
    ids = [nodes, _column(subscriptions, S.NODE_ID), _column(fingers, S.NODE_ID), _column(fingers, S.FINGER)]
    if coordinates is not None:
        ids.append(_column(coordinates, S.NODE_ID))
    position_of = np.full(max(int(max(a.max(initial=-1) for a in ids)) + 1, 1), -1, np.int64)
    position_of[nodes] = positions
    node_at = np.full(n, -1, np.int64)
    node_at[positions] = nodes
    xy = None
    if coordinates is not None:  # by position; a node off the ring has none
        xy = np.full((n, 2), np.nan)
        at = position_of[_column(coordinates, S.NODE_ID)]
        xy[at[at >= 0], 0] = coordinates.column(S.X_MS).to_numpy()[at >= 0]
        xy[at[at >= 0], 1] = coordinates.column(S.Y_MS).to_numpy()[at >= 0]
    f_offsets, f_dist, f_lat = _fingers(position_of, _column(fingers, S.NODE_ID), _column(fingers, S.FINGER), n, xy)
    topic_ids, t_offsets, t_subs = _subscribers(
        position_of, _column(subscriptions, S.NODE_ID), _column(subscriptions, S.TOPIC_ID)
    )
    if roots is None:
        t_root = np.array([rendezvous_of(int(t), n) for t in topic_ids], dtype=np.int64)
    else:
        t_root = np.full(len(topic_ids), -1, np.int64)
        given, at = _column(roots, S.TOPIC_ID), position_of[_column(roots, S.NODE_ID)]
        index = np.searchsorted(topic_ids, given)
        known = (index < len(topic_ids)) & (topic_ids[np.minimum(index, len(topic_ids) - 1)] == given) & (at >= 0)
        t_root[index[known]] = at[known]
    return Tables(n, node_at, position_of, f_offsets, f_dist, f_lat, topic_ids, t_offsets, t_subs, t_root, xy)


def _distinct(major: np.ndarray, minor: np.ndarray, carried: np.ndarray) -> tuple[np.ndarray, ...]:
    """The (major, minor) pairs once each, sorted, with a value carried along (the first pair's)."""
    order = np.lexsort((minor, major))
    major, minor, carried = major[order], minor[order], carried[order]
    first = np.ones(len(major), bool)
    first[1:] = (major[1:] != major[:-1]) | (minor[1:] != minor[:-1])
    return major[first], minor[first], carried[first]


def _fingers(position_of, node, finger, n, xy):
    at, to = position_of[node], position_of[finger]
    kept = (at >= 0) & (to >= 0)
    at, to = at[kept], to[kept]
    at, distance, to = _distinct(at, (to - at) % n, to)
    if xy is None:
        latency = np.full(len(at), np.nan)
    else:
        latency = np.sqrt((xy[at, 0] - xy[to, 0]) ** 2 + (xy[at, 1] - xy[to, 1]) ** 2)
    offsets = np.zeros(n + 1, np.int64)
    np.cumsum(np.bincount(at, minlength=n), out=offsets[1:])
    return offsets, np.ascontiguousarray(distance), np.ascontiguousarray(latency)


def _subscribers(position_of, node, topic):
    at = position_of[node]
    topic, at, _ = _distinct(topic[at >= 0], at[at >= 0], at[at >= 0])
    ids, starts = np.unique(topic, return_index=True)
    return ids, np.concatenate([starts, [len(topic)]]).astype(np.int64), np.ascontiguousarray(at)


@dataclass
class Routed:
    """A routing run's arrivals in memory, in `routing.simulate.ARRIVAL_COLUMNS`."""

    arrivals: pa.Table
    supersteps: int
    messages: int


def route_batch(code, n, limit, has_latency, tables, pub, topic, publisher) -> pa.RecordBatch:
    """Every arrival of a batch of publications (publisher as a ring position), as
    `routing.simulate` emits them; a publication of a topic without subscribers is dropped, as
    the supersteps' join drops it. `tables`: (topic_ids, f_offsets, f_dist, f_lat, t_offsets,
    t_subs, t_root). The one batch step of both compiled regimes."""
    ids, f_offsets, f_dist, f_lat, t_offsets, t_subs, t_root = tables
    index = np.minimum(np.searchsorted(ids, topic), max(len(ids) - 1, 0))
    known = (index < len(ids)) & (ids[index] == topic) if len(ids) else np.zeros(len(topic), bool)
    rows = np.flatnonzero(known)
    got, latency = kernels.route_publications(
        code, n, limit, has_latency, index[rows], publisher[rows], f_offsets, f_dist, f_lat, t_offsets, t_subs, t_root
    )
    source = rows[got[:, 0]]
    return pa.RecordBatch.from_arrays(
        [
            pa.array(pub[source]),
            pa.array(topic[source]),
            pa.array(publisher[source]),
            pa.array(got[:, 1]),
            pa.array(got[:, 2].astype(np.int32)),
            pa.array(latency, mask=None if has_latency else np.ones(len(latency), bool)),
            pa.array(got[:, 3]),
            pa.array(got[:, 4].astype(bool)),
        ],
        names=list(ARRIVAL_COLUMNS),
    )


def placed_publications(tables: Tables, publications: pa.Table) -> pa.Table:
    """The publications (pub_id, topic_id, publisher node) with the publisher as its ring
    position; a publisher off the ring drops its publication, as the Spark regime's join does."""
    publisher = _column(publications, S.PUBLISHER)
    inside = publisher < len(tables.position_of)
    at = np.full(len(publisher), -1, np.int64)
    at[inside] = tables.position_of[publisher[inside]]
    keep = at >= 0
    return pa.table(
        {
            S.PUB_ID: _column(publications, S.PUB_ID)[keep],
            S.TOPIC_ID: _column(publications, S.TOPIC_ID)[keep],
            S.PUBLISHER: at[keep],
        }
    )


def route_in_memory(
    tables: Tables,
    publications: pa.Table,
    protocol: str,
    max_supersteps: int | None = None,
    on_step: OnStep | None = None,
) -> Routed:
    """Every arrival of the placed publications (pub_id, topic_id, publisher position) in this
    process; `on_step` hears of the run once (stage `routing`), as the compiled engine's."""
    if protocol not in PROTOCOLS:
        raise ValueError(f"unknown protocol {protocol!r}; choose one of {', '.join(PROTOCOLS)}")
    clock = time.monotonic()
    batch = route_batch(
        kernels.PROTOCOL_CODES[protocol],
        tables.n,
        max_supersteps or default_max_supersteps(tables.n),
        tables.latencies,
        (
            tables.topic_ids,
            tables.f_offsets,
            tables.f_dist,
            tables.f_lat,
            tables.t_offsets,
            tables.t_subs,
            tables.t_root,
        ),
        _column(publications, S.PUB_ID),
        _column(publications, S.TOPIC_ID),
        _column(publications, S.PUBLISHER),
    )
    arrivals = pa.Table.from_batches([batch])
    hops = batch.column(HOPS).to_numpy()
    supersteps, messages = int(hops.max(initial=0)), batch.num_rows
    figures = {"supersteps": supersteps, "messages": messages}
    report(on_step, "routing", 1, total=1, figures=figures, seconds=time.monotonic() - clock)
    return Routed(arrivals, supersteps, messages)


def spark_percentile(values: np.ndarray, fraction: float) -> float | None:
    """Spark's exact `percentile`: linear between the two nearest ranks, in its arithmetic
    ((higher - position) * lower value + (position - lower) * higher value), None when empty."""
    if len(values) == 0:
        return None
    position = (len(values) - 1) * fraction
    lower, higher = int(np.floor(position)), int(np.ceil(position))
    ordered = np.partition(values, [lower, higher])  # the two ranks in place, not a whole sort
    low, high = float(ordered[lower]), float(ordered[higher])
    if lower == higher or low == high:
        return low
    return (higher - position) * low + (position - lower) * high


def summarise_in_memory(routed: Routed, tables: Tables, publications: pa.Table) -> Outcome:
    """`routing.outcome.summarise` over arrays: the same deliveries, loads, per-publication counts,
    metrics and counter-example, as Arrow tables (publications placed, publisher as a position)."""
    arrivals, n = routed.arrivals, tables.n
    pub, topic, publisher = (_column(arrivals, c) for c in (S.PUB_ID, S.TOPIC_ID, S.PUBLISHER))
    at, sender = _column(arrivals, AT), _column(arrivals, SENDER)
    hops = arrivals.column(HOPS).to_numpy().astype(np.int32)
    target = arrivals.column(TARGET).to_numpy(zero_copy_only=False).astype(bool)
    latency = arrivals.column(LATENCY).to_numpy(zero_copy_only=False).astype(np.float64)
    p_pub, p_topic, p_publisher = (_column(publications, c) for c in (S.PUB_ID, S.TOPIC_ID, S.PUBLISHER))
    row_of = publication_rows(p_pub, pub)
    t_index = np.searchsorted(tables.topic_ids, p_topic)
    t_clamped = np.minimum(t_index, max(len(tables.topic_ids) - 1, 0))
    has_topic = (t_index < len(tables.topic_ids)) & (tables.topic_ids[t_clamped] == p_topic) if len(p_pub) else np.zeros(0, bool)  # fmt: skip
    subscribed = _subscribed(tables.t_offsets, tables.t_subs, np.where(has_topic, t_clamped, -1)[row_of], at)
    delivered = target & subscribed & (at != publisher)
    pure = ~subscribed

    d_at, d_pub = at[delivered], pub[delivered]
    d_latency = latency[delivered] if tables.latencies else None
    d_direct = None
    if tables.latencies:
        xy, d_from = tables.xy, publisher[delivered]
        d_direct = np.sqrt((xy[d_at, 0] - xy[d_from, 0]) ** 2 + (xy[d_at, 1] - xy[d_from, 1]) ** 2)
    deliveries = pa.table(
        {
            S.PUB_ID: d_pub,
            S.NODE_ID: tables.node_at[d_at],
            S.HOPS: hops[delivered],
            S.LATENCY_MS: pa.array(
                d_latency if d_latency is not None else np.zeros(len(d_at)), mask=_nulls(d_latency, len(d_at))
            ),  # fmt: skip
            S.DIRECT_MS: pa.array(
                d_direct if d_direct is not None else np.zeros(len(d_at)), mask=_nulls(d_direct, len(d_at))
            ),  # fmt: skip
        }
    )

    ring = np.flatnonzero(tables.node_at >= 0)
    to_ring = (sender >= 0) & (sender < n)
    load = pa.table(
        {
            S.NODE_ID: tables.node_at[ring],
            S.RECEIVED: np.bincount(at, minlength=n)[ring],
            S.PURE_FORWARDS: np.bincount(at, weights=pure, minlength=n).astype(np.int64)[ring],
            S.DELIVERED: np.bincount(d_at, minlength=n)[ring],
            S.SENT: np.bincount(sender[to_ring], minlength=n)[ring],
        }
    )

    count = len(p_pub)
    per_publication = pa.table(
        {
            S.PUB_ID: p_pub,
            S.TOPIC_ID: p_topic,
            S.PUBLISHER: tables.node_at[p_publisher],
            S.RECEIVED: np.bincount(row_of, minlength=count),
            S.PURE_FORWARDS: np.bincount(row_of, weights=pure, minlength=count).astype(np.int64),
            S.DELIVERIES: np.bincount(row_of[delivered], minlength=count),
        }
    )

    # The exactly-once check: every (publication, subscriber other than its publisher) once.
    sizes = np.where(has_topic, tables.t_offsets[t_clamped + 1] - tables.t_offsets[t_clamped], 0)
    e_row = np.repeat(np.arange(count, dtype=np.int64), sizes)
    starts = np.repeat(tables.t_offsets[t_clamped] - np.concatenate([[0], np.cumsum(sizes)[:-1]]), sizes)
    e_at = tables.t_subs[starts + np.arange(len(e_row))] if len(e_row) else np.zeros(0, np.int64)
    mine = e_at != p_publisher[e_row]
    e_row, e_at = e_row[mine], e_at[mine]
    expected_keys = np.sort(p_pub[e_row] * n + e_at)
    got_keys, times = np.unique(d_pub * n + d_at, return_counts=True)
    is_expected = _member(got_keys, expected_keys)
    delivered_expected = _member(expected_keys, got_keys)
    missing = int((~delivered_expected).sum())
    wrong = missing + int(((times != 1) | ~is_expected).sum())

    stretch = None
    if tables.latencies:
        nonzero = d_direct != 0
        stretch = d_latency[nonzero] / d_direct[nonzero]
    metrics = {
        S.PUBLICATIONS: count,
        S.ROUTING_OVERHEAD: int(pure.sum()),
        S.AVG_PATH_LENGTH: float(hops[delivered].astype(np.int64).sum() / len(d_at)) if len(d_at) else None,
        S.MAX_PATH_LENGTH: int(hops[delivered].max()) if len(d_at) else None,
        S.LATENCY_MEDIAN: spark_percentile(d_latency, 0.5) if d_latency is not None else None,
        S.LATENCY_P95: spark_percentile(d_latency, 0.95) if d_latency is not None else None,
        S.STRETCH_MEDIAN: spark_percentile(stretch, 0.5) if stretch is not None else None,
        S.DELIVERY_RATIO: 1.0 if len(expected_keys) == 0 else len(got_keys) / len(expected_keys),
        S.DUPLICATE_DELIVERIES: len(d_at) - len(got_keys),
        S.MISSING_DELIVERIES: missing,
        S.DELIVERIES: len(d_at),
        S.EXPECTED_DELIVERIES: len(expected_keys),
        S.MESSAGES: routed.messages,
        S.SUPERSTEPS: routed.supersteps,
    }
    example = None
    if wrong:
        example = _counter_example(tables, expected_keys, delivered_expected, got_keys, times, is_expected, p_pub, p_topic, p_publisher)  # fmt: skip
    return Outcome(deliveries, load, per_publication, metrics, example)


def publication_rows(p_pub: np.ndarray, pub: np.ndarray) -> np.ndarray:
    """Each arrival's publication row (its pub_id among the publications'): a gather when the ids
    are small (0..P-1, as the workloads number them), else a search."""
    if len(p_pub) and 0 <= p_pub.min() and p_pub.max() < 4 * len(p_pub) + 1024:
        lookup = np.full(int(p_pub.max()) + 1, -1, np.int64)
        lookup[p_pub] = np.arange(len(p_pub), dtype=np.int64)
        return lookup[pub]
    order = np.argsort(p_pub, kind="stable")
    return order[np.searchsorted(p_pub[order], pub)] if len(pub) else np.zeros(0, np.int64)


@nb.njit(cache=True, nogil=True)
def _subscribed(t_offsets, t_subs, topic_index, at):
    """Whether each arrival's node subscribes to its topic (dense index, -1: none): a binary search
    among the topic's sorted subscribers."""
    out = np.zeros(len(at), np.bool_)
    for i in range(len(at)):
        t = topic_index[i]
        if t < 0:
            continue
        lo, hi = t_offsets[t], t_offsets[t + 1]
        while lo < hi:
            mid = (lo + hi) // 2
            if t_subs[mid] < at[i]:
                lo = mid + 1
            else:
                hi = mid
        out[i] = lo < t_offsets[t + 1] and t_subs[lo] == at[i]
    return out


def _nulls(values: np.ndarray | None, length: int) -> np.ndarray | None:
    return np.ones(length, bool) if values is None else None


def _member(keys: np.ndarray, sorted_keys: np.ndarray) -> np.ndarray:
    """Whether each of `keys` is in `sorted_keys`."""
    if len(sorted_keys) == 0:
        return np.zeros(len(keys), bool)
    slot = np.minimum(np.searchsorted(sorted_keys, keys), len(sorted_keys) - 1)
    return sorted_keys[slot] == keys


def _counter_example(tables, expected_keys, delivered_expected, got_keys, times, is_expected, p_pub, p_topic, p_publisher):  # fmt: skip
    """The first (publication, position) not delivered exactly once, in words."""
    n = tables.n
    candidates = np.concatenate([expected_keys[~delivered_expected], got_keys[(times != 1) | ~is_expected]])
    key = int(candidates.min())
    pub_id, at = divmod(key, n)
    found = np.searchsorted(got_keys, key)
    received = int(times[found]) if found < len(got_keys) and got_keys[found] == key else 0
    node = int(tables.node_at[at])
    row = np.flatnonzero(p_pub == pub_id)[0]
    if not _member(np.array([key]), expected_keys)[0]:
        return counter_example_text(pub_id, None, None, node, received)
    return counter_example_text(pub_id, int(p_topic[row]), int(tables.node_at[p_publisher[row]]), node, received)
