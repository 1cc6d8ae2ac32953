"""The compiled Rappel yardstick (`benchmarks/rappel_yardstick.py`) against the tests' oracles
(`tests/rappel_oracle.py`, `tests/rappel_trees_oracle.py`, driven as `coupled_run` drives them),
round by round: every node's friendship state (friends, fans, candidates with votes, audited flags
and rounds heard, the nodes met), the messages it sent, every feed's tree, every delivery (in
order, arrival bit for bit), every member's traffic. Small random instances chosen so that, across
the settings, every branch the yardstick counts (`PATHS`) and the oracle counts (`seen`) is taken."""

from __future__ import annotations

import functools
import math

import numpy as np
import pytest
from rappel_oracle import FriendshipOracle
from rappel_trees_oracle import TreesOracle

from benchmarks import rappel_yardstick as yardstick

pytestmark = pytest.mark.ci  # a benchmark's check: in the CI pass (cold numba compiles are most of it)

SETTINGS = {  # name: instance, protocol and presence
    # 40% of the nodes (publishers spared) down in rounds 5-7: friends lost, orphans, pulls
    "failure": dict(seed=2, nodes=50, feeds=8, rounds=9, alpha=3, beta=2, share=0.4, down_from=5, down_to=8),
    # on/off flips, 70% of the session ends proper leaves: heirs, siblings moved, walks into offline nodes
    "churn-proper-leaves": dict(seed=3, nodes=50, feeds=8, rounds=12, alpha=3, beta=2, churn=0.15, proper=0.7),
    # publishers fail too (the lab spares them): entries offline, fallback plans
    "publishers-fail": dict(
        seed=8, nodes=40, feeds=6, rounds=9, alpha=3, beta=2, share=0.5, down_from=3, down_to=6, spare=False
    ),
    # Bloom filters and interest only (Fig. 9's ablation): utility ties in the audits
    "bloom-interest": dict(seed=4, nodes=60, feeds=20, rounds=10, alpha=4, beta=3, mode="bloom", utility="interest"),
    # alpha 2 (books of 16) and long introductions: LRU evictions, in bulk; nodes of no feed or one
    "small-books": dict(
        seed=5,
        nodes=40,
        feeds=5,
        rounds=10,
        alpha=2,
        beta=2,
        utility="interest",
        feeds_per_node=(1, 2),
        no_feeds=0.2,
        intro=25,
    ),
    # nodes of 30-150 Bloom-summarised feeds: friends holding a feed falsely (denied walks)
    "false-positives": dict(
        seed=6, nodes=40, feeds=200, rounds=5, alpha=3, beta=3, mode="bloom", feeds_per_node=(30, 150)
    ),
    # 26 rounds (13 min): every member's first periodic rejoin, skipped after a ChangeParent or taken
    "periodic-rejoins": dict(seed=7, nodes=60, feeds=12, rounds=26, alpha=6, beta=2, mode="bloom"),
    # the lab's defaults (alpha 6, beta 5, Bloom, interest over distance)
    "defaults": dict(seed=1, nodes=60, feeds=10, rounds=10, alpha=6, beta=5, mode="bloom"),
    # arrivals spread over the first 4 rounds, a share failing for good at round 6
    "arrivals-and-loss": dict(
        seed=9, nodes=50, feeds=8, rounds=10, alpha=3, beta=3, share=0.3, down_from=6, down_to=11, arrivals=4
    ),
    # one feed everyone follows (Figs. 7, 8b): a deep tree, evictions down it
    "one-feed": dict(seed=10, nodes=45, feeds=1, rounds=14, alpha=3, beta=2, feeds_per_node=(1, 1)),
    # exact filters, interest only, few feeds: identical interests, ties everywhere
    "identical-interests": dict(
        seed=11, nodes=40, feeds=3, rounds=8, alpha=3, beta=2, utility="interest", feeds_per_node=(1, 2), intro=4
    ),
    # churn with failures only, exact filters, alpha 5
    "churn-failures": dict(seed=12, nodes=55, feeds=10, rounds=12, alpha=5, beta=3, churn=0.1),
}


def instance(seed, nodes, feeds, feeds_per_node=(1, 6), no_feeds=0.0, intro=0, spare=True, rounds=10, share=0.0,
             down_from=0, down_to=0, churn=0.0, proper=0.0, arrivals=0, **_):  # fmt: skip
    """Zipf-popular feeds; publishers drawn apart (some subscribe to nothing); who is down when."""
    rng = np.random.default_rng(seed)
    weight = rng.zipf(1.4, feeds).astype(float)
    subs = {}
    for v in range(nodes):
        k = 0 if rng.random() < no_feeds else int(rng.integers(feeds_per_node[0], feeds_per_node[1] + 1))
        subs[v] = set(rng.choice(feeds, size=min(k, feeds), replace=False, p=weight / weight.sum()).tolist())
    publishers = [int(p) for p in rng.integers(0, nodes, size=feeds)]
    coords = rng.uniform(-60.0, 60.0, size=(nodes, 2))
    met = {v: [int(q) for q in rng.choice(nodes, size=intro, replace=False) if q != v] for v in range(nodes)}
    down = np.zeros((rounds + 1, nodes), bool)
    failing = rng.random(nodes) < share
    down[down_from:down_to] |= failing
    if churn:
        off = np.zeros(nodes, bool)
        for r in range(1, rounds + 1):
            off ^= rng.random(nodes) < churn
            down[r] |= off
    if arrivals:
        first = rng.integers(1, arrivals + 1, size=nodes)
        down |= np.arange(rounds + 1)[:, None] < first[None, :]
    if spare:
        down[:, publishers] = False
    leaves = rng.random((rounds + 1, nodes)) < proper
    return subs, publishers, coords, (met if intro else None), down, leaves


