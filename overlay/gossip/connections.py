"""Who is connected to whom in a simulated gossipsub network (our reading:
docs/readings/gossipsub.md#connections).

With `peers` 0 every node is connected to every other subscriber of its topics (a broker
cluster's full knowledge), each pair's direction a fair coin (`gossipsub.outbound`). With `peers`
> 0, peers as deployed: nodes come up in a seeded order (smallest draw(DIAL_ORDER, v) first), and
each dials the nodes that share a topic with it, smallest draw(DIAL, v, q) first, skipping those it
is connected to already and those holding `peers` connections, until it has dialled
ceil(peers / 2), holds `peers` connections or has tried them all. A connection is outbound at the
node that dialled it. That is a libp2p host with a discovery that finds peers of its topics (a
rendezvous per topic, discv5's subnet predicates) and a connection manager that takes no
connection past its limit.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cached_property

import numpy as np
from pyspark.sql import DataFrame
from pyspark.sql import functions as F

from overlay import schema as S
from overlay.design.classes import Subscriptions
from overlay.draws import GOSSIPSUB_DIAL, GOSSIPSUB_DIAL_ORDER, draw

DIALERS, LISTENERS = "_dialers", "_listeners"  # a group's connections, as `TopicLinks.among` takes them


@dataclass(frozen=True)
class TopicLinks:
    """A topic's members' connections among themselves, by member position, in CSR form:
    `targets[offsets[v]:offsets[v + 1]]` are v's connected members (ascending), `dialled` whether
    v opened each of those connections (outbound at v)."""

    offsets: np.ndarray
    targets: np.ndarray
    dialled: np.ndarray

    @classmethod
    def among(cls, members: np.ndarray, dialer: np.ndarray, listener: np.ndarray) -> TopicLinks:
        """From the connections (dialer, listener) between `members` (sorted node ids)."""
        i, j = np.searchsorted(members, dialer), np.searchsorted(members, listener)
        rows, cols = np.concatenate([i, j]), np.concatenate([j, i])
        dialled = np.concatenate([np.ones(len(i), dtype=bool), np.zeros(len(j), dtype=bool)])
        order = np.lexsort((cols, rows))
        offsets = np.searchsorted(rows[order], np.arange(len(members) + 1)).astype(np.int64)
        return cls(offsets, cols[order].astype(np.int64), dialled[order])


def within_groups(members: DataFrame, connections: DataFrame, key: str) -> DataFrame:
    """(key, _dialers, _listeners): per group of `members` (key, node_id), the connections
    (dialer, listener) between two of its members."""
    ends = members.select(key, S.NODE_ID)
    return (
        connections.join(ends.withColumnRenamed(S.NODE_ID, "dialer"), "dialer")
        .join(ends.withColumnRenamed(S.NODE_ID, "listener"), [key, "listener"])
        .groupBy(key)
        .agg(F.collect_list("dialer").alias(DIALERS), F.collect_list("listener").alias(LISTENERS))
    )


def links_of(row: dict, members: np.ndarray) -> TopicLinks | None:
    """A group's `TopicLinks` from its row of `within_groups` columns (None: the row has none,
    every pair is connected)."""
    if DIALERS not in row:
        return None
    ends = (np.asarray([] if row[k] is None else row[k], dtype=np.int64) for k in (DIALERS, LISTENERS))
    return TopicLinks.among(members, *ends)


@dataclass(frozen=True)
class Connections:
    """One row per connection: `dialer` opened it to `listener` (outbound at the dialer), sorted
    by dialer."""

    dialer: np.ndarray
    listener: np.ndarray

    @cached_property
    def _starts(self) -> np.ndarray:
        return np.searchsorted(self.dialer, np.arange(int(self.dialer.max(initial=-1)) + 2))

    def within(self, members: np.ndarray) -> TopicLinks:
        """The connections between `members` (sorted node ids): the members' own dials only, so a
        topic costs its members' connections, not all of them."""
        starts = self._starts
        mine = members[members < len(starts) - 1]
        spans = [np.arange(starts[v], starts[v + 1]) for v in mine.tolist()]
        rows = np.concatenate(spans) if spans else np.zeros(0, dtype=np.int64)
        rows = rows[np.isin(self.listener[rows], members)]
        return TopicLinks.among(members, self.dialer[rows], self.listener[rows])


def deployed(subscriptions: Subscriptions, peers: int, seed: int) -> Connections:
    """Peers as deployed (see the module doc) for `subscriptions`."""
    nodes = subscriptions.nodes
    topic_starts, by_topic = subscriptions.members
    offsets, topics = subscriptions.offsets, subscriptions.topics
    want = -(-peers // 2)
    held = np.zeros(nodes, dtype=np.int64)
    connected: list[set[int]] = [set() for _ in range(nodes)]
    dials: list[tuple[int, int]] = []
    arrival = np.lexsort((np.arange(nodes), draw(seed, GOSSIPSUB_DIAL_ORDER, np.arange(nodes, dtype=np.int64))))
    for v in arrival.tolist():
        mine = topics[offsets[v] : offsets[v + 1]]
        if len(mine) == 0:
            continue
        candidates = np.unique(np.concatenate([by_topic[topic_starts[t] : topic_starts[t + 1]] for t in mine.tolist()]))
        candidates = candidates[candidates != v]
        ranked = candidates[np.lexsort((candidates, draw(seed, GOSSIPSUB_DIAL, v, candidates)))]
        dialled = 0
        for q in ranked.tolist():
            if dialled >= want or held[v] >= peers:
                break
            if q in connected[v] or held[q] >= peers:
                continue
            connected[v].add(q)
            connected[q].add(v)
            held[v] += 1
            held[q] += 1
            dials.append((v, q))
            dialled += 1
    ordered = np.asarray(sorted(dials), dtype=np.int64).reshape(-1, 2)
    return Connections(ordered[:, 0].copy(), ordered[:, 1].copy())
