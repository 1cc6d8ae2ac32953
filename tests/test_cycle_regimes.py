"""A gossip simulation's cycles in the driver's memory and as Spark jobs give the same states,
cycle by cycle (`overlay.gossip.cycles.CycleRegime`): the engine's two regimes from one start,
on Feverfew (its bubble from cycle 3) and on gossipsub (its GRAFTs and PRUNEs); and `auto`'s rule.
A cycle's summary figures (`summarize`) from its Arrow table (memory) and from a Spark aggregate
agree with sums over its rows.
The simulate jobs record the regime they ran in (`tests/test_gossipsub.py`)."""

import numpy as np
import pyarrow as pa
import pytest

from overlay.design.classes import Subscriptions
from overlay.gossip.cycles import MAX, MEMORY, MIN_NONNEGATIVE, SPARK, SUM, CycleRegime, CycleState, Figure, summarize
from overlay.gossip.feverfew import FeverfewParams, feverfew_engine
from overlay.gossip.gossipsub import GossipsubParams, gossipsub_engine, heartbeat_summary
from tests.test_gossipsub import random_subscriptions

NODES, CYCLES = 40, 5


def _engine(spark, protocol: str, regime: str):
    subs = random_subscriptions(4, NODES, 8, 4)
    csr = Subscriptions.from_pairs(NODES, np.asarray(subs, dtype=np.int64))
    if protocol == "gossipsub":
        return gossipsub_engine(
            spark, csr, GossipsubParams(d=3, d_low=2, d_high=4, d_score=0, d_out=1, seed=2), 2, regime=regime
        )
    return feverfew_engine(spark, csr, FeverfewParams(seed=2, bubble_start=3), 2, regime=regime)


def _states(spark, protocol: str, regime: str, summaries: list | None = None) -> list[list]:
    """Every cycle's state rows (state and measure columns), sorted, from the engine's own start;
    gossipsub's heartbeat summaries into `summaries`, as the job computes them."""
    engine = _engine(spark, protocol, regime)
    start = engine.start(spark, NODES).localCheckpoint(eager=True)
    seen: list[list] = []

    def on_cycle(cycle, state, seconds):
        assert (state.table is not None) == (regime == MEMORY)  # memory: the figures need no Spark job
        if summaries is not None:
            summaries.append(heartbeat_summary(state))
        seen.append(sorted(state.frame.collect()))

    engine.run(start, 1, CYCLES, on_cycle=on_cycle)
    return seen


def _summed(rows) -> dict:
    """The heartbeat's figures by hand from its rows."""
    meshes = sum(r["meshes"] for r in rows)
    nonnegative = [r["mesh_min"] for r in rows if r["mesh_min"] >= 0]
    return {
        **{k: sum(r[k] for r in rows) for k in ("grafts", "prunes", "refused", "below_low", "above_high", "backoffs")},
        "meshes": meshes,
        "mesh_avg": sum(r["mesh_links"] for r in rows) / meshes if meshes else None,
        "mesh_min": min(nonnegative, default=None),
        "mesh_max": max(r["mesh_max"] for r in rows) if meshes else None,
    }


def test_heartbeat_summaries_from_the_arrow_table_and_from_spark_are_the_rows_sums(spark):
    from_arrow, from_spark = [], []
    memory = _states(spark, "gossipsub", MEMORY, from_arrow)
    _states(spark, "gossipsub", SPARK, from_spark)
    assert from_arrow == from_spark == [_summed(rows) for rows in memory]
    assert any(s["grafts"] for s in from_arrow) and any(s["prunes"] for s in from_arrow)


@pytest.mark.parametrize(
    "values, expected",
    [
        ([3, -1, 5, 0], {"total": 7, "largest": 5, "smallest": 0}),
        ([-1, -1], {"total": -2, "largest": -1, "smallest": None}),  # no non-negative value
        ([], {"total": None, "largest": None, "smallest": None}),  # no node
    ],
)
def test_both_evaluators_give_each_figure(spark, values, expected):
    figures = (Figure("total", SUM, "x"), Figure("largest", MAX, "x"), Figure("smallest", MIN_NONNEGATIVE, "x"))
    table = pa.table({"x": pa.array(values, pa.int32())})
    frame = spark.createDataFrame(table, schema="x int")
    assert summarize(CycleState(table=table), figures) == expected
    assert summarize(CycleState(frame=frame), figures) == expected


def test_a_figure_names_a_known_op():
    with pytest.raises(ValueError, match="one of sum, max, min_nonnegative"):
        Figure("x", "mean", "x")


@pytest.mark.parametrize("protocol", ["feverfew", "gossipsub"])
def test_the_memory_and_the_spark_regime_give_the_same_states_cycle_by_cycle(spark, protocol):
    memory, cycles = _states(spark, protocol, MEMORY), _states(spark, protocol, SPARK)
    assert len(memory) == len(cycles) == CYCLES
    for cycle, (mine, theirs) in enumerate(zip(memory, cycles), 1):
        assert mine == theirs, f"cycle {cycle}"
    if protocol == "gossipsub":  # the cycles reach the PRUNEs (the measure column `prunes`)
        assert any(row["prunes"] > 0 for state in memory for row in state)


def test_auto_runs_in_memory_only_in_process_and_within_the_limit():
    assert CycleRegime("auto", 100, in_process=True).pick(100) == MEMORY
    assert CycleRegime("auto", 100, in_process=True).pick(101) == SPARK
    assert CycleRegime("auto", 100, in_process=False).pick(1) == SPARK  # a cluster: the executors
    assert CycleRegime("memory", 0, in_process=False).pick(10**9) == MEMORY
    with pytest.raises(ValueError, match="one of auto, memory, spark"):
        CycleRegime("rounds")
