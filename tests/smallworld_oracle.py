"""Pure-Python oracles for the small-world overlays: brute force, for small instances only.

GSwicoS / GSwicoL as BeaConvey Alg. 1 reads, scanning every pair at every step (no bounds, no
batches), with the project's documented tie rules: key (gain desc, u, v); the ring's zero-gain
fill joins fragments by smallest node and closes the circle; a greedy long finger takes u's slot
when free; free slots get the Chord finger.
"""

from __future__ import annotations

from tests.oracles import TopicForests, UnionFind, _topics_by_node


def phase_count(n: int) -> int:
    k = 0
    while (1 << k) < n:
        k += 1
    return k


def phase_of(distance: int) -> int:
    i = 0
    while (1 << (i + 1)) <= distance:
        i += 1
    return i


def _best(pairs, allowed, gain):
    best = None
    for u, v in pairs:
        if allowed(u, v):
            key = (-gain(u, v), u, v)
            if best is None or key < best:
                best = key
    return best


def gswico_ring_oracle(subscriptions, n):
    """(positions {node: position}, ring links [(u, v, gain)] in order, forests after the ring)."""
    forests = TopicForests(_topics_by_node(subscriptions))
    pairs = [(u, v) for u in range(n) for v in range(u + 1, n)]
    degree = [0] * n
    fragments = UnionFind(range(n))
    neighbours = {x: [] for x in range(n)}
    links = []
    target = n if n >= 3 else n - 1

    def allowed(u, v):
        if len(links) >= target or degree[u] >= 2 or degree[v] >= 2 or v in neighbours[u]:
            return False
        return fragments.find(u) != fragments.find(v) or (len(links) == n - 1 and n >= 3)

    def add(u, v, gain):
        forests.add(u, v)
        degree[u] += 1
        degree[v] += 1
        neighbours[u].append(v)
        neighbours[v].append(u)
        fragments.union(u, v)
        links.append((u, v, gain))

    while len(links) < target:
        best = _best(pairs, allowed, forests.gain)
        if best is None or best[0] == 0:
            break
        add(best[1], best[2], -best[0])
    if len(links) < target:
        paths, seen = [], set()
        for start in range(n):
            if start in seen or degree[start] == 2:
                continue
            path = [start]
            seen.add(start)
            while True:
                nxt = [x for x in neighbours[path[-1]] if x not in seen]
                if not nxt:
                    break
                path.append(nxt[0])
                seen.add(nxt[0])
            paths.append(path)
        paths.sort(key=min)
        for i, path in enumerate(paths):
            a, b = path[-1], paths[(i + 1) % len(paths)][0]
            if i == len(paths) - 1 and n < 3:
                break
            u, v = min(a, b), max(a, b)
            add(u, v, forests.gain(u, v))
    order, previous = [0], None
    if n >= 2:
        current = min(neighbours[0])
        previous = 0
        while current != 0 and len(order) < n:
            order.append(current)
            current, previous = next(x for x in neighbours[current] if x != previous), current
    return {node: i for i, node in enumerate(order)}, links, forests


def gswico_fingers_oracle(subscriptions, n, positions, ring_links, forests=None):
    """Greedy long fingers on a ring: ({(node, phase): finger}, links [(u, v, gain)] in order)."""
    if forests is None:
        forests = TopicForests(_topics_by_node(subscriptions))
        for u, v, *_ in ring_links:
            forests.add(u, v)
    linked = {(min(u, v), max(u, v)) for u, v, *_ in ring_links}
    k = phase_count(n)
    slots = {}

    def phase(a, b):
        return phase_of((positions[b] - positions[a]) % n)

    def free(a, b):
        return (a, phase(a, b)) not in slots and phase(a, b) > 0

    pairs = [(u, v) for u in range(n) for v in range(u + 1, n) if (u, v) not in linked]
    links = []
    while True:
        best = _best(pairs, lambda u, v: (u, v) not in linked and (free(u, v) or free(v, u)), forests.gain)
        if best is None or best[0] == 0:
            break
        u, v = best[1], best[2]
        owner, other = (u, v) if free(u, v) else (v, u)
        slots[(owner, phase(owner, other))] = other
        forests.add(u, v)
        linked.add((u, v))
        links.append((u, v, -best[0]))
    at = {p: node for node, p in positions.items()}
    for node in range(n):
        for i in range(1, k):
            slots.setdefault((node, i), at[(positions[node] + (1 << i)) % n])
    return slots, links
