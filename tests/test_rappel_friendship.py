"""Rappel's friendship overlay (overlay.rappel.friendship on the cycle engine) against the
independent whole-network oracle (tests/rappel_oracle.py), round by round."""

import numpy as np
import pytest
from rappel_oracle import FriendshipOracle

from overlay.design.classes import Subscriptions
from overlay.rappel.coordinates import LatencyModel
from overlay.rappel.friendship import RappelParams, friendship_engine
from overlay.rappel.presence import Presence


def interest_instance(nodes: int, feeds: int, seed: int):
    """1-6 feeds per node from Zipf-popular feeds, and three nodes each starts having met."""
    rng = np.random.default_rng(seed)
    weight = rng.zipf(1.5, feeds).astype(float)
    subs = {
        v: set(rng.choice(feeds, size=int(rng.integers(1, 7)), replace=False, p=weight / weight.sum()).tolist())
        for v in range(nodes)
    }
    intro = {v: [int(q) for q in rng.choice(nodes, size=3, replace=False) if q != v] for v in range(nodes)}
    return subs, intro


def run_both(spark, nodes, feeds, params: RappelParams, rounds: int, presence: Presence) -> FriendshipOracle:
    subs, intro = interest_instance(nodes, feeds, params.seed)
    pairs = np.array([(v, t) for v in range(nodes) for t in sorted(subs[v])])
    coords = LatencyModel().coordinates(params.seed, np.arange(nodes))
    offsets = np.concatenate([[0], np.cumsum([len(intro[v]) for v in range(nodes)])]).astype(np.int64)
    ids = np.array([q for v in range(nodes) for q in intro[v]], dtype=np.int64)
    engine = friendship_engine(
        spark, Subscriptions.from_pairs(nodes, pairs), coords, params, 3, (offsets, ids), presence
    )
    oracle = FriendshipOracle(
        nodes,
        subs,
        [tuple(c) for c in coords.tolist()],
        seed=params.seed,
        alpha=params.alpha,
        delta=params.delta,
        mode=params.mode,
        utility=params.utility,
        intro=intro,
        down=lambda r: presence.down(range(nodes), r),
    )

    def compare(r, state, _seconds):
        oracle.step(r)
        rows = {row["node_id"]: row.asDict() for row in state.frame.collect()}
        for v in range(nodes):
            got = rows[v]
            for column, value in oracle.state(v).items():
                assert list(got[column]) == list(value), f"round {r}, node {v}, {column}: {got[column]} != {value}"
            assert (got["covered"], got["feeds"]) == (oracle.covered(v), len(subs[v])), (r, v)
            assert list(got["sent"]) == oracle.sent[v], (r, v)

    engine.run(engine.start(spark, nodes), 1, rounds, on_cycle=compare)
    return oracle


@pytest.mark.slow  # about 40 s; the default run's Rappel check (test_rappel_simulation.py) compares the friendship states too
def test_the_friendship_rounds_match_the_oracle_through_a_mass_failure(spark):
    # alpha 3 on 70 nodes: full friend sets (swaps), fans at their cap of 6 (refusals), candidate
    # books at their cap of 33 (LRU eviction), and 30% of the nodes down in rounds 6-8.
    params = RappelParams(seed=3, alpha=3, mode="exact")
    oracle = run_both(spark, 70, 20, params, 12, Presence(seed=3, share=0.3, fail_round=6, return_round=9))
    assert all(oracle.seen[path] > 0 for path in ("evicted", "refused", "swapped", "lost")), oracle.seen
    assert sum(len(f) == 3 for f in oracle.friends.values()) > 50


@pytest.mark.slow
def test_the_friendship_rounds_match_the_oracle_with_bloom_filters_and_interest_only(spark):
    params = RappelParams(seed=5, alpha=4, mode="bloom", utility="interest")
    oracle = run_both(spark, 90, 40, params, 10, Presence())
    assert oracle.seen["swapped"] > 0 and oracle.seen["refused"] > 0, oracle.seen
