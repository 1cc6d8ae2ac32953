"""Random pub/sub instances for the tests: one generator, shared by every module that needs one."""

from __future__ import annotations

import math
import random


def random_instance(dist: str, nodes: int, topics: int, low: int, high: int, seed: int, skip_every: int = 0) -> list:
    """(node, topic) pairs: each node picks k in [low, high] topics by weight, without replacement
    (unif: equal weights, many ties; zipf: a few dense topics; expo: between). `skip_every` > 0:
    every node with `node % skip_every == skip_every // 2` gets none (ids with gaps)."""
    rng = random.Random(seed)
    weight = {
        "unif": lambda r: 1.0,
        "zipf": lambda r: (r + 1) ** -2.0,
        "expo": lambda r: math.exp(-10.0 * r / topics),
    }[dist]
    subscriptions = []
    for node in range(nodes):
        if skip_every and node % skip_every == skip_every // 2:
            continue
        k = rng.randint(low, high)
        keys = sorted(range(topics), key=lambda r: -(rng.random() ** (1.0 / weight(r))))
        subscriptions += [(node, topic) for topic in keys[:k]]
    return subscriptions
