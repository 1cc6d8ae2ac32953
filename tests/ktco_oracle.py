"""Pure-Python references for fault-tolerant overlays (kTCO, PODC'13; docs/readings/ktco.md#oracle).

Small instances only (|V| <= 40): vertex connectivity by brute force over removal sets and by
node-split max-flow (Menger), blocks by Hopcroft-Tarjan and by their definition, GM2 recomputing
every estimate at every step, HararyPT's per-topic Harary graphs. Shares no code with `overlay/`.
Subscriptions are (node, topic) pairs and links (u, v) pairs, as in `tests/oracles.py`.
"""

from __future__ import annotations

from collections import deque
from itertools import combinations


def _adjacency(nodes, edges) -> dict:
    nodes = set(nodes)
    adjacency = {v: set() for v in nodes}
    for u, v in edges:
        if u != v and u in nodes and v in nodes:
            adjacency[u].add(v)
            adjacency[v].add(u)
    return adjacency


def is_connected(nodes, edges) -> bool:
    adjacency = _adjacency(nodes, edges)
    if len(adjacency) <= 1:
        return True
    start = next(iter(adjacency))
    seen, queue = {start}, deque([start])
    while queue:
        for y in adjacency[queue.popleft()] - seen:
            seen.add(y)
            queue.append(y)
    return len(seen) == len(adjacency)


def is_clique(nodes, edges) -> bool:
    adjacency = _adjacency(nodes, edges)
    return all(len(neighbours) == len(adjacency) - 1 for neighbours in adjacency.values())


def vertex_connectivity_brute(nodes, edges) -> int:
    """kappa(G): the fewest vertices whose removal disconnects G or leaves one vertex; n - 1 for
    a clique on n vertices (0 for one vertex or none)."""
    nodes = sorted(set(nodes))
    if is_clique(nodes, edges):
        return max(len(nodes) - 1, 0)
    for size in range(len(nodes) - 1):
        for removed in combinations(nodes, size):
            left = set(nodes) - set(removed)
            if not is_connected(left, edges):
                return size
    return len(nodes) - 1  # not reached: a non-clique has a separating set


def _disjoint_paths(adjacency, s, t) -> int:
    """Internally vertex-disjoint s-t paths (s, t not adjacent): unit-capacity max-flow on the
    node-split graph, augmenting by BFS."""
    capacity = {}

    def arc(a, b):
        capacity[(a, b)] = capacity.get((a, b), 0) + 1
        capacity.setdefault((b, a), 0)

    out = {}
    for v in adjacency:
        arc((v, "in"), (v, "out"))
        for w in adjacency[v]:
            arc((v, "out"), (w, "in"))
    for a, b in capacity:
        out.setdefault(a, []).append(b)
    source, sink, flow = (s, "out"), (t, "in"), 0
    while True:
        parent, queue = {source: None}, deque([source])
        while queue and sink not in parent:
            a = queue.popleft()
            for b in out.get(a, ()):
                if b not in parent and capacity[(a, b)] > 0:
                    parent[b] = a
                    queue.append(b)
        if sink not in parent:
            return flow
        b = sink
        while parent[b] is not None:
            a = parent[b]
            capacity[(a, b)] -= 1
            capacity[(b, a)] += 1
            b = a
        flow += 1


def vertex_connectivity_flow(nodes, edges) -> int:
    """kappa(G) by Menger: the fewest disjoint paths over non-adjacent pairs (n - 1 for a
    clique), 0 when G is not connected."""
    adjacency = _adjacency(nodes, edges)
    if not is_connected(adjacency, edges):
        return 0
    pairs = [(s, t) for s, t in combinations(sorted(adjacency), 2) if t not in adjacency[s]]
    if not pairs:
        return max(len(adjacency) - 1, 0)
    return min(_disjoint_paths(adjacency, s, t) for s, t in pairs)


