"""What every instance builder returns."""

from __future__ import annotations

from dataclasses import dataclass

from pyspark.sql import DataFrame


@dataclass(frozen=True)
class RowTally:
    """How the input rows reconcile: read = accepted + rejected + duplicates + unsampled."""

    read: int
    accepted: int
    rejected: int
    duplicates: int
    unsampled: int = 0

    def __post_init__(self) -> None:
        parts = self.accepted + self.rejected + self.duplicates + self.unsampled
        if parts != self.read:
            raise AssertionError(f"row tally does not reconcile: {self} (parts sum to {parts})")


@dataclass(frozen=True)
class InstanceFrames:
    """An instance ready to store, before the job stamps `instance` and `ingest_id`.

    subscriptions: (node_id, topic_id), distinct; node_keys / topic_keys: (key, id) with ids
    0..n-1; rejected: (record, reason, source_file, line); params: how it was made (for JSON).
    """

    source: str
    params: dict
    subscriptions: DataFrame
    node_keys: DataFrame
    topic_keys: DataFrame
    rejected: DataFrame
    tally: RowTally
