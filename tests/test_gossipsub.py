"""gossipsub's heartbeat protocol (`overlay/gossip/gossipsub.py`) against the independent oracle
(`tests/gossipsub_oracle.py`): the same meshes, GRAFTs and PRUNEs after every heartbeat."""

from __future__ import annotations

import itertools
import random
import re

import numpy as np
import pytest

from overlay.design.classes import Subscriptions
from overlay.errors import InputError
from overlay.gossip.gossipsub import PROFILES, Gossipsub, GossipsubParams
from tests.gossipsub_oracle import GossipsubOracle, Params


def heartbeats_in_process(protocol, nodes: int, heartbeats: int):
    """The cycle engine's three steps without Spark: messages sorted by (dst, kind, src, seq) and
    handed to each destination's SELF row first, as `CycleEngine.cycle` does."""

    def by_destination(messages):
        ordered = sorted(messages, key=lambda m: (m["dst"], m["kind"], m["src"], m["seq"]))
        return itertools.groupby(ordered, key=lambda m: m["dst"])

    state = [protocol.start(node) for node in range(nodes)]
    for h in range(1, heartbeats + 1):
        served = [
            m for node, rows in by_destination(protocol.act(state, h)) for m in protocol.serve(node, list(rows), h)
        ]
        state = [protocol.finish(node, list(rows), h) for node, rows in by_destination(served)]
        yield h, state


def random_subscriptions(seed: int, nodes: int, topics: int, most: int) -> list[tuple[int, int]]:
    draw = random.Random(seed)
    return sorted({(p, t) for p in range(nodes) for t in draw.sample(range(topics), draw.randint(1, most))})


@pytest.mark.parametrize(
    "seed,params",
    [
        (1, Params()),
        (2, Params(d=3, d_low=2, d_high=4, d_out=1, prune_backoff=4)),  # small meshes: many prunes, refusals
        (3, Params(d=8, d_low=6, d_high=12, d_out=2, prune_backoff=60)),  # the eth2 profile
        (4, Params(d=2, d_low=1, d_high=2, d_out=0, prune_backoff=2)),  # D_high reached at once
    ],
)
def test_the_protocol_keeps_the_oracles_meshes_heartbeat_by_heartbeat(seed, params):
    subs = random_subscriptions(seed, 50, 7, 3)
    oracle = GossipsubOracle(subs, params, seed=seed)
    ours = GossipsubParams(
        d=params.d, d_low=params.d_low, d_high=params.d_high, d_score=0, d_out=params.d_out,
        prune_backoff=params.prune_backoff, seed=seed,
    )  # fmt: skip
    csr = Subscriptions.from_pairs(50, np.asarray(subs, dtype=np.int64))
    prunes_seen = refusals_seen = 0
    for h, state in heartbeats_in_process(Gossipsub(ours, csr.offsets, csr.topics), 50, 30):
        oracle.heartbeat()
        rows = {(t, r["node_id"], q) for r in state for t, q in zip(r["mesh_topic"], r["mesh_peer"])}
        assert rows == oracle.rows(), f"heartbeat {h}"
        backoffs = {
            (r["node_id"], t, q, u)
            for r in state
            for t, q, u in zip(r["backoff_topic"], r["backoff_peer"], r["backoff_until"])
        }
        assert backoffs == {(p, t, q, u) for (p, t), held in oracle.backoff.items() for q, u in held.items()}
        assert sum(r["grafts"] for r in state) == oracle.grafts
        assert sum(r["prunes"] for r in state) == oracle.prunes
        prunes_seen += oracle.prunes
        refusals_seen += sum(r["refused"] for r in state)
    assert prunes_seen > 0  # the runs reach the pruning paths
    assert refusals_seen > 0 or params.d_high >= 12  # and, with small meshes, the refusals


@pytest.mark.parametrize(
    "change,message",
    [({"d_low": 7}, "D_low <= D"), ({"d_high": 5}, "D <= D_high"), ({"d_out": 4}, "D_out < D_low"),
     ({"d_out": 4, "d_low": 5}, "D_out <= D/2"), ({"d_score": 7}, "D_score"), ({"prune_backoff": 0}, "backoff")],
)  # fmt: skip
def test_parameters_outside_the_specs_constraints_are_refused(change, message):
    with pytest.raises(InputError, match=re.escape(message)):
        GossipsubParams(**change).check()
    PROFILES["eth2"].check()
