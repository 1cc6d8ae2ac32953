"""The gossipsub oracle (`tests/gossipsub_oracle.py`) on hand-worked cases: what the heartbeat
must do by the spec's rules, whatever the draws; then its invariants on random instances."""

from __future__ import annotations

import random

import pytest

from tests.gossipsub_oracle import GossipsubOracle, Params, Spread, outbound, rnd, spread_oracle

SMALL = Params(d=2, d_low=1, d_high=3, d_out=1, prune_backoff=3)


def test_a_connection_is_outbound_at_exactly_one_end():
    for seed in range(3):
        for a in range(12):
            for b in range(a + 1, 12):
                assert outbound(seed, a, b) != outbound(seed, b, a)
    share = sum(outbound(1, a, b) for a in range(40) for b in range(a + 1, 40)) / (40 * 39 / 2)
    assert 0.4 < share < 0.6  # a fair coin per pair


def test_three_nodes_graft_each_other_at_the_first_heartbeat_and_stay():
    """Empty meshes are below D_low = 1: each node grafts D = 2 peers, all there are; every GRAFT
    meets a mesh below D_high and is accepted (or is a no-op: the peer grafted it too)."""
    oracle = GossipsubOracle([(0, 7), (1, 7), (2, 7)], SMALL)
    oracle.heartbeat()
    assert oracle.rows() == {(7, p, q) for p in range(3) for q in range(3) if p != q}
    assert oracle.grafts == 6 and oracle.prunes == 0
    for _ in range(5):
        oracle.heartbeat()
        assert oracle.grafts == oracle.prunes == 0
    assert oracle.links() == {(0, 1), (0, 2), (1, 2)}


def test_an_oversubscribed_mesh_keeps_d_peers_with_its_outbound_quota():
    """Node 0's mesh of 5 is above D_high = 3: it keeps D = 2, at least D_out = 1 of them
    outbound when it has one, and prunes the 3 others, which back node 0 off (and it them)."""
    for seed in range(20):
        oracle = GossipsubOracle([(p, 1) for p in range(6)], SMALL, seed=seed)
        oracle.heartbeats = 10
        for q in range(1, 6):  # a symmetric star around node 0; the leaves are at D_low
            oracle.mesh[(0, 1)].add(q)
            oracle.mesh[(q, 1)].add(0)
        oracle.heartbeat()
        kept = oracle.mesh[(0, 1)]
        pruned = set(range(1, 6)) - kept
        assert len(kept) == 2 and len(pruned) == 3
        if any(outbound(seed, 0, q) for q in range(1, 6)):
            assert any(outbound(seed, 0, q) for q in kept)
        for q in pruned:
            assert 0 not in oracle.mesh[(q, 1)]  # the PRUNE reached it
            assert oracle.backoff[(q, 1)][0] == oracle.backoff[(0, 1)][q] == 11 + SMALL.prune_backoff
        for q in kept:
            assert 0 in oracle.mesh[(q, 1)]


def test_a_graft_within_the_backoff_is_refused_and_the_backoff_refreshed():
    """After heartbeat 1, node 1 backs node 0 off until heartbeat 4 and both meshes are empty. At
    heartbeat 2 node 0 grafts node 1 (node 1 grafts nobody: its one peer is backed off); node 1
    refuses with a PRUNE and backs node 0 off again, until 5, and node 0 backs node 1 off as
    long; at heartbeat 5 both graft each other."""
    params = Params(d=1, d_low=1, d_high=3, d_out=0, prune_backoff=3)
    oracle = GossipsubOracle([(0, 5), (1, 5)], params)
    oracle.heartbeats = 1
    oracle.backoff[(1, 5)][0] = 4
    oracle.heartbeat()
    assert oracle.mesh[(0, 5)] == set() and oracle.mesh[(1, 5)] == set()
    assert oracle.backoff[(1, 5)][0] == oracle.backoff[(0, 5)][1] == 2 + params.prune_backoff
    assert oracle.grafts == 1 and oracle.prunes == 1
    for _ in (3, 4):
        oracle.heartbeat()
        assert oracle.grafts == 0 and oracle.rows() == set()
    oracle.heartbeat()
    assert oracle.grafts == 2 and oracle.rows() == {(5, 0, 1), (5, 1, 0)}


