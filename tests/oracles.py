"""Small pure-Python references the Spark code is checked against."""

from __future__ import annotations


class UnionFind:
    def __init__(self, items=()):
        self.parent = {}
        for item in items:
            self.add(item)

    def add(self, item) -> None:
        self.parent.setdefault(item, item)

    def find(self, item):
        self.add(item)
        root = item
        while self.parent[root] != root:
            root = self.parent[root]
        while self.parent[item] != root:
            self.parent[item], item = root, self.parent[item]
        return root

    def union(self, a, b) -> bool:
        ra, rb = self.find(a), self.find(b)
        if ra == rb:
            return False
        self.parent[max(ra, rb)] = min(ra, rb)
        return True


def components_by_min(vertices, edges) -> dict:
    """vertex -> smallest vertex of its connected component."""
    forest = UnionFind(vertices)
    for a, b in edges:
        forest.union(a, b)
    members = {}
    for v in vertices:
        members.setdefault(forest.find(v), []).append(v)
    return {v: min(group) for group in members.values() for v in group}


def topic_components_oracle(subscriptions, edges) -> dict:
    """(topic, node) -> smallest node of its TCC, by one union-find per topic."""
    subscribers = {}
    for node, topic in subscriptions:
        subscribers.setdefault(topic, set()).add(node)
    result = {}
    for topic, nodes in subscribers.items():
        links = [(u, v) for u, v in edges if u in nodes and v in nodes]
        for node, smallest in components_by_min(sorted(nodes), links).items():
            result[(topic, node)] = smallest
    return result


def tco_support_oracle(subscriptions, edges) -> tuple[int, int, int, float]:
    """(TCC(empty), TCC(E), TCC(complete), TcoSuppR) straight from the definitions."""
    labels = topic_components_oracle(subscriptions, edges)
    empty = len(labels)
    tcc = len({(topic, smallest) for (topic, _), smallest in labels.items()})
    complete = len({topic for topic, _ in labels})
    support = 1.0 if empty == complete else (empty - tcc) / (empty - complete)
    return empty, tcc, complete, support


def topic_diameters_oracle(subscriptions, edges) -> dict:
    """topic -> longest shortest path between two connected subscribers in G(t) (topics with >= 2)."""
    from collections import deque

    subscribers = {}
    for node, topic in subscriptions:
        subscribers.setdefault(topic, set()).add(node)
    result = {}
    for topic, nodes in subscribers.items():
        if len(nodes) < 2:
            continue
        adjacency = {n: set() for n in nodes}
        for u, v in edges:
            if u in nodes and v in nodes:
                adjacency[u].add(v)
                adjacency[v].add(u)
        longest = 0
        for source in nodes:
            dist = {source: 0}
            queue = deque([source])
            while queue:
                x = queue.popleft()
                for y in adjacency[x]:
                    if y not in dist:
                        dist[y] = dist[x] + 1
                        queue.append(y)
            longest = max(longest, max(dist.values()))
        result[topic] = longest
    return result


# Greedy overlay design (ICDCS'16 Alg. 1 and 3; docs/readings/icdcs16.md#greedy) ----------


def _topics_by_node(subscriptions) -> dict:
    topics = {}
    for node, topic in subscriptions:
        topics.setdefault(node, set()).add(topic)
    return topics


class TopicForests:
    """One union-find per topic, over that topic's subscribers."""

    def __init__(self, topics_by_node: dict):
        self.topics = topics_by_node
        self.forests = {}

    def forest(self, topic) -> UnionFind:
        return self.forests.setdefault(topic, UnionFind())

    def gain(self, u, v) -> int:
        shared = self.topics.get(u, set()) & self.topics.get(v, set())
        return sum(1 for t in shared if self.forest(t).find(u) != self.forest(t).find(v))

    def add(self, u, v) -> None:
        for t in self.topics.get(u, set()) & self.topics.get(v, set()):
            self.forest(t).union(u, v)


def tcc_span(subscriptions) -> tuple[int, int]:
    """(TCC(empty), TCC(complete))."""
    subscriptions = set(subscriptions)
    return len(subscriptions), len({t for _, t in subscriptions})


