"""A gossip simulation's cycles in the driver's memory and as Spark jobs give the same states,
cycle by cycle (`overlay.gossip.cycles.CycleRegime`): the engine's two regimes from one start, on
Feverfew (its bubble from cycle 3); and `auto`'s rule. The simulate jobs record the regime they
ran in (`tests/test_gossipsub.py`)."""

import random

import numpy as np
import pytest

from overlay.design.classes import Subscriptions
from overlay.gossip.cycles import MEMORY, SPARK, CycleRegime
from overlay.gossip.feverfew import FeverfewParams, feverfew_engine

NODES, CYCLES = 40, 5


def random_subscriptions(seed: int, nodes: int, topics: int, most: int) -> list[tuple[int, int]]:
    draw = random.Random(seed)
    return sorted({(p, t) for p in range(nodes) for t in draw.sample(range(topics), draw.randint(1, most))})


def _states(spark, regime: str) -> list[list]:
    """Every cycle's state rows (state and measure columns), sorted, from the engine's own start."""
    subs = random_subscriptions(4, NODES, 8, 4)
    csr = Subscriptions.from_pairs(NODES, np.asarray(subs, dtype=np.int64))
    engine = feverfew_engine(spark, csr, FeverfewParams(seed=2, bubble_start=3), 2, regime=regime)
    start = engine.start(spark, NODES).localCheckpoint(eager=True)
    seen: list[list] = []

    def on_cycle(cycle, state, seconds):
        assert (state.table is not None) == (regime == MEMORY)  # memory: the rows without a Spark job
        seen.append(sorted(state.frame.collect()))

    engine.run(start, 1, CYCLES, on_cycle=on_cycle)
    return seen


def test_the_memory_and_the_spark_regime_give_the_same_states_cycle_by_cycle(spark):
    memory, cycles = _states(spark, MEMORY), _states(spark, SPARK)
    assert len(memory) == len(cycles) == CYCLES
    for cycle, (mine, theirs) in enumerate(zip(memory, cycles), 1):
        assert mine == theirs, f"cycle {cycle}"


def test_auto_runs_in_memory_only_in_process_and_within_the_limit():
    assert CycleRegime("auto", 100, in_process=True).pick(100) == MEMORY
    assert CycleRegime("auto", 100, in_process=True).pick(101) == SPARK
    assert CycleRegime("auto", 100, in_process=False).pick(1) == SPARK  # a cluster: the executors
    assert CycleRegime("memory", 0, in_process=False).pick(10**9) == MEMORY
    with pytest.raises(ValueError, match="one of auto, memory, spark"):
        CycleRegime("rounds")
