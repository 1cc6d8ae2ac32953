"""The compiled Feverfew yardstick (benchmarks/feverfew_yardstick.py) against the tests' oracle
(tests/feverfew_oracle.py), every node's whole state after every cycle, without Spark: a yardstick
that measures speed must do exactly the work the lab does. Random small instances (common topics,
a few rare ones, topics of one subscriber) and settings that reach both peer samplers, the bubble on
and off, LV rebuilt every cycle or every other or third (MB carried between rebuilds), similar
views cleared, tiny views that fill and evict, ties in Cyclon's oldest entry, in the similar view's
ranking and in Alg. 3's picks, hubs (the yardstick looks a small node's topics up among a hub's);
and a test that the settings did reach those paths."""

from __future__ import annotations

import random
from collections import Counter
from types import SimpleNamespace

import pytest

from benchmarks.feverfew_yardstick import Yardstick
from tests.feverfew_oracle import assert_same_states, oracle_for, ratio

pytestmark = pytest.mark.ci  # a benchmark's check: in the CI pass (cold numba compiles are most of it)

CYCLES = 12
SETTINGS = range(16)
REACHED: dict[int, set[str]] = {}  # setting -> the hard paths its oracle run went through


def setting(k: int) -> tuple[int, list[tuple[int, int]], dict, int]:
    """Nodes, (node, topic) pairs, params (names as FeverfewParams has them) and seed of case k."""
    draw = random.Random(1000 + k)
    nodes, topics = draw.randint(20, 60), draw.randint(3, 8)
    pairs = {(v, t) for v in range(nodes) for t in draw.sample(range(topics), draw.randint(1, min(3, topics)))}
    for rare in range(draw.randint(1, 4)):  # topics of 1 to 3 subscribers
        pairs |= {(v, 100 + rare) for v in draw.sample(range(nodes), draw.randint(1, 3))}
    if k % 2 == 0:  # a hub: every topic (more than 8 times the topics of some nodes)
        pairs |= {(0, t) for t in range(topics)} | {(0, 200 + extra) for extra in range(20)}
    random_view = draw.randint(2, 6)
    params = {
        "random_view": random_view,
        "shuffle": draw.randint(1, random_view),
        "similar_view": draw.randint(1, 6),
        "agent_view": draw.randint(1, 4),
        "bubble_start": draw.randint(1, 5),
        "delta": 1 + k % 3,
        "clear_similar": k % 4 == 3,
        "pss": "uniform" if k % 4 == 1 else "cyclon",
        "bubble": k % 5 != 4,
    }
    return nodes, sorted(pairs), params, k + 1


def walk(k: int, check=None) -> set[str]:
    """The oracle of setting k through CYCLES cycles, `check(cycle, oracle)` after cycle 0 and each
    cycle; the hard paths it went through."""
    nodes, pairs, params, seed = setting(k)
    oracle = oracle_for(nodes, pairs, SimpleNamespace(seed=seed, **params))
    reached = {params["pss"], "bubble" if params["bubble"] else "no bubble", f"delta {params['delta']}"}
    if params["clear_similar"]:
        reached.add("similar view cleared")
    merge, alg3 = oracle.merge, oracle.alg3

    def merging(view, incoming, spare, me):
        before, new = set(view), {q for q, _ in incoming if q != me and q not in view}
        merge(view, incoming, spare, me)
        if before - set(view):
            reached.add("random view entry replaced")
        if new - set(view):
            reached.add("incoming entry dropped")

    def picking(v, buffer):
        rest = {t for t in oracle.subs[v] if oracle.need[t] > 0}
        keys = [(ratio(rest, oracle.subs[q]), len(rest & oracle.subs[q])) for q in set(buffer) - {v}]
        if keys and max(keys)[0] > 0 and keys.count(max(keys)) > 1:
            reached.add("Alg. 3 tie")
        return alg3(v, buffer)

    oracle.merge, oracle.alg3 = merging, picking
    if check:
        check(0, oracle)
    for cycle in range(1, CYCLES + 1):
        start_lv = {v: list(oracle.lv[v]) for v in range(nodes)}
        start_av = {v: list(oracle.av[v]) for v in range(nodes)}
        start_own = {v: {t: d[0] for t, d in oracle.own[v].items()} for v in range(nodes)}
        for v in range(nodes):
            ages = Counter(oracle.rv[v].values())
            if params["pss"] == "cyclon" and ages and ages[max(ages)] > 1:
                reached.add("oldest tie")
            if not oracle.sv[v]:
                reached.add("peer from LV" if oracle.lv[v] else "peer from RV")
        oracle.step(cycle)
        if check:
            check(cycle, oracle)
        for v in range(nodes):
            rest, mine = oracle.rest(v, start_lv[v]), oracle.subs[v]
            keys = [(ratio(rest, oracle.subs[q]), ratio(mine, oracle.subs[q])) for q in oracle.sv[v]]
            if len(set(keys)) < len(keys):
                reached.add("similar view tie")
            if oracle.sv[v] and len(oracle.sv[v]) == params["similar_view"]:
                reached.add("similar view full")
            if len(start_av[v]) == params["agent_view"] and start_av[v][0] not in oracle.av[v]:
                reached.add("agent view evicts")
            if any(len(oracle.subs[q]) > 8 * len(oracle.subs[v]) for q in oracle.sv[v] + oracle.lv[v]):
                reached.add("hub candidate")
            if oracle.mb[v]:
                reached.add("MB carried to a later cycle")
            if any(o != v for o, _, _ in oracle.held[v]):
                reached.add("copies held")
            if any(d[2] >= 0 for d in oracle.own[v].values()):
                reached.add("matched diffusion")
            if any(t in start_own[v] and d[0] != start_own[v][t] for t, d in oracle.own[v].items()):
                reached.add("diffusion started again")
            reached |= {name for name, i in (("copies sent", 2), ("matches", 3)) if oracle.sent[v][i] > 0}
    return reached


@pytest.mark.parametrize("k", SETTINGS)
def test_the_yardstick_keeps_the_oracles_states_node_by_node(k):
    nodes, pairs, params, seed = setting(k)
    yardstick = Yardstick(pairs, nodes, params, seed)

    def check(cycle, oracle):
        if cycle == 0:  # the cycle 0 state: no `covered` or `sent` yet
            rows = yardstick.rows()
            assert all({c: rows[v][c] for c in oracle.state(v)} == oracle.state(v) for v in range(nodes))
            return
        yardstick.cycle(cycle)
        assert_same_states(yardstick.rows(), oracle, cycle)

    REACHED[k] = walk(k, check)


def test_the_settings_reach_the_hard_paths():
    """A case set that never reached them would prove nothing."""
    reached = set().union(*(REACHED[k] if k in REACHED else walk(k) for k in SETTINGS))
    assert reached >= {
        "cyclon",
        "uniform",
        "bubble",
        "no bubble",
        "delta 1",
        "delta 2",
        "delta 3",
        "similar view cleared",
        "peer from LV",
        "peer from RV",
        "random view entry replaced",
        "incoming entry dropped",
        "oldest tie",
        "similar view tie",
        "similar view full",
        "Alg. 3 tie",
        "hub candidate",
        "agent view evicts",
        "MB carried to a later cycle",
        "copies sent",
        "copies held",
        "matches",
        "matched diffusion",
        "diffusion started again",
    }, reached
