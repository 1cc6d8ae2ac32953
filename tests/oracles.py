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
