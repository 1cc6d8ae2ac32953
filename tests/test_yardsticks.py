"""The compiled yardsticks of `benchmarks/` against the tests' oracles: a yardstick that measures
speed must do exactly the work the lab does."""

from __future__ import annotations

import random

import numpy as np
import pytest

from benchmarks import gossipsub_yardstick as yardstick
from tests.gossipsub_oracle import GossipsubOracle, Params, plane_latency


@pytest.mark.parametrize("seed", range(4))
@pytest.mark.parametrize("rules", ["go-libp2p", "spec"])
def test_the_gossipsub_yardstick_keeps_the_oracles_heartbeats_and_meshes(seed, rules):
    """Random instances with small meshes (D 3, D_high 5), so that meshes overflow, prune and
    refuse; latencies of a plane, phases of the seed."""
    draw = random.Random(seed)
    nodes = 40
    subs = sorted({(p, t) for p in range(nodes) for t in draw.sample(range(6), draw.randint(1, 3))})
    positions = np.asarray([(draw.uniform(0, 80), draw.uniform(0, 80)) for _ in range(nodes)])
    high, sweep, slack = (5, 15, 2_000_000) if rules == "go-libp2p" else (6, 1, 0)
    beat, backoff = 700_000, 3_000_000
    oracle = GossipsubOracle(
        subs,
        Params(
            d=3,
            d_low=2,
            d_high=5,
            d_out=1,
            prune_backoff_us=backoff,
            high=high,
            sweep=sweep,
            slack_us=slack,
            heartbeat_us=beat,
        ),  # fmt: skip
        seed=seed,
        latency=plane_latency({v: tuple(positions[v]) for v in range(nodes)}),
    )
    expected = []
    for _ in range(12):
        oracle.heartbeat()
        expected.append([oracle.measures()[c] for c in yardstick.COLUMNS])
    phases = [oracle.phase(v) for v in range(nodes)]
    measures, rows = yardstick.simulate(subs, nodes, positions, phases, seed, (3, 2, 5, 1, high, backoff, sweep, slack, beat), 12)  # fmt: skip
    assert measures.tolist() == expected
    assert rows == oracle.rows()
    assert sum(row[yardstick.COLUMNS.index("prunes")] for row in expected) > 0  # the prune path ran
