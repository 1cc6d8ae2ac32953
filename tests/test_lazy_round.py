"""The lazy partition sample (`overlay.design.lazy_round`) against a pure-Python oracle that
computes every gain, on random partitions with stale bounds, ties and dead rows."""

from __future__ import annotations

import random

import numpy as np
import pytest

from overlay.design.lazy_round import lazy_sample


def oracle_sample(subs, label, head, rows, eligible, nodes, per_node, top):
    """Every gain fresh; the stream of eligible rows with a positive gain and bound, in key
    order; the first `top`, the first `per_node` of each node, tails and the first left out."""

    def apart(i, j):
        a, b = label[i], label[j]
        if a < 0 or b < 0:
            return True
        if a == b:
            return False
        return not (head and (head[a] == j or head[b] == i))

    def gain(u, v):
        return sum(1 for t, i in subs[u].items() if t in subs[v] and apart(i, subs[v][t]))

    gains = [gain(u, v) for u, v, _ in rows]
    stream = sorted(
        (r for r, (u, v, bound) in enumerate(rows) if bound > 0 and eligible[r] and gains[r] > 0),
        key=lambda r: (-gains[r], rows[r][0], rows[r][1]),
    )
    count = [0] * nodes
    taken, tails, first_left = [], {}, None
    for position, r in enumerate(stream):
        u, v, _ = rows[r]
        if position < top or count[u] < per_node or count[v] < per_node:
            taken.append((r, gains[r]))
        elif first_left is None:
            first_left = (r, gains[r])
        for x in (u, v):
            if count[x] == per_node:
                tails[x] = (r, gains[r])
            count[x] += 1
    return taken, tails, first_left, gains


def random_partition(rng):
    nodes, topics = rng.randint(2, 12), rng.randint(1, 6)
    subs, offsets, flat = [], [0], []
    for _ in range(nodes):
        mine = sorted(rng.sample(range(topics), rng.randint(0, topics)))
        subs.append({})
        for t in mine:
            subs[-1][t] = len(flat)
            flat.append(t)
        offsets.append(len(flat))
    classes = rng.randint(1, 4)
    label = [rng.choice([-1] + list(range(classes))) for _ in flat]
    head = [rng.randrange(len(flat)) for _ in range(classes)] if flat and rng.random() < 0.4 else []
    return nodes, subs, offsets, flat, label, head


@pytest.mark.parametrize("seed", range(300))
def test_the_lazy_sample_is_the_eager_one(seed):
    rng = random.Random(seed)
    nodes, subs, offsets, flat, label, head = random_partition(rng)
    pairs = [(u, v) for u in range(nodes) for v in range(u + 1, nodes) if rng.random() < 0.8]
    rng.shuffle(pairs)
    pairs = sorted(pairs[: rng.randint(0, len(pairs))])  # a partition holds rows in (u, v) order
    eligible = [rng.random() < 0.85 for _ in pairs]
    per_node, top = rng.randint(1, 3), rng.randint(0, 6)
    # Bounds: the gain itself (ties), a stale larger value, or 0 (a dead row).
    _, _, _, fresh = oracle_sample(subs, label, head, [(u, v, 1) for u, v in pairs], [True] * len(pairs), nodes, 1, 0)
    bounds = [0 if rng.random() < 0.1 else g + rng.choice([0, 0, 1, 2, 5]) for g in fresh]
    rows = [(u, v, b) for (u, v), b in zip(pairs, bounds)]
    taken, tails, first_left, gains = oracle_sample(subs, label, head, rows, eligible, nodes, per_node, top)

    us = np.array([u for u, _ in pairs], dtype=np.int64)
    vs = np.array([v for _, v in pairs], dtype=np.int64)
    stored = np.array(bounds, dtype=np.int64)
    order = np.lexsort((vs, us, -stored))
    got = lazy_sample(
        np.array(offsets, dtype=np.int64),
        np.array(flat or [0], dtype=np.int64)[: len(flat)],
        np.array(label, dtype=np.int64),
        np.array(head, dtype=np.int64),
        us,
        vs,
        stored,
        order,
        np.array(eligible, dtype=np.bool_),
        nodes,
        per_node,
        top,
    )
    rows_taken, tail_row, left, visited = got  # the gains of the rows returned are their new bounds
    assert [(r, int(stored[r])) for r in rows_taken.tolist()] == taken
    assert {x: (int(tail_row[x]), int(stored[tail_row[x]])) for x in range(nodes) if tail_row[x] >= 0} == tails
    assert (None if left < 0 else (left, int(stored[left]))) == first_left
    # Visited rows now carry their fresh gain, the others their old bound: bounds stay valid.
    assert all(stored[r] == bounds[r] or stored[r] == gains[r] for r in range(len(pairs)))
    assert all(stored[r] >= gains[r] or bounds[r] == 0 for r in range(len(pairs)))
    assert visited <= sum(1 for r in range(len(pairs)) if bounds[r] > 0 and eligible[r])


def test_rows_that_cannot_change_the_sample_are_not_refreshed():
    """Four nodes on one topic, every pair gain 1, per_node 1, top 0: in key order (0,1), (0,2),
    (0,3) are sampled, (1,2) is the first left out, (1,3) gives node 3 its tail; then both ends
    of (2,3) have tails and the first left out is known, so its gain is never computed."""
    offsets, topics = np.arange(5, dtype=np.int64), np.zeros(4, dtype=np.int64)
    pairs = [(0, 1), (0, 2), (0, 3), (1, 2), (1, 3), (2, 3)]
    us, vs = (np.array(c, dtype=np.int64) for c in zip(*pairs))
    bounds = np.ones(6, dtype=np.int64)  # exact (stale bounds would hold every row back to the end)
    taken, tail_row, left, visited = lazy_sample(
        offsets,
        topics,
        np.arange(4, dtype=np.int64),
        np.zeros(0, dtype=np.int64),
        us,
        vs,
        bounds,
        np.arange(6),
        np.ones(6, dtype=np.bool_),
        4,
        1,
        0,
    )
    assert taken.tolist() == [0, 1, 2] and left == 3 and tail_row.tolist() == [1, 3, 3, 4]
    assert visited == 5