def ktco_ok(nodes, edges, k: int) -> bool:
    """docs/readings/ktco.md#validity: a topic with n subscribers is fine for k when n <= 1, or
    n <= k and G(t) is a clique, or n > k and kappa(G(t)) >= k."""
    nodes = set(nodes)
    if len(nodes) <= 1:
        return True
    if len(nodes) <= k:
        return is_clique(nodes, edges)
    return vertex_connectivity_flow(nodes, edges) >= k


def subscribers(subscriptions) -> dict:
    topics = {}
    for node, topic in subscriptions:
        topics.setdefault(topic, set()).add(node)
    return topics


def is_ktco(subscriptions, edges, k: int) -> bool:
    return all(ktco_ok(nodes, edges, k) for nodes in subscribers(subscriptions).values())


def blocks(nodes, edges) -> list[frozenset]:
    """Blocks (maximal 2-connected subgraphs) by Hopcroft-Tarjan: a bridge is a two-vertex block,
    an isolated vertex a block by itself."""
    adjacency = _adjacency(nodes, edges)
    order, low, found = {}, {}, []
    stack = []  # edges (a, b) of the blocks being built

    def visit(v, parent):
        order[v] = low[v] = len(order)
        for w in sorted(adjacency[v]):
            if w == parent:
                continue
            if w not in order:
                stack.append((v, w))
                visit(w, v)
                low[v] = min(low[v], low[w])
                if low[w] >= order[v]:
                    block = set()
                    while True:
                        a, b = stack.pop()
                        block |= {a, b}
                        if (a, b) == (v, w):
                            break
                    found.append(frozenset(block))
            elif order[w] < order[v]:
                stack.append((v, w))
                low[v] = min(low[v], order[w])

    for v in sorted(adjacency):
        if v not in order:
            visit(v, None)
            if not adjacency[v]:
                found.append(frozenset({v}))
    return found


def share_a_block_by_definition(nodes, edges, u, w) -> bool:
    """u != w lie in one block iff they are adjacent, or connected and no single other vertex
    separates them (Menger)."""
    adjacency = _adjacency(nodes, edges)
    if w in adjacency[u]:
        return True
    if not is_connected_pair(adjacency, u, w, removed=None):
        return False
    return all(is_connected_pair(adjacency, u, w, removed=x) for x in adjacency if x not in (u, w))


def is_connected_pair(adjacency, u, w, removed) -> bool:
    seen, queue = {u}, deque([u])
    while queue:
        for y in adjacency[queue.popleft()]:
            if y != removed and y not in seen:
                seen.add(y)
                queue.append(y)
    return w in seen


def estimates(subscriptions, edges) -> dict:
    """est(v, w) = the shared topics on which v and w lie in no common block of G(t), for every
    pair v < w that is not a link (docs/readings/ktco.md#gm2)."""
    linked = {(min(u, v), max(u, v)) for u, v in edges if u != v}
    result = {}
    for nodes in subscribers(subscriptions).values():
        holding = {}
        for b, block in enumerate(blocks(nodes, edges)):
            for v in block:
                holding.setdefault(v, set()).add(b)
        for v, w in combinations(sorted(nodes), 2):
            if (v, w) not in linked and not holding[v] & holding[w]:
                result[(v, w)] = result.get((v, w), 0) + 1
    return result


def gm2_ref(subscriptions, start=(), prefer=()) -> list[tuple[int, int, int]]:
    """GM2 (Alg. 1): while some estimate is positive, add the non-link with the largest, ties
    by the smallest (min id, max id); [(u, v, est)] in order. Every estimate recomputed at
    every step. `start`: links already in the overlay (not returned); `prefer`: pairs that go
    first among equal estimates (a rebuild's yesterday links)."""
    preferred = {(min(u, v), max(u, v)) for u, v in prefer}
    sequence: list[tuple[int, int, int]] = []
    while True:
        current = estimates(subscriptions, [*start, *((u, v) for u, v, _ in sequence)])
        if not current:
            return sequence
        (u, v), gain = min(current.items(), key=lambda item: (-item[1], item[0] not in preferred, item[0]))
        sequence.append((u, v, gain))


