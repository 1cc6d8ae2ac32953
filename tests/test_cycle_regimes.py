"""A gossip simulation's cycles in the driver's memory and as Spark jobs store the same rows
(`overlay.gossip.cycles.CycleRegime`): Feverfew with its bubble and gossipsub with pruning and
refusals, snapshots included, each run row naming the regime it ran in."""

import pytest
from chispa import assert_df_equality
from pyspark.sql import functions as F

from overlay import schema as S
from overlay.gossip.cycles import MEMORY, SPARK, CycleRegime
from overlay.instance.synthetic import SyntheticSpec
from pipelines.lakehouse import Lakehouse
from tests.helpers import store_instance

TIMING = [S.RUN_ID, S.SECONDS, S.COMPUTED_AT]  # what differs between two runs of the same rows


def _simulate(spark, lakehouse: Lakehouse, protocol: str, run_id: str) -> dict:
    if protocol == "gossipsub":
        from pipelines.gossipsub import GossipsubRequest, run_gossipsub

        request = GossipsubRequest("r", 9, seed=2)
        return run_gossipsub(spark, lakehouse, request, run_id, snapshot_every=4, progress=False, diameters=False)
    from pipelines.simulate import SimulateRequest, run_simulation

    request = SimulateRequest("r", "feverfew", cycles=9, seed=2, bubble_start=5)
    return run_simulation(spark, lakehouse, request, run_id, snapshot_every=4, progress=False, diameters=False)


TABLES = {
    "gossipsub": (S.GOSSIPSUB_MESH, S.GOSSIPSUB_HEARTBEATS, S.GOSSIPSUB_STATES, S.OVERLAY_EDGES),
    "feverfew": (S.GOSSIP_CYCLES, S.GOSSIP_COVERAGE, S.GOSSIP_DIFFUSIONS, S.GOSSIP_STATES, S.OVERLAY_EDGES),
}


@pytest.mark.parametrize("protocol", sorted(TABLES))
def test_the_memory_and_the_spark_regime_store_the_same_rows(spark, tmp_path, protocol):
    root = tmp_path / "lakehouse"
    lakehouses = {regime: Lakehouse(spark, root, cycles=CycleRegime(regime)) for regime in (MEMORY, SPARK)}
    store_instance(spark, lakehouses[MEMORY], "r", SyntheticSpec("zipf", 48, 8, 1, 4, 5))
    runs = {regime: _simulate(spark, lakehouse, protocol, f"r.{regime}") for regime, lakehouse in lakehouses.items()}
    assert {regime: run[S.REGIME] for regime, run in runs.items()} == {MEMORY: MEMORY, SPARK: SPARK}
    assert runs[MEMORY][S.EDGES] == runs[SPARK][S.EDGES] > 0
    read = lakehouses[MEMORY].read
    for table in TABLES[protocol]:
        rows = {
            regime: read(table)
            .filter(F.col(S.RUN_ID) == f"r.{regime}")
            .drop(*[c for c in TIMING if c in table.columns])
            for regime in (MEMORY, SPARK)
        }
        assert rows[SPARK].count() > 0, table.name
        assert_df_equality(rows[MEMORY], rows[SPARK], ignore_row_order=True, ignore_nullable=True)


def test_auto_runs_in_memory_only_in_process_and_within_the_limit():
    assert CycleRegime("auto", 100, in_process=True).pick(100) == MEMORY
    assert CycleRegime("auto", 100, in_process=True).pick(101) == SPARK
    assert CycleRegime("auto", 100, in_process=False).pick(1) == SPARK  # a cluster: the executors
    assert CycleRegime("memory", 0, in_process=False).pick(10**9) == MEMORY
    with pytest.raises(ValueError, match="one of auto, memory, spark"):
        CycleRegime("rounds")
