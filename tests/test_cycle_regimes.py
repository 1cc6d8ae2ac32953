"""A gossip simulation's cycles in the driver's memory and as Spark jobs give the same states,
cycle by cycle (`overlay.gossip.cycles.CycleRegime`): the engine's two regimes from one start,
on Feverfew (its bubble from cycle 3) and on gossipsub (its GRAFTs and PRUNEs); and `auto`'s rule.
The simulate jobs record the regime they ran in (`tests/test_gossipsub.py`)."""

import numpy as np
import pytest

from overlay.design.classes import Subscriptions
from overlay.gossip.cycles import MEMORY, SPARK, CycleRegime
from overlay.gossip.feverfew import FeverfewParams, feverfew_engine
from overlay.gossip.gossipsub import GossipsubParams, gossipsub_engine
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


def _states(spark, protocol: str, regime: str) -> list[list]:
    """Every cycle's state rows (state and measure columns), sorted, from the engine's own start."""
    engine = _engine(spark, protocol, regime)
    start = engine.start(spark, NODES).localCheckpoint(eager=True)
    seen: list[list] = []
    engine.run(start, 1, CYCLES, on_cycle=lambda cycle, state, seconds: seen.append(sorted(state.collect())))
    return seen


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