@functools.cache
def run_both(name: str) -> dict:
    """The setting's rounds on the yardstick and on the oracles, compared round by round; the
    branches each took and facts of the instance."""
    s = {"mode": "exact", "utility": "interest-distance", **SETTINGS[name]}
    subs, publishers, coords, intro, down, leaves = instance(**s)
    nodes, rounds = s["nodes"], s["rounds"]
    params = dict(seed=s["seed"], alpha=s["alpha"], delta=0.01, mode=s["mode"], utility=s["utility"])
    pairs = [(v, f) for v in range(nodes) for f in sorted(subs[v])]
    results = yardstick.simulate(pairs, nodes, coords, publishers, rounds, beta=s["beta"], down=down, proper=leaves,
                                 intro=intro, every_round=True, **params)  # fmt: skip
    xy = [tuple(c) for c in coords.tolist()]
    fo = FriendshipOracle(nodes, subs, xy, intro=intro, down=lambda r: set(np.flatnonzero(down[r]).tolist()), **params)
    trees = TreesOracle(nodes, subs, xy, publishers, seed=s["seed"], beta=s["beta"], mode=s["mode"],
                        up=lambda v, r: not down[r, v], proper=lambda v, r: bool(leaves[r, v]))  # fmt: skip
    for r, got in enumerate(results, start=1):  # as `rappel_trees_oracle.coupled_run` drives the two
        fo.step(r)
        trees.round(r, {v: sorted(fo.friends[v]) for v in range(nodes)})
        for v in range(nodes):
            fo.met[v] = list(trees.met.get(v, []))
        for v in range(nodes):
            assert got["nodes"][v] == {c: list(x) for c, x in fo.state(v).items()}, f"{name}: round {r}, node {v}"
            assert got["sent"][v] == fo.sent[v], f"{name}: round {r}, node {v}, sent"
        for f in range(len(publishers)):
            assert got["trees"][f] == trees.tree(f), f"{name}: round {r}, feed {f}"
        assert got["deliveries"] == trees.deliveries, f"{name}: round {r}, deliveries"
        assert got["traffic"] == {k: list(x) for k, x in trees.traffic.items()}, f"{name}: round {r}, traffic"
        assert got["met"] == trees.met, f"{name}: round {r}, met"
    return {
        "paths": results[-1]["paths"],
        "seen": dict(fo.seen),
        "deliveries": sum(len(got["deliveries"]) for got in results),
        "no_feeds": sum(not subs[v] for v in range(nodes)),
        "one_feed": sum(len(subs[v]) == 1 for v in range(nodes)),
        "idle_publishers": sum(f not in subs[p] for f, p in enumerate(publishers)),
    }


@pytest.mark.parametrize("name", sorted(SETTINGS))
def test_the_rappel_yardstick_keeps_the_oracles_rounds(name):
    done = run_both(name)
    assert done["deliveries"] > 0 and done["paths"]["forward_down"] > 0, done


def test_the_settings_take_every_branch():
    """Across the settings, every branch both sides count was taken (no vacuous pass)."""
    runs = [run_both(name) for name in sorted(SETTINGS)]
    for path in yardstick.PATHS:
        assert sum(done["paths"][path] for done in runs) > 0, path
    for path in ("evicted", "refused", "swapped", "lost"):
        assert sum(done["seen"][path] for done in runs) > 0, path
    for fact in ("no_feeds", "one_feed", "idle_publishers"):
        assert sum(done[fact] for done in runs) > 0, fact
    assert run_both("publishers-fail")["paths"]["fallback"] > 0
    assert run_both("churn-proper-leaves")["paths"]["leave"] > 0
    assert run_both("false-positives")["paths"]["false_positive"] > 0
    assert run_both("bloom-interest")["paths"]["utility_tie"] > 0


def test_distances_are_cpythons_hypot_bit_for_bit():
    """Every latency and key the oracles compare goes through math.hypot / math.dist."""
    rng = np.random.default_rng(0)
    dx = np.concatenate(
        [rng.uniform(-150, 150, 20000), rng.uniform(-1, 1, 2000) * 10.0 ** rng.integers(-320, 300, 2000)]
    )
    dy = np.concatenate(
        [rng.uniform(-150, 150, 20000), rng.uniform(-1, 1, 2000) * 10.0 ** rng.integers(-320, 300, 2000)]
    )
    dx[:10] = 0.0
    assert [yardstick.norm(a, b) for a, b in zip(dx, dy)] == [math.hypot(a, b) for a, b in zip(dx, dy)]
