"""How an iterative job cuts its lineage: local checkpoints in one process, reliable ones on a cluster.

Every round of an iterative job (greedy rounds, gossip cycles, routing supersteps, connected
components) materialises its state and cuts the plan behind it, so that lineage never grows with
the rounds. A *local* checkpoint keeps the blocks on the executor that made them: fast, and enough
where the executors live in the driver's process (`local[*]`), but lost with their executor, and a
job that needs a lost block fails. A *reliable* checkpoint writes the blocks to the SparkContext's
checkpoint directory (a folder beside the lakehouse, which every worker sees): a lost worker then
costs its tasks' retries, not the job. The caller chooses (`pipelines.spark.lineage`): a library
reads no session setting.
"""

from __future__ import annotations

from dataclasses import dataclass

from pyspark.sql import DataFrame


@dataclass(frozen=True)
class Lineage:
    """`local_checkpoints`: local (True, the default) or reliable checkpoints, which need
    `SparkContext.setCheckpointDir`; `checkpoint_interval`: how often GraphFrames' iterative
    algorithms checkpoint (every n-th iteration)."""

    local_checkpoints: bool = True
    checkpoint_interval: int = 2

    def __post_init__(self) -> None:
        if self.checkpoint_interval < 1:
            raise ValueError(f"checkpoint_interval must be at least 1, got {self.checkpoint_interval}")

    def cut(self, frame: DataFrame) -> DataFrame:
        """`frame` computed now, its lineage cut (local or reliable checkpoint)."""
        return frame.localCheckpoint(eager=True) if self.local_checkpoints else frame.checkpoint(eager=True)


LOCAL = Lineage()
RELIABLE = Lineage(local_checkpoints=False)
