"""The gossipsub oracle (`tests/gossipsub_oracle.py`) on hand-worked cases: what the heartbeat
must do by the spec's rules, whatever the draws; then its invariants on random instances."""

from __future__ import annotations

import random
from dataclasses import replace

import pytest

from tests.gossipsub_oracle import GossipsubOracle, Params, Spread, outbound, rnd, spread_oracle

MS = 1000  # microseconds
SECOND = 1000 * MS
SMALL = Params(d=2, d_low=1, d_high=3, d_out=1, prune_backoff_us=3 * SECOND, high=3, sweep=1, slack_us=0)


def test_a_connection_is_outbound_at_exactly_one_end():
    for seed in range(3):
        for a in range(12):
            for b in range(a + 1, 12):
                assert outbound(seed, a, b) != outbound(seed, b, a)
    share = sum(outbound(1, a, b) for a in range(40) for b in range(a + 1, 40)) / (40 * 39 / 2)
    assert 0.4 < share < 0.6  # a fair coin per pair


def test_a_node_that_beats_later_holds_the_peers_that_grafted_it():
    """Three nodes of one topic, 1 ms apart. Heartbeats 100 ms apart: node 0 grafts D = 2 peers at
    0 ms, both accept at 1 ms, and at 100 and 200 ms nodes 1 and 2 hold one peer, D_low: they graft
    nobody (D_out = 0). Heartbeats at one instant: each grafts both others before any GRAFT arrives."""
    subscriptions, params = [(0, 7), (1, 7), (2, 7)], replace(SMALL, d_out=0)
    apart = GossipsubOracle(subscriptions, params, phases={0: 0, 1: 100 * MS, 2: 200 * MS})
    apart.heartbeat()
    assert apart.rows() == {(7, 0, 1), (7, 0, 2), (7, 1, 0), (7, 2, 0)} and apart.grafts == 2
    together = GossipsubOracle(subscriptions, params, phases={0: 0, 1: 0, 2: 0})
    together.heartbeat()
    assert together.rows() == {(7, p, q) for p in range(3) for q in range(3) if p != q} and together.grafts == 6
    for oracle in (apart, together):
        for _ in range(5):
            oracle.heartbeat()
            assert oracle.grafts == oracle.prunes == 0


def test_an_oversubscribed_mesh_keeps_d_peers_with_its_outbound_quota():
    """Node 0's mesh of 5 is at D_high = 3 or above: at its heartbeat (0 ms) it keeps D = 2, at least
    D_out = 1 of them outbound when it has one, prunes the 3 others and backs them off for 3 s; the
    PRUNEs arrive 1 ms later and back node 0 off as long from then."""
    for seed in range(20):
        phases = {0: 0, **{q: 500 * MS for q in range(1, 6)}}
        oracle = GossipsubOracle([(p, 1) for p in range(6)], SMALL, seed=seed, phases=phases)
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
            assert oracle.backoff[(0, 1)][q] == 3 * SECOND and oracle.backoff[(q, 1)][0] == 3 * SECOND + 1 * MS
        for q in kept:
            assert 0 in oracle.mesh[(q, 1)]


def test_a_graft_within_the_backoff_is_refused_and_the_backoff_refreshed():
    """Node 1 holds a backoff of node 0 until 2.5 s. At 0 ms node 0 grafts node 1; at 1 ms node 1
    refuses with a PRUNE and backs node 0 off until 3.001 s; at 2 ms node 0 backs node 1 off until
    3.002 s. Nobody grafts until node 1's heartbeat at 3.5 s (node 0's at 3 s still holds node 1):
    its GRAFT reaches node 0 at 3.501 s, after the backoff's end, and is accepted."""
    params = Params(d=1, d_low=1, d_high=3, d_out=0, prune_backoff_us=3 * SECOND, high=4, sweep=1, slack_us=0)
    oracle = GossipsubOracle([(0, 5), (1, 5)], params, phases={0: 0, 1: 500 * MS})
    oracle.backoff[(1, 5)][0] = 2500 * MS
    oracle.heartbeat()
    assert oracle.mesh[(0, 5)] == set() and oracle.mesh[(1, 5)] == set()
    assert oracle.backoff[(1, 5)][0] == 3001 * MS and oracle.backoff[(0, 5)][1] == 3002 * MS
    assert (oracle.grafts, oracle.prunes, oracle.refused) == (1, 1, 1)
    for _ in (2, 3):
        oracle.heartbeat()
        assert oracle.grafts == 0 and oracle.rows() == set()
    oracle.heartbeat()
    assert oracle.grafts == 1 and oracle.rows() == {(5, 0, 1), (5, 1, 0)}


def test_a_backoff_is_held_past_its_end_until_a_sweep_after_its_slack():
    """go-libp2p's rule: ended backoffs go on every 15th heartbeat of the node, 2 s past their end.
    A backoff ending at 1.5 s is swept at node 0's heartbeat 15 (14 s), not before: only then does
    its empty mesh graft node 1."""
    params = Params(d=1, d_low=1, d_high=3, d_out=0, high=3)
    oracle = GossipsubOracle([(0, 5), (1, 5)], params, phases={0: 0, 1: 0})
    oracle.backoff[(0, 5)][1] = 1500 * MS
    oracle.backoff[(1, 5)][0] = 1500 * MS
    for h in range(1, 16):
        oracle.heartbeat()
        assert oracle.rows() == (set() if h < 15 else {(5, 0, 1), (5, 1, 0)}), h