def greedy_oracle(subscriptions, algorithm, max_edges=None, max_degree=None, start=(), prefer=()) -> list:
    """The canonical greedy sequence [(u, v, gain)]: a plain lazy greedy in pure Python.

    A heap of gain upper bounds (the shared-topic counts; gains only fall) and one union-find
    per topic. Key order: gain descending, then (u, v) ascending. MinMaxODA / GPM work in
    phases D = 1, 2, ...: pairs with an end of degree >= D wait for a later phase.
    `start`: links already in the overlay (an incremental design's kept links): they merge their
    topics' components and count towards degrees and GPA's m first; the links added after them
    are returned. `prefer`: pairs that go first among equal gains (a rebuild's yesterday links):
    key gain descending, preferred first, then (u, v) ascending.
    """
    import heapq

    preferred = {(min(u, v), max(u, v)) for u, v in prefer}

    topics = _topics_by_node(subscriptions)
    forests = TopicForests(topics)
    empty, complete = tcc_span(subscriptions)
    nodes = sorted(topics)
    degree = {}
    merged = 0
    for u, v in start:
        merged += forests.gain(u, v)
        forests.add(u, v)
        degree[u] = degree.get(u, 0) + 1
        degree[v] = degree.get(v, 0) + 1
    if max_edges is not None:
        max_edges -= len(start)
    heap = []
    for i, u in enumerate(nodes):
        for v in nodes[i + 1 :]:
            shared = len(topics[u] & topics[v])
            if shared:
                heap.append((-shared, (u, v) not in preferred, u, v, -1))
    heapq.heapify(heap)
    phased = algorithm in ("minmaxoda", "gpm")
    phase = 1
    edges = []
    version = 0
    while True:
        waiting = []
        while heap and merged < empty - complete:
            if max_edges is not None and len(edges) >= max_edges:
                return edges
            negative, other, u, v, seen = heap[0]
            if phased and (degree.get(u, 0) >= phase or degree.get(v, 0) >= phase):
                waiting.append(heapq.heappop(heap))
                continue
            if seen != version:
                gain = forests.gain(u, v)
                if gain == 0:
                    heapq.heappop(heap)
                else:
                    heapq.heapreplace(heap, (-gain, other, u, v, version))
                continue
            heapq.heappop(heap)
            forests.add(u, v)
            degree[u] = degree.get(u, 0) + 1
            degree[v] = degree.get(v, 0) + 1
            edges.append((u, v, -negative))
            merged -= negative
            version += 1
        if not phased or merged >= empty - complete:
            return edges
        phase += 1
        if algorithm == "gpm" and phase > max_degree:
            return edges
        heap.extend(waiting)
        heapq.heapify(heap)


def check_greedy_sequence(subscriptions, edges, algorithm, max_edges=None, max_degree=None) -> None:
    """Replay `edges` [(u, v)] in order and assert they form a valid greedy sequence.

    Valid (docs/readings/icdcs16.md#exact): each edge had the highest gain among the eligible edges
    when it was added (ties any way), and the run stopped only when nothing eligible with positive
    gain was left within budget. For MinMaxODA / GPM the phase D is the smallest degree limit under
    which some eligible edge has positive gain. Brute force: for small instances only.
    """
    topics = _topics_by_node(subscriptions)
    forests = TopicForests(topics)
    nodes = sorted(topics)
    phased = algorithm in ("minmaxoda", "gpm")
    degree = {}
    added = set()

    def best(limit):
        gains = [
            forests.gain(u, v)
            for i, u in enumerate(nodes)
            for v in nodes[i + 1 :]
            if (u, v) not in added and (limit is None or (degree.get(u, 0) < limit and degree.get(v, 0) < limit))
        ]
        return max(gains, default=0)

    phase = 1
    for step, (u, v) in enumerate(edges):
        assert u < v and (u, v) not in added, f"step {step}: ({u}, {v}) repeated or unordered"
        if phased:
            while best(phase) == 0:
                phase += 1
                assert phase <= len(nodes), f"step {step}: no edge has positive gain"
            assert algorithm != "gpm" or phase <= max_degree, f"step {step}: phase {phase} over d"
            assert degree.get(u, 0) < phase and degree.get(v, 0) < phase, f"step {step}: not eligible"
        top = best(phase if phased else None)
        gain = forests.gain(u, v)
        assert gain > 0 and gain == top, f"step {step}: ({u}, {v}) has gain {gain}, best was {top}"
        forests.add(u, v)
        added.add((u, v))
        degree[u] = degree.get(u, 0) + 1
        degree[v] = degree.get(v, 0) + 1
    if algorithm == "gpa" and len(edges) == max_edges:
        return
    if algorithm == "gpm":
        assert all(best(limit) == 0 for limit in range(phase, max_degree + 1)), "stopped too early"
        return
    assert best(None) == 0, "stopped before a TCO"


