"""Feverfew's compiled cycles (`overlay.gossip.feverfew_compiled`, the memory regime) against the
independent whole-network oracle (tests/feverfew_oracle.py), every node's whole state after every
cycle, without Spark: random instances and settings that reach both peer samplers, the bubble on
and off, LV rebuilt every cycle or every other, similar views cleared, small views that fill and
evict, diffusions that match; and a run resumed from its rows."""

import random

import numpy as np
import pytest
from feverfew_oracle import assert_same_states, oracle_for

from overlay.design.classes import Subscriptions
from overlay.gossip.feverfew import FeverfewParams
from overlay.gossip.feverfew_compiled import CompiledFeverfew

CYCLES = 12


def random_case(seed: int) -> tuple[int, list[tuple[int, int]], FeverfewParams]:
    draw = random.Random(seed)
    nodes, topics = draw.randint(6, 70), draw.randint(2, 14)
    pairs = sorted({(v, t) for v in range(nodes) for t in draw.sample(range(topics), draw.randint(1, min(4, topics)))})
    random_view = draw.randint(2, 9)
    params = FeverfewParams(
        seed=seed,
        random_view=random_view,
        shuffle=draw.randint(1, random_view),
        similar_view=draw.randint(1, 8),
        agent_view=draw.randint(1, 5),
        bubble_start=draw.randint(1, 6),
        delta=draw.randint(1, 3),
        clear_similar=draw.random() < 0.3,
        pss=draw.choice(["cyclon", "cyclon", "uniform"]),
        bubble=draw.random() < 0.85,
    )
    return nodes, pairs, params


def rows_of(table) -> dict:
    return {row["node_id"]: row for row in table.to_pylist()}


@pytest.mark.parametrize("seed", range(16))
def test_the_compiled_cycles_are_the_oracles_node_by_node(seed):
    nodes, pairs, params = random_case(seed)
    csr = Subscriptions.from_pairs(nodes, np.asarray(pairs, dtype=np.int64))
    simulator = CompiledFeverfew(params, csr.offsets, csr.topics)
    simulator.start()
    oracle = oracle_for(nodes, pairs, params)
    start = rows_of(simulator.state_table())  # cycle 0, as the engine's memory regime starts
    assert all({k: start[v][k] for k in oracle.state(v)} == oracle.state(v) for v in range(nodes))
    for cycle in range(1, CYCLES + 1):
        oracle.step(cycle)
        assert_same_states(rows_of(simulator.cycle(cycle)), oracle, cycle)


def test_the_random_cases_reach_the_hard_paths():
    """Copies sent and held, matches, evictions from a full agent view, diffusions matched, both
    samplers: a case set that never reaches them would prove nothing."""
    reached = set()
    for seed in range(16):
        nodes, pairs, params = random_case(seed)
        oracle = oracle_for(nodes, pairs, params)
        for cycle in range(1, CYCLES + 1):
            oracle.step(cycle)
        reached.add(params.pss)
        sent = np.array([oracle.sent[v] for v in range(nodes)])
        reached |= {name for name, i in (("copies", 2), ("matches", 3)) if sent[:, i].sum() > 0}
        if any(len(av) == params.agent_view for av in oracle.av.values()):
            reached.add("full agent view")
        if any(d[2] >= 0 for own in oracle.own.values() for d in own.values()):
            reached.add("matched diffusion")
    assert reached >= {"cyclon", "uniform", "copies", "matches", "full agent view", "matched diffusion"}


def test_a_run_resumed_from_its_rows_goes_on_as_an_uninterrupted_one():
    nodes, pairs, params = random_case(3)
    csr = Subscriptions.from_pairs(nodes, np.asarray(pairs, dtype=np.int64))
    straight = CompiledFeverfew(params, csr.offsets, csr.topics)
    straight.start()
    tables = [straight.cycle(c) for c in range(1, CYCLES + 1)]
    resumed = CompiledFeverfew(params, csr.offsets, csr.topics)
    state = tables[5].drop_columns(["covered", "needy", "sent"])
    resumed.load(state.take(np.random.default_rng(1).permutation(nodes)))  # rows in any order
    for cycle in range(7, CYCLES + 1):
        assert resumed.cycle(cycle).equals(tables[cycle - 1]), f"cycle {cycle}"


def test_a_cycle_whose_copies_would_not_fit_the_budget_is_refused_with_what_to_do():
    """BubbleSample's copies double every cycle: a run that would pass its memory budget stops
    with an error that says so, before the machine runs out (a kernel's OOM kill says nothing)."""
    from overlay.errors import InputError
    from overlay.gossip.feverfew_compiled import COPY_BYTES

    for seed in range(16):  # the first random case whose copies pile up
        nodes, pairs, params = random_case(seed)
        csr = Subscriptions.from_pairs(nodes, np.asarray(pairs, dtype=np.int64))
        free = CompiledFeverfew(params, csr.offsets, csr.topics)
        free.start()
        held = []
        for cycle in range(1, CYCLES + 1):
            held.append(int(free.state[13].sum()) // 3)  # the copies held as the cycle starts
            free.cycle(cycle)
        if max(held) > 2:
            break
    first = next(c for c, h in enumerate(held, 1) if h > 2)  # the first cycle that carries 3 copies or more
    bounded = CompiledFeverfew(params, csr.offsets, csr.topics, memory_bytes=2 * COPY_BYTES)
    bounded.start()
    for cycle in range(1, first):
        bounded.cycle(cycle)
    with pytest.raises(InputError, match=f"cycle {first} would carry {held[first - 1]:,} BubbleSample copies"):
        bounded.cycle(first)