def verify_gm2_sequence(subscriptions, sequence) -> None:
    """Each added link had the largest estimate of its step (its gain as recorded), and the
    result is a 2TCO with no positive estimate left."""
    links: list[tuple[int, int]] = []
    for step, (u, v, gain) in enumerate(sequence):
        current = estimates(subscriptions, links)
        best = max(current.values(), default=0)
        assert current.get((min(u, v), max(u, v))) == gain == best, (step, u, v, gain, best)
        links.append((u, v))
    assert not estimates(subscriptions, links)
    assert is_ktco(subscriptions, links, 2)


def harary(k: int, sequence) -> set[tuple[int, int]]:
    """The Harary graph H(k, n) over `sequence` (positions 0..n-1), as
    docs/readings/ktco.md#harary-pt builds it: a clique when n <= k; links (min, max) in node
    ids."""
    n = len(sequence)
    pairs = set()
    if n <= 1:
        return pairs
    if n <= k:
        return {(min(a, b), max(a, b)) for a, b in combinations(sequence, 2)}
    for i in range(n):
        for step in range(1, k // 2 + 1):
            pairs.add((i, (i + step) % n))
    if k % 2 and n % 2 == 0:
        pairs |= {(i, i + n // 2) for i in range(n // 2)}
    elif k % 2:
        pairs |= {(i, (i + (n + 1) // 2) % n) for i in range((n - 1) // 2 + 1)}
    links = {(min(sequence[a], sequence[b]), max(sequence[a], sequence[b])) for a, b in pairs}
    return {link for link in links if link[0] != link[1]}


def harary_pt(subscriptions, k: int, order=None) -> set[tuple[int, int]]:
    """HararyPT (Alg. 2): one global node order (ids by default), H(k, n_t) per topic over its
    subscribers in that order, the union without repeats."""
    rank = (lambda v: v) if order is None else {v: i for i, v in enumerate(order)}.__getitem__
    links: set[tuple[int, int]] = set()
    for nodes in subscribers(subscriptions).values():
        links |= harary(k, sorted(nodes, key=rank))
    return links


MASK64 = (1 << 64) - 1


def splitmix64(z: int) -> int:
    """SplitMix64 (Steele, Lea, Flood 2014) of z + gamma, on Python integers mod 2^64."""
    z = (z + 0x9E3779B97F4A7C15) & MASK64
    z = ((z ^ (z >> 30)) * 0xBF58476D1CE4E5B9) & MASK64
    z = ((z ^ (z >> 27)) * 0x94D049BB133111EB) & MASK64
    return z ^ (z >> 31)


def draw(seed: int, purpose: int, *values: int) -> int:
    """docs/readings/ktco.md#draws: splitmix64 folded over (seed, purpose, values...)."""
    state = splitmix64(splitmix64(seed & MASK64) ^ purpose)
    for value in values:
        state = splitmix64(state ^ (value & MASK64))
    return state


def cycle_pt(subscriptions, seed: int) -> set[tuple[int, int]]:
    """CyclePT: topic t orders its subscribers by draw(seed, 1, t, node) (ties by node) and gets
    a cycle over that order (one link for two subscribers)."""
    links: set[tuple[int, int]] = set()
    for topic, nodes in subscribers(subscriptions).items():
        links |= harary(2, sorted(nodes, key=lambda v: (draw(seed, 1, topic, v), v)))
    return links


def random_node_order(subscriptions, seed: int) -> list[int]:
    """HararyPT's random global order: nodes by draw(seed, 2, node), ties by node."""
    nodes = sorted({v for v, _ in subscriptions})
    return sorted(nodes, key=lambda v: (draw(seed, 2, v), v))


def resilience(subscriptions, links, nodes: int, model: str, share: float, trial: int, seed: int) -> dict:
    """One failure scenario, by definition: which nodes (or links) fail, then the TCCs of the
    surviving overlay on the surviving subscriptions. random-nodes: the first floor(share n + 1/2)
    nodes by (draw(seed, 3, trial, node), node); targeted-nodes: by (-degree, node); random-links:
    links by (draw(seed, 4, trial, u << 32 | v), u, v)."""
    links = sorted({(min(u, v), max(u, v)) for u, v in links if u != v})
    if model == "random-links":
        count = min(len(links), int(share * len(links) + 0.5))
        order = sorted(links, key=lambda link: (draw(seed, 4, trial, (link[0] << 32) | link[1]), link))
        dead_links, dead = set(order[:count]), set()
    else:
        degree = {v: 0 for v in range(nodes)}
        for u, v in links:
            degree[u] += 1
            degree[v] += 1
        key = (lambda v: (-degree[v], v)) if model == "targeted-nodes" else (lambda v: (draw(seed, 3, trial, v), v))
        count = min(nodes, int(share * nodes + 0.5))
        dead, dead_links = set(sorted(range(nodes), key=key)[:count]), set()
    kept = [(u, v) for u, v in links if (u, v) not in dead_links and u not in dead and v not in dead]
    total = {
        "survivors": nodes - len(dead),
        "subscriptions": 0,
        "topics": 0,
        "tcc": 0,
        "shared_topics": 0,
        "connected_topics": 0,
    }
    for members in subscribers(subscriptions).values():
        alive = sorted(set(members) - dead)
        if not alive:
            continue
        adjacency = _adjacency(alive, kept)
        parts, seen = 0, set()
        for v in alive:
            if v not in seen:
                parts += 1
                stack = [v]
                seen.add(v)
                while stack:
                    for w in adjacency[stack.pop()]:
                        if w not in seen:
                            seen.add(w)
                            stack.append(w)
        total["subscriptions"] += len(alive)
        total["topics"] += 1
        total["tcc"] += parts
        if len(alive) >= 2:
            total["shared_topics"] += 1
            total["connected_topics"] += parts == 1
    return total


def gm2_lazy(subscriptions) -> list[tuple[int, int, int]]:
    """GM2 as a plain lazy greedy, fast enough for benchmarks: a heap of (-bound, u, v) over the
    pairs that share a topic (bounds start at the shared count; estimates never grow), each
    topic's blocks recomputed (Hopcroft-Tarjan) when a link lands in it. Same sequence as
    `gm2_ref` (the tests check)."""
    import heapq
    import sys

    sys.setrecursionlimit(max(sys.getrecursionlimit(), 20_000))  # `blocks` recurses along DFS paths
    members = subscribers(subscriptions)
    topics_of: dict[int, set] = {}
    for topic, nodes in members.items():
        for v in nodes:
            topics_of.setdefault(v, set()).add(topic)
    inside: dict[int, list] = {topic: [] for topic in members}  # links within each topic
    holding = {topic: {v: {i} for i, v in enumerate(sorted(nodes))} for topic, nodes in members.items()}

    def estimate(u, v) -> list:
        return [t for t in topics_of[u] & topics_of[v] if not holding[t][u] & holding[t][v]]

    heap = []
    for u in sorted(topics_of):
        for v in sorted(topics_of):
            if u < v and topics_of[u] & topics_of[v]:
                heap.append((-len(topics_of[u] & topics_of[v]), u, v))
    heapq.heapify(heap)
    sequence = []
    while heap:
        bound, u, v = heap[0]
        apart = estimate(u, v)
        if not apart:
            heapq.heappop(heap)
        elif len(apart) < -bound:
            heapq.heapreplace(heap, (-len(apart), u, v))
        else:
            heapq.heappop(heap)
            sequence.append((u, v, len(apart)))
            for t in topics_of[u] & topics_of[v]:
                inside[t].append((u, v))
            for t in apart:  # other shared topics had u, v in one block already: their blocks stay
                held: dict = {}
                for b, block in enumerate(blocks(members[t], inside[t])):
                    for x in block:
                        held.setdefault(x, set()).add(b)
                holding[t] = held
    return sequence