def test_a_full_mesh_accepts_a_graft_only_over_an_outbound_connection():
    """Nodes 1, 2, 3 mesh with each other, each at D_high = 2; node 0 grafts all three (D = 3) at
    0 ms: at 1 ms each accepts only if its own connection to node 0 is outbound, else PRUNEs back."""
    params = Params(d=3, d_low=1, d_high=2, d_out=0, prune_backoff_us=5 * SECOND, high=3, sweep=1, slack_us=0)
    for seed in range(12):
        phases = {0: 0, 1: 500 * MS, 2: 500 * MS, 3: 500 * MS}
        oracle = GossipsubOracle([(p, 3) for p in range(4)], params, seed=seed, phases=phases)
        for a, b in ((1, 2), (1, 3), (2, 3)):
            oracle.mesh[(a, 3)].add(b)
            oracle.mesh[(b, 3)].add(a)
        oracle.heartbeat()
        accepted = {q for q in (1, 2, 3) if outbound(seed, q, 0)}
        assert oracle.mesh[(0, 3)] == accepted
        assert {q for q in (1, 2, 3) if 0 in oracle.mesh[(q, 3)]} == accepted
        assert oracle.grafts == 3 and oracle.prunes == 3 - len(accepted)
        for q in set((1, 2, 3)) - accepted:
            assert oracle.backoff[(0, 3)][q] == 2 * MS + params.prune_backoff_us


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
    assert oracle.grafts == oracle.prunes == 0  # settled: nothing in flight
    for (p, t), mesh in oracle.mesh.items():
        assert all(p in oracle.mesh[(q, t)] for q in mesh)  # one row per direction, both there
        if len(members[t]) > oracle.params.d_low:
            assert oracle.params.d_low <= len(mesh) <= oracle.params.d_high, (p, t, len(mesh))


# -- dissemination ------------------------------------------------------------------------------


def flat(_a, _b):
    return 10 * MS


def test_a_copy_walks_a_line_of_meshes_hop_by_hop():
    mesh = {0: {1}, 1: {0, 2}, 2: {1, 3}, 3: {2}}
    first, counts = spread_oracle(range(4), mesh, flat, set(range(4)), 0, 0, 1, Spread(gossip=False))
    assert first == {0: (0, 0), 1: (10 * MS, 1), 2: (20 * MS, 2), 3: (30 * MS, 3)}
    assert counts == {"messages": 3, "duplicates": 0, "ihave": 0, "iwant": 0, "idontwant": 0, "bytes": 3 * 256}


def test_a_triangle_sends_each_node_a_second_copy():
    """0 pushes to 1 and 2; each forwards to its other mesh peer (not back, not to the publisher)."""
    mesh = {0: {1, 2}, 1: {0, 2}, 2: {0, 1}}
    first, counts = spread_oracle(range(3), mesh, flat, {0, 1, 2}, 0, 0, 1, Spread(gossip=False))
    assert first == {0: (0, 0), 1: (10 * MS, 1), 2: (10 * MS, 1)}
    assert counts == {"messages": 4, "duplicates": 2, "ihave": 0, "iwant": 0, "idontwant": 0, "bytes": 4 * 256}


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


def test_idontwant_spares_a_copy_only_when_it_outruns_the_senders_uplink():
    """Copies of 1,000 bytes take 1 ms each on an 8 Mbit/s uplink, links 10 ms. 0 publishes to 1
    (arrives 11 ms) and 2 (12 ms), telling both IDONTWANT as it publishes; each forwards to the
    others but 0 and tells them IDONTWANT at once. 1's IDONTWANT reaches 3 at 21 ms, before 3's first copy (from 1, 23 ms): 3 does not send
    2 a copy, which it does without IDONTWANT. Each first copy's time is the same either way."""
    mesh = {0: {1, 2}, 1: {0, 2, 3}, 2: {0, 1, 3}, 3: {1, 2}}
    first_copies = {0: (0, 0), 1: (11 * MS, 1), 2: (12 * MS, 1), 3: (23 * MS, 2)}
    v12 = Spread(gossip=False, message_bytes=1000, idontwant_bytes=1000, upload_mbps=8.0)
    first, counts = spread_oracle(range(4), mesh, flat, set(range(4)), 0, 0, 1, v12)
    assert first == first_copies
    assert counts == {"messages": 6, "duplicates": 3, "ihave": 0, "iwant": 0, "idontwant": 7, "bytes": 6322}
    v11 = replace(v12, idontwant_bytes=0)
    first, counts = spread_oracle(range(4), mesh, flat, set(range(4)), 0, 0, 1, v11)
    assert first == first_copies and (counts["messages"], counts["duplicates"], counts["idontwant"]) == (7, 4, 0)
