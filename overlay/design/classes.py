"""The "same class" relation of the greedy engine: today, topic-connected components.

The gain of a pair (u, v) is the number of shared topics on which u and v are in different
classes; adding the link joins those classes. For TCOs a class is a topic-connected component
(the kTCO issue will plug in 2-connected blocks through the same interface).

The relation is held on the driver as one union-find over subscription rows, next to the
subscriptions in CSR form (see `overlay.design.kernels`): 16 bytes per subscription. That is a
driver copy that grows with the instance, so it is capped (`max_subscriptions`); each round the
flattened union-find goes to the executors as one broadcast, so they can refresh every
candidate's gain in place of a join of the candidate table with per-subscription labels.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from pyspark.sql import DataFrame

from overlay import schema as S
from overlay.design import kernels
from overlay.errors import InputError

MAX_DRIVER_SUBSCRIPTIONS = 50_000_000


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

    @classmethod
    def from_pairs(cls, nodes: int, pairs: np.ndarray) -> "Subscriptions":
        """From (node, topic) rows, any order, without duplicates."""
        order = np.lexsort((pairs[:, 1], pairs[:, 0]))
        ordered = pairs[order]
        offsets = np.searchsorted(ordered[:, 0], np.arange(nodes + 1)).astype(np.int64)
        return cls(offsets, np.ascontiguousarray(ordered[:, 1], dtype=np.int64))

    @classmethod
    def collect(
        cls, subscriptions: DataFrame, nodes: int | None = None, max_rows: int = MAX_DRIVER_SUBSCRIPTIONS,
    ) -> "Subscriptions":
        """The deliberate, capped driver copy of an instance's (node_id, topic_id) rows; node ids
        lie in [0, nodes) (default: up to the largest)."""
        table = subscriptions.select(S.NODE_ID, S.TOPIC_ID).limit(max_rows + 1).toArrow()
        rows = table.num_rows
        if rows > max_rows:
            raise InputError(
                f"the greedy engine keeps the subscriptions on the driver and this instance has "
                f"{rows:,} (the cap is {max_rows:,}); raise the cap with more driver memory "
                f"(16 bytes per subscription)"
            )
        pairs = np.column_stack([
            table.column(S.NODE_ID).to_numpy().astype(np.int64),
            table.column(S.TOPIC_ID).to_numpy().astype(np.int64),
        ]) if rows else np.zeros((0, 2), dtype=np.int64)
        if nodes is None:
            nodes = int(pairs[:, 0].max()) + 1 if rows else 0
        return cls.from_pairs(nodes, pairs)


class ComponentClasses:
    """Topic-connected components as one union-find over subscription rows."""

    def __init__(self, subscriptions: Subscriptions) -> None:
        self.subscriptions = subscriptions
        self.parent = np.arange(subscriptions.rows, dtype=np.int64)

    def gain(self, u: int, v: int) -> int:
        s = self.subscriptions
        return int(kernels.pair_gain(s.offsets, s.topics, self.parent, u, v))

    def merge(self, u: int, v: int) -> int:
        """Add the link (u, v); the number of classes it joined (its gain)."""
        s = self.subscriptions
        return int(kernels.merge_pair(s.offsets, s.topics, self.parent, u, v))

    def snapshot(self) -> np.ndarray:
        """The flattened union-find (every row points at its root), for the executors."""
        kernels.flatten(self.parent)
        return self.parent.copy()
