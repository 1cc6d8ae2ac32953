"""The compiled spread yardstick (`benchmarks/spread_yardstick.py`) against the oracle's
`spread_oracle`: every publication's first copies (time, hops), its counts, on random instances
with meshes from the oracle's heartbeats or random (asymmetric, some empty), members down,
publishers down (spared), outside their mesh and outside their topic, latencies with many ties, and
every option of the spread: gossip, flood publishing, IDONTWANT, uplinks, connections."""

from __future__ import annotations

import math
import random
from functools import cache

import numpy as np
import pytest

from benchmarks import spread_yardstick as yardstick
from tests.gossipsub_oracle import GossipsubOracle, Params, Spread, rnd, spread_oracle

pytestmark = pytest.mark.ci  # a benchmark's check: in the CI pass (cold numba compiles are most of it)

SEEDS = range(10)
BIG = {"message_bytes": 4096}
CONFIGS = {  # name: (the spread's settings, whether the connections are given)
    "gossip": (Spread(heartbeat_us=700_000), False),
    "push": (Spread(gossip=False), False),
    "flood-publish": (Spread(flood_publish=True), False),
    "idontwant": (Spread(idontwant_bytes=1024, **BIG), False),
    "idontwant-uplink": (Spread(idontwant_bytes=1024, upload_mbps=20.0, **BIG), False),
    "uplink": (Spread(upload_mbps=20.0, **BIG), False),
    "push-flood-idontwant-uplink": (
        Spread(gossip=False, flood_publish=True, idontwant_bytes=1024, upload_mbps=20.0, **BIG),
        False,
    ),  # fmt: skip
    "connections": (Spread(flood_publish=True, d_lazy=2, gossip_factor=0.5, mcache_gossip=2), True),
    "connections-idontwant": (Spread(idontwant_bytes=256, heartbeat_us=300_000), True),
}


def instance(seed: int):
    """Subscriptions, mesh rows, positions, who is up, connections and publications (publisher,
    topic) with their ids, of one random instance."""
    draw = random.Random(seed)
    nodes, topics = draw.randint(20, 60), draw.randint(3, 6)
    subs = {(v, t) for v in range(nodes) for t in draw.sample(range(topics), draw.randint(1, 3))}
    members = {t: sorted(v for v, u in subs if u == t) for t in range(topics)}
    for t in range(topics):  # two members at least
        for v in draw.sample(range(nodes), 2):
            subs.add((v, t))
        members[t] = sorted(v for v, u in subs if u == t)
    if seed % 3 == 0:  # a coarse grid: many equal latencies, some nodes at one point (latency 0)
        positions = np.asarray([(draw.randint(0, 4), draw.randint(0, 4)) for _ in range(nodes)], dtype=float)
    else:
        positions = np.asarray([(draw.uniform(0, 90), draw.uniform(0, 90)) for _ in range(nodes)])
    if seed % 2 == 0:  # meshes of a few heartbeats of the oracle (small D: they overflow and prune)
        latency = latency_of(positions)
        oracle = GossipsubOracle(
            sorted(subs), Params(d=3, d_low=2, d_high=5, d_out=1, high=5), seed=seed, latency=latency
        )
        for _ in range(draw.randint(2, 5)):
            oracle.heartbeat()
        rows = sorted(oracle.rows())
    else:  # random meshes: asymmetric, some empty
        rows = []
        for t, vs in members.items():
            for v in vs:
                others = [w for w in vs if w != v]
                rows += [(t, v, w) for w in draw.sample(others, min(len(others), draw.choice([0, 1, 2, 3, 4])))]
    up = np.asarray([draw.random() > 0.25 for _ in range(nodes)])
    connections = [(a, b) for a in range(nodes) for b in range(a + 1, nodes) if draw.random() < 0.35]
    meshed = {(t, v) for t, v, _ in rows}
    publications = []
    for t, vs in members.items():
        publications += [(v, t) for v in draw.sample(vs, 2)]
        outside = [v for v in range(nodes) if v not in vs]
        if outside and draw.random() < 0.6:
            publications.append((draw.choice(outside), t))  # a publisher outside its topic
        meshless = [v for v in vs if (t, v) not in meshed]
        if meshless:
            publications.append((draw.choice(meshless), t))  # a publisher with no mesh peer
    pub_ids = [7 * k + seed for k in range(len(publications))]
    return sorted(subs), rows, positions, up, connections, publications, pub_ids


def latency_of(positions):
    def latency(a, b):
        return round(1000.0 * math.hypot(positions[a][0] - positions[b][0], positions[a][1] - positions[b][1]))

    return latency