def test_a_full_mesh_accepts_a_graft_only_over_an_outbound_connection():
    """Nodes 1, 2, 3 mesh with each other, each at D_high = 2; node 0 grafts all three (D = 3):
    each accepts only if its own connection to node 0 is outbound."""
    params = Params(d=3, d_low=1, d_high=2, d_out=0, prune_backoff=5)
    for seed in range(12):
        oracle = GossipsubOracle([(p, 3) for p in range(4)], params, seed=seed)
        for a, b in ((1, 2), (1, 3), (2, 3)):
            oracle.mesh[(a, 3)].add(b)
            oracle.mesh[(b, 3)].add(a)
        oracle.heartbeat()
        accepted = {q for q in (1, 2, 3) if outbound(seed, q, 0)}
        assert oracle.mesh[(0, 3)] == accepted
        assert {q for q in (1, 2, 3) if 0 in oracle.mesh[(q, 3)]} == accepted
        assert oracle.grafts == 3 and oracle.prunes == 3 - len(accepted)
        for q in set((1, 2, 3)) - accepted:
            assert oracle.backoff[(0, 3)][q] == 1 + params.prune_backoff


@pytest.mark.parametrize("seed", range(4))
def test_random_instances_keep_symmetric_meshes_within_the_bounds_after_warm_up(seed):
    draw = random.Random(seed)
    subs = {(p, t) for p in range(60) for t in draw.sample(range(8), draw.randint(1, 3))}
    oracle = GossipsubOracle(sorted(subs), seed=seed)
    members = {t: {p for p, u in subs if u == t} for t in range(8)}
    for _ in range(40):
        oracle.heartbeat()
        for (p, t), mesh in oracle.mesh.items():
            assert p not in mesh and mesh <= members[t]
            assert all(p in oracle.mesh[(q, t)] for q in mesh)  # one row per direction, both there
    for (p, t), mesh in oracle.mesh.items():
        if len(members[t]) > oracle.params.d_low:
            assert oracle.params.d_low <= len(mesh) <= oracle.params.d_high, (p, t, len(mesh))


# -- dissemination ------------------------------------------------------------------------------
MS = 1000  # microseconds


def flat(_a, _b):
    return 10 * MS


def test_a_copy_walks_a_line_of_meshes_hop_by_hop():
    mesh = {0: {1}, 1: {0, 2}, 2: {1, 3}, 3: {2}}
    first, counts = spread_oracle(range(4), mesh, flat, set(range(4)), 0, 0, 1, Spread(gossip=False))
    assert first == {0: (0, 0), 1: (10 * MS, 1), 2: (20 * MS, 2), 3: (30 * MS, 3)}
    assert counts == {"messages": 3, "duplicates": 0, "ihave": 0, "iwant": 0}


def test_a_triangle_sends_each_node_a_second_copy():
    """0 pushes to 1 and 2; each forwards to its other mesh peer (not back, not to the publisher)."""
    mesh = {0: {1, 2}, 1: {0, 2}, 2: {0, 1}}
    first, counts = spread_oracle(range(3), mesh, flat, {0, 1, 2}, 0, 0, 1, Spread(gossip=False))
    assert first == {0: (0, 0), 1: (10 * MS, 1), 2: (10 * MS, 1)}
    assert counts == {"messages": 4, "duplicates": 2, "ihave": 0, "iwant": 0}


def test_a_dead_mesh_peer_is_skipped_and_flood_publish_reaches_every_live_member():
    mesh = {0: {1}, 1: {0, 2}, 2: {1}, 3: set()}
    first, _ = spread_oracle(range(4), mesh, flat, {0, 2, 3}, 0, 0, 1, Spread(gossip=False))
    assert first == {0: (0, 0)}  # 1 is down: nothing goes past it, and 3 has no mesh peer
    first, counts = spread_oracle(range(4), mesh, flat, {0, 2, 3}, 0, 0, 1, Spread(gossip=False, flood_publish=True))
    assert first == {0: (0, 0), 2: (10 * MS, 1), 3: (10 * MS, 1)} and counts["messages"] == 2


def test_gossip_brings_a_copy_to_a_node_outside_every_mesh():
    """Node 2 meshes with nobody: the first heartbeat of 0 or 1 after its copy sends it an IHAVE,
    2 answers IWANT, and the copy comes three latencies after that heartbeat."""
    seed, heartbeat = 3, 1000 * MS
    mesh = {0: {1}, 1: {0}, 2: set()}
    first, counts = spread_oracle(range(3), mesh, flat, {0, 1, 2}, 0, 7, seed, Spread(heartbeat_us=heartbeat))

    def next_heartbeat(v, after):
        phase = rnd(seed, 29, v) % heartbeat
        return phase + ((after - phase) // heartbeat + 1) * heartbeat

    earliest = min(next_heartbeat(0, 0), next_heartbeat(1, 10 * MS))
    assert first[2] == (earliest + 30 * MS, 1 if earliest == next_heartbeat(0, 0) else 2)
    assert counts["ihave"] == 3 + 3 + 6  # 0 and 1: three heartbeats to node 2; 2: three to both
    assert counts["iwant"] >= 1 and counts["messages"] == 1 + counts["iwant"]
    assert counts["duplicates"] == counts["iwant"] - 1
