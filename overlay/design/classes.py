"""The "same class" relation of the greedy engine: topic-connected components, or GM2's blocks.

The gain of a pair (u, v) is the number of shared topics on which u and v are in different
classes; adding the link joins those classes. For TCOs (GM, GPA, MinMaxODA, GPM, GSwicoS/L) a
class is a topic-connected component (`ComponentClasses`); for GM2's 2TCO, a 2-connected block
of the topic's subgraph (`BlockClasses`, kTCO paper Alg. 1), where a cut vertex lies in several.

Both are held on the driver over subscription rows, next to the subscriptions in CSR form (see
`overlay.design.kernels`): 16 bytes per subscription for components, about 64 for blocks. That
is a driver copy that grows with the instance, so it is capped (`max_subscriptions`); each round
a *flattened* copy (`snapshot`: a class label per row, and for blocks the row each block hangs
from) goes to the executors as one broadcast, so they refresh every candidate's gain in place
(`kernels.apart`) instead of joining the candidate table with per-subscription labels.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cached_property

import numpy as np
from pyspark.sql import DataFrame

from overlay import schema as S
from overlay.design import blocks, kernels
from overlay.errors import InputError

MAX_DRIVER_SUBSCRIPTIONS = 50_000_000
MAX_BLOCK_SUBSCRIPTIONS = 12_500_000  # GM2's forest: four times the bytes per subscription


@dataclass(frozen=True)
class Subscriptions:
    """Subscriptions in CSR form: node x subscribes to `topics[offsets[x]:offsets[x + 1]]`."""

    offsets: np.ndarray  # int64, nodes + 1
    topics: np.ndarray  # int64, sorted within each node

    @property
    def nodes(self) -> int:
        return len(self.offsets) - 1

    @property
    def rows(self) -> int:
        return len(self.topics)

    @cached_property
    def topic_sizes(self) -> np.ndarray:
        """Subscribers of each topic with any (in topic order)."""
        counts = np.bincount(self.topics) if len(self.topics) else np.zeros(0, dtype=np.int64)
        return counts[counts > 0]

    @cached_property
    def members(self) -> tuple[np.ndarray, np.ndarray]:
        """The transpose, (offsets, nodes): topic t's subscribers are
        `nodes[offsets[t]:offsets[t + 1]]`, ascending (t up to the largest topic id)."""
        owner = np.repeat(np.arange(self.nodes, dtype=np.int64), np.diff(self.offsets))
        order = np.lexsort((owner, self.topics))
        offsets = np.searchsorted(self.topics[order], np.arange(int(self.topics.max(initial=-1)) + 2))
        return offsets.astype(np.int64), owner[order]

    def subscribers(self, topic: int) -> np.ndarray:
        offsets, nodes = self.members
        return nodes[offsets[topic] : offsets[topic + 1]]

    @classmethod
    def from_pairs(cls, nodes: int, pairs: np.ndarray) -> Subscriptions:
        """From (node, topic) rows, any order, without duplicates."""
        order = np.lexsort((pairs[:, 1], pairs[:, 0]))
        ordered = pairs[order]
        offsets = np.searchsorted(ordered[:, 0], np.arange(nodes + 1)).astype(np.int64)
        return cls(offsets, np.ascontiguousarray(ordered[:, 1], dtype=np.int64))

    @classmethod
    def collect(
        cls,
        subscriptions: DataFrame,
        nodes: int | None = None,
        max_rows: int = MAX_DRIVER_SUBSCRIPTIONS,
        holder: str = "the greedy engine",
        rows: int | None = None,
    ) -> Subscriptions:
        """The deliberate, capped driver copy of an instance's (node_id, topic_id) rows; node ids
        lie in [0, nodes) (default: up to the largest). `holder` names the algorithm in the error.
        `rows`: how many there are, when the caller knows (an instance row says): one Spark job
        then, else a count first (a `limit` would collect in growing waves of jobs)."""
        rows = subscriptions.count() if rows is None else rows
        if rows <= max_rows:
            table = subscriptions.select(S.NODE_ID, S.TOPIC_ID).toArrow()
            rows = table.num_rows
        if rows > max_rows:
            raise InputError(
                f"{holder} keeps the subscriptions on the driver and this instance has "
                f"{rows:,} (the cap is {max_rows:,}); raise the cap with more driver memory "
                f"(16 bytes per subscription)"
            )
        pairs = (
            np.column_stack(
                [
                    table.column(S.NODE_ID).to_numpy().astype(np.int64),
                    table.column(S.TOPIC_ID).to_numpy().astype(np.int64),
                ]
            )
            if rows
            else np.zeros((0, 2), dtype=np.int64)
        )
        if nodes is None:
            nodes = int(pairs[:, 0].max()) + 1 if rows else 0
        return cls.from_pairs(nodes, pairs)


Relation = tuple[np.ndarray, np.ndarray]  # (label, head): see `kernels.apart`
NO_HEADS = np.zeros(0, dtype=np.int64)


class ComponentClasses:
    """Topic-connected components as one union-find over subscription rows."""

    def __init__(self, subscriptions: Subscriptions, parent: np.ndarray | None = None) -> None:
        """`parent`: a flattened union-find over the rows to start from (default: every row alone)."""
        self.subscriptions = subscriptions
        rows = np.arange(subscriptions.rows, dtype=np.int64)
        self.parent = rows if parent is None else parent
        self.components = int(np.count_nonzero(self.parent == rows))  # TCC, summed over topics
        self.topics = len(subscriptions.topic_sizes)

    @property
    def complete(self) -> bool:
        """A TCO: one component per topic, so no pair has a positive gain."""
        return self.components <= self.topics

    def gain(self, u: int, v: int) -> int:
        s = self.subscriptions
        return int(kernels.pair_gain(s.offsets, s.topics, self.parent, u, v))

    def merge(self, u: int, v: int) -> int:
        """Add the link (u, v); the number of classes it joined (its gain)."""
        s = self.subscriptions
        joined = int(kernels.merge_pair(s.offsets, s.topics, self.parent, u, v))
        self.components -= joined
        return joined

    def merge_all(self, links: np.ndarray) -> int:
        """Add the (k, 2) `links` in order, in one compiled loop; the classes they joined."""
        s = self.subscriptions
        joined = int(
            kernels.merge_links(
                s.offsets, s.topics, self.parent, np.ascontiguousarray(links[:, 0]), np.ascontiguousarray(links[:, 1])
            )
        )
        self.components -= joined
        return joined

    def snapshot(self) -> Relation:
        """The flattened union-find (every row points at its root), for the executors."""
        kernels.flatten(self.parent)
        return self.parent.copy(), NO_HEADS


class BlockClasses:
    """GM2's relation: the blocks of every topic's subgraph, as a block-cut forest over
    subscription rows kept as links arrive (`overlay.design.blocks`). The gain of a link counts
    the shared topics on which its ends share no block; it never grows as links are added
    (a shared block or a common cycle survives them), so the engine's bounds stay exact.

    The driver work per link is bounded by what it changes, not by the topics it touches: a
    bridge re-roots the smaller of two trees, a cycle walks and merges the blocks on its path."""

    def __init__(self, subscriptions: Subscriptions, max_rows: int = MAX_BLOCK_SUBSCRIPTIONS) -> None:
        rows = subscriptions.rows
        if rows > max_rows:
            raise InputError(
                f"GM2 keeps every topic's blocks on the driver, about 64 bytes per subscription, and this "
                f"instance has {rows:,} (the cap is {max_rows:,}); run it with more driver memory and a higher cap"
            )
        self.subscriptions = subscriptions
        self.pblock = np.full(rows, -1, dtype=np.int64)
        self.bparent = np.arange(rows + 1, dtype=np.int64)  # a block per bridge: at most rows - 1
        self.bhead = np.full(rows + 1, -1, dtype=np.int64)
        self.comp = np.arange(rows, dtype=np.int64)
        self.comp_size = np.ones(rows, dtype=np.int64)
        self.vmark = np.zeros(rows, dtype=np.int64)
        self.bmark = np.zeros(rows + 1, dtype=np.int64)
        self.state = np.zeros(blocks.STATE_SLOTS, dtype=np.int64)
        self.state[blocks.COMPONENTS] = rows
        sizes = subscriptions.topic_sizes
        self.topics, self.shared_topics = len(sizes), int((sizes >= 2).sum())

    @property
    def components(self) -> int:
        return int(self.state[blocks.COMPONENTS])

    @property
    def blocks(self) -> int:
        """Blocks of two or more rows, over all topics."""
        return int(self.state[blocks.BLOCKS])

    @property
    def complete(self) -> bool:
        """A 2TCO: every topic connected, and one block in each with two or more subscribers."""
        return self.components <= self.topics and self.blocks <= self.shared_topics

    def _forest(self) -> tuple:
        s = self.subscriptions
        return (
            s.offsets,
            s.topics,
            self.pblock,
            self.bparent,
            self.bhead,
            self.comp,
            self.comp_size,
            self.vmark,
            self.bmark,
            self.state,
        )

    def gain(self, u: int, v: int) -> int:
        return int(blocks.pair_gain(*self._forest(), u, v))

    def merge(self, u: int, v: int) -> int:
        """Add the link (u, v); the number of topics on which it joined blocks (its gain)."""
        return int(blocks.merge_pair(*self._forest(), u, v))

    def merge_all(self, links: np.ndarray) -> int:
        """Add the (k, 2) `links` in order; the blocks they joined."""
        return sum(self.merge(u, v) for u, v in links.tolist())

    def snapshot(self) -> Relation:
        return blocks.flat_relation(self.pblock, self.bparent, self.bhead)


Classes = ComponentClasses | BlockClasses