def relaxed_report(subscriptions, edges, algorithm, max_edges=None, max_degree=None) -> dict:
    """Replay a link sequence [(u, v, gain)] that need not be the canonical one (a relaxed run).

    Asserts what every run must satisfy: each link is eligible when added (MinMaxODA / GPM: in the
    phase the canonical greedy would be in) with a positive gain equal to its recorded gain, and
    the run stops only when nothing eligible with a positive gain is left within budget. Returns
    the first step where the sequence leaves the canonical one (None: it never does) and the share
    of links added below the best eligible gain of their step. A lazy heap of gain bounds, as in
    `greedy_oracle`, so it also runs on the benchmark instances.
    """
    import heapq

    topics = _topics_by_node(subscriptions)
    forests = TopicForests(topics)
    nodes = sorted(topics)
    heap = [(-len(topics[u] & topics[v]), u, v, -1) for i, u in enumerate(nodes) for v in nodes[i + 1 :]]
    heap = [entry for entry in heap if entry[0] < 0]
    heapq.heapify(heap)
    phased = algorithm in ("minmaxoda", "gpm")
    state = {"phase": 1, "version": 0}
    degree = {}
    waiting = []

    def eligible(u, v):
        return not phased or (degree.get(u, 0) < state["phase"] and degree.get(v, 0) < state["phase"])

    def best():
        """The canonical choice now, (gain, u, v), opening phases as they run dry; None when done."""
        while True:
            while heap:
                negative, u, v, seen = heap[0]
                if not eligible(u, v):
                    waiting.append(heapq.heappop(heap))
                elif seen != state["version"]:
                    gain = forests.gain(u, v)
                    if gain == 0:
                        heapq.heappop(heap)
                    else:
                        heapq.heapreplace(heap, (-gain, u, v, state["version"]))
                else:
                    return -negative, u, v
            if not phased or not waiting or (algorithm == "gpm" and state["phase"] >= max_degree):
                return None
            state["phase"] += 1
            heap.extend(waiting)
            heapq.heapify(heap)
            waiting.clear()

    first_divergence, below = None, 0
    for step, (u, v, gain) in enumerate(edges):
        top = best()
        assert top is not None, f"step {step}: no eligible link has a positive gain"
        assert u < v and eligible(u, v), f"step {step}: ({u}, {v}) is not eligible in phase {state['phase']}"
        actual = forests.gain(u, v)
        assert actual == gain > 0, f"step {step}: ({u}, {v}) recorded gain {gain}, has gain {actual}"
        if first_divergence is None and (u, v) != top[1:]:
            first_divergence = step
        below += gain < top[0]
        forests.add(u, v)
        degree[u] = degree.get(u, 0) + 1
        degree[v] = degree.get(v, 0) + 1
        state["version"] += 1
    if not (algorithm == "gpa" and len(edges) == max_edges):
        assert best() is None, "stopped while an eligible link still had a positive gain"
    return {"first_divergence": first_divergence, "below_best": below / len(edges) if edges else 0.0}


# Day two (docs/concepts/day-two.md) ------------------------------------------------------


def keep_oracle(subscriptions, links, max_degree=None, max_edges=None):
    """The kept links by the definition: drop links sharing no topic; then, one at a time, remove
    the link with the most over-budget ends, the fewest shared topics, the largest (u, v); then
    the links beyond m by the fewest shared topics, the largest (u, v)."""
    topics = {}
    for node, topic in subscriptions:
        topics.setdefault(node, set()).add(topic)
    kept = sorted({(min(u, v), max(u, v)) for u, v in links if u != v})
    shared = {link: len(topics.get(link[0], set()) & topics.get(link[1], set())) for link in kept}
    unshared = sum(1 for link in kept if shared[link] == 0)
    kept = [link for link in kept if shared[link] > 0]
    removed = 0
    if max_degree is not None:
        while True:
            degree = {}
            for u, v in kept:
                degree[u] = degree.get(u, 0) + 1
                degree[v] = degree.get(v, 0) + 1

            def over(link, degree=degree):
                return (degree[link[0]] > max_degree) + (degree[link[1]] > max_degree)

            offenders = [link for link in kept if over(link)]
            if not offenders:
                break
            worst = min(offenders, key=lambda link: (-over(link), shared[link], -link[0], -link[1]))
            kept.remove(worst)
            removed += 1
    if max_edges is not None and len(kept) > max_edges:
        order = sorted(kept, key=lambda link: (shared[link], -link[0], -link[1]))
        gone = set(order[: len(kept) - max_edges])
        removed += len(gone)
        kept = [link for link in kept if link not in gone]
    return kept, unshared, removed


def release_oracle(subscriptions, kept, max_degree=None, max_edges=None):
    """The kept links without the redundant ones where the budget binds, by the definition: take
    the links with no end at its degree budget first, then one, then two (under an edge budget
    all count as bound), more shared topics first, then (u, v); a bound link whose ends are
    already connected on every shared topic by the links taken goes. (stays, released)"""
    if max_degree is None and max_edges is None:
        return list(kept), 0
    topics = _topics_by_node(subscriptions)
    degree = {}
    for u, v in kept:
        degree[u] = degree.get(u, 0) + 1
        degree[v] = degree.get(v, 0) + 1

    def bound(link):
        if max_edges is not None:
            return 1
        return sum(1 for end in link if degree[end] >= max_degree)

    def shared(link):
        return len(topics.get(link[0], set()) & topics.get(link[1], set()))

    forests = TopicForests(topics)
    gone = set()
    for link in sorted(kept, key=lambda link: (bound(link), -shared(link), link)):
        if bound(link) and forests.gain(*link) == 0:
            gone.add(link)
        else:
            forests.add(*link)
    return [link for link in kept if link not in gone], len(gone)