@cache
def compare(seed: int) -> dict:
    """Every publication of the instance under every configuration: the yardstick's result is the
    oracle's (asserted); returns how often the hard paths were taken."""
    subs, rows, positions, up, connections, publications, pub_ids = instance(seed)
    members: dict[int, list[int]] = {}
    for v, t in subs:
        members.setdefault(t, []).append(v)
    mesh: dict[int, dict[int, set[int]]] = {t: {v: set() for v in vs} for t, vs in members.items()}
    for t, v, w in rows:
        mesh[t][v].add(w)
    linked: dict[int, set[int]] = {}
    for a, b in connections:
        linked.setdefault(a, set()).add(b)
        linked.setdefault(b, set()).add(a)
    latency = latency_of(positions)
    spread_seed = 3 * seed + 1
    seen = dict.fromkeys(
        ("publications", "by_iwant", "iwant_duplicates", "duplicates", "members_down", "missed", "publisher_down",
         "publisher_outside", "publisher_meshless", "publisher_in_no_mesh", "idontwant", "spared", "flood_publish_only"),
        0,
    )  # fmt: skip
    messages = {}
    for name, (spread, connected) in CONFIGS.items():
        given = connections if connected else None
        result = yardstick.simulate(subs, rows, positions, up, publications, spread_seed, spread, given, pub_ids)
        lean = yardstick.simulate(
            subs, rows, positions, up, publications, spread_seed, spread, given, pub_ids, skip_held=True
        )
        for field in ("counts", "first_us", "hops", "via"):  # IHAVEs to holders left out: the same results
            assert np.array_equal(getattr(lean, field), getattr(result, field)), (name, field)
        for p, ((publisher, t), pub) in enumerate(zip(publications, pub_ids)):
            alive = {v for v in members[t] if up[v]} | {publisher}
            reach = None
            if connected:
                reach = {v: linked.get(v, set()) & set(members[t]) for v in [*members[t], publisher]}
            first, counts = spread_oracle(
                members[t], mesh[t], latency, alive, publisher, pub, spread_seed, spread, reach
            )
            assert result.first(p) == first, (name, p)
            assert result.count(p) == counts, (name, p)
            via = result.by_iwant(p)
            assert via <= set(first) - {publisher} and len(via) <= counts["iwant"]
            seen["publications"] += 1
            seen["by_iwant"] += len(via)
            seen["iwant_duplicates"] += counts["iwant"] > len(via) and counts["duplicates"] > 0
            seen["duplicates"] += counts["duplicates"]
            seen["members_down"] += sum(not up[v] and v != publisher for v in members[t])
            seen["missed"] += len(alive - set(first))
            seen["publisher_down"] += not up[publisher]
            seen["publisher_outside"] += publisher not in members[t]
            seen["publisher_meshless"] += publisher in members[t] and not mesh[t][publisher]
            seen["publisher_in_no_mesh"] += all(publisher not in peers for peers in mesh[t].values())
            seen["idontwant"] += counts["idontwant"]
            if name == "push-flood-idontwant-uplink" and not mesh[t].get(publisher):
                seen["flood_publish_only"] += len(first) > 1
            messages[(name, p)] = counts["messages"]
    for p in range(len(publications)):  # IDONTWANT spared copies that the uplink held back
        seen["spared"] += messages[("idontwant-uplink", p)] < messages[("uplink", p)]
    return seen


@pytest.mark.parametrize("seed", SEEDS)
def test_each_publication_spreads_as_the_oracles(seed):
    seen = compare(seed)
    assert seen["publications"] >= 8 * len(CONFIGS)


def test_the_hard_paths_were_taken():
    """Over the instances: first copies by IWANT and IWANTs bringing duplicates, duplicates, members
    down and live members missed, publishers down, outside their topic, with no mesh peer and in
    no mesh, IDONTWANT sent and copies it spared, flood publishing reaching members past an empty
    mesh."""
    totals: dict[str, int] = {}
    for seed in SEEDS:
        for key, value in compare(seed).items():
            totals[key] = totals.get(key, 0) + value
    assert all(value > 0 for value in totals.values()), totals


def test_the_publications_are_chosen_as_the_lab_chooses_them():
    """`choose` against the rule written with the oracle's draws (docs/readings/gossipsub.md#spread:
    as push-pull chooses them)."""
    draw = random.Random(5)
    nodes = 80
    subs = sorted({(draw.randrange(nodes), draw.randrange(40)) for _ in range(300)})
    for seed, share in ((1, 0.0), (4, 0.2), (9, 1.0)):
        publications, up = yardstick.choose(subs, seed, 12, share, nodes)
        members: dict[int, list[int]] = {}
        for v, t in subs:
            members.setdefault(t, []).append(v)
        topics = sorted((t for t, vs in members.items() if len(vs) >= 2), key=lambda t: (rnd(seed, 11, -1, t), t))
        want = [(min(members[t], key=lambda v, t=t: (rnd(seed, 11, t, v), v)), t) for t in topics[:12]]
        assert publications.tolist() == [list(w) for w in want]
        limit = int(share * 2.0**64)
        assert up.tolist() == [share < 1.0 and rnd(seed, 12, 0, v) >= limit for v in range(nodes)]


def test_a_mesh_row_outside_its_topic_is_refused():
    positions = np.zeros((3, 2))
    with pytest.raises(ValueError, match="peer does not subscribe"):
        yardstick.layout([(0, 0), (1, 0), (2, 1)], [(0, 0, 2)], positions)
