"""Vertex connectivity up to k of one small graph, compiled: the kTCO check's inner loop.

Connectedness by BFS and biconnectedness by Hopcroft-Tarjan low points (both linear), which
settle k <= 2; for k >= 3, min(kappa(G), k) by Even's algorithm as Esfahanian describes it (and networkx's
`node_connectivity` runs it): with v a vertex of minimum degree delta, kappa is the fewest
internally vertex-disjoint paths between v and a non-neighbour, or between two non-adjacent
neighbours of v (delta when there is no such pair). Each count is a unit-capacity max-flow on the
node-split graph (x_in -> x_out of capacity 1, an edge as x_out -> y_in), augmented by BFS and
cut off at the best bound so far, so a flow never runs past k: about (n + delta^2) flows of at
most k augmentations each. A topic subgraph of a kTCO has tens to hundreds of vertices, so this
runs in a task in milliseconds where a pure-Python flow takes seconds.
"""

from __future__ import annotations

import numba as nb
import numpy as np


@nb.njit(cache=True, nogil=True)
def _connected(offsets, targets):
    n = len(offsets) - 1
    seen = np.zeros(n, dtype=np.bool_)
    queue = np.empty(n, dtype=np.int64)
    seen[0], queue[0] = True, 0
    head, tail = 0, 1
    while head < tail:
        x = queue[head]
        head += 1
        for e in range(offsets[x], offsets[x + 1]):
            y = targets[e]
            if not seen[y]:
                seen[y] = True
                queue[tail] = y
                tail += 1
    return tail == n


@nb.njit(cache=True, nogil=True)
def _has_cut_vertex(offsets, targets):
    """Whether the connected graph has an articulation point: Hopcroft-Tarjan low points, one
    iterative DFS from vertex 0 (linear time)."""
    n = len(offsets) - 1
    order = np.full(n, -1, dtype=np.int64)
    low = np.zeros(n, dtype=np.int64)
    parent = np.full(n, -1, dtype=np.int64)
    cursor = offsets[:-1].copy()
    stack = np.empty(n, dtype=np.int64)
    order[0] = low[0] = 0
    stack[0], depth, counter, root_children = 0, 1, 1, 0
    while depth > 0:
        x = stack[depth - 1]
        if cursor[x] < offsets[x + 1]:
            y = targets[cursor[x]]
            cursor[x] += 1
            if order[y] < 0:
                parent[y] = x
                order[y] = low[y] = counter
                counter += 1
                stack[depth] = y
                depth += 1
                if x == 0:
                    root_children += 1
            elif y != parent[x]:
                low[x] = min(low[x], order[y])
        else:
            depth -= 1
            p = parent[x]
            if p >= 0:
                low[p] = min(low[p], low[x])
                if p != 0 and low[x] >= order[p]:
                    return True
    return root_children > 1


@nb.njit(cache=True, nogil=True)
def _split_graph(offsets, targets):
    """The node-split residual graph in CSR: per arc its head, its reverse arc and its capacity
    (x_in = 2x, x_out = 2x + 1)."""
    n = len(offsets) - 1
    arcs = 2 * (n + len(targets))
    degree = np.zeros(2 * n, dtype=np.int64)
    for x in range(n):
        degree[2 * x] += 1  # x_in -> x_out
        degree[2 * x + 1] += 1  # its reverse
        for e in range(offsets[x], offsets[x + 1]):
            degree[2 * x + 1] += 1  # x_out -> y_in
            degree[2 * targets[e]] += 1  # its reverse
    start = np.zeros(2 * n + 1, dtype=np.int64)
    for a in range(2 * n):
        start[a + 1] = start[a] + degree[a]
    fill = start[:-1].copy()
    head = np.empty(arcs, dtype=np.int64)
    reverse = np.empty(arcs, dtype=np.int64)
    capacity = np.zeros(arcs, dtype=np.int64)

    def add(a, b):
        i, j = fill[a], fill[b]
        fill[a] += 1
        fill[b] += 1
        head[i], head[j] = b, a
        reverse[i], reverse[j] = j, i
        capacity[i] = 1

    for x in range(n):
        add(2 * x, 2 * x + 1)
        for e in range(offsets[x], offsets[x + 1]):
            add(2 * x + 1, 2 * targets[e])
    return start, head, reverse, capacity


@nb.njit(cache=True, nogil=True)
def _disjoint_paths(start, head, reverse, base, capacity, parent_arc, queue, s, t, cutoff):
    """Internally vertex-disjoint s-t paths (s, t not adjacent), at most `cutoff`."""
    capacity[:] = base
    source, sink = 2 * s + 1, 2 * t
    flow = 0
    while flow < cutoff:
        parent_arc[:] = -1
        parent_arc[source] = -2
        queue[0] = source
        head_at, tail = 0, 1
        while head_at < tail and parent_arc[sink] == -1:
            a = queue[head_at]
            head_at += 1
            for i in range(start[a], start[a + 1]):
                b = head[i]
                if capacity[i] > 0 and parent_arc[b] == -1:
                    parent_arc[b] = i
                    queue[tail] = b
                    tail += 1
        if parent_arc[sink] == -1:
            break
        b = sink
        while b != source:
            i = parent_arc[b]
            capacity[i] -= 1
            capacity[reverse[i]] += 1
            b = head[reverse[i]]
        flow += 1
    return flow


@nb.njit(cache=True, nogil=True)
def csr_connectivity_upto(offsets, targets, k):
    """min(kappa, k) of the simple undirected graph in CSR form (vertices 0..n-1, each edge in
    both lists, no repeats or loops): 0 for one vertex or a disconnected graph, n - 1 for a
    clique on n vertices."""
    n = len(offsets) - 1
    if n <= 1 or not _connected(offsets, targets):
        return 0
    if len(targets) == n * (n - 1):
        return min(k, n - 1)
    if k == 1 or _has_cut_vertex(offsets, targets):
        return 1
    if k == 2:
        return 2  # biconnected, in linear time
    v, delta = 0, offsets[1] - offsets[0]
    for x in range(1, n):
        if offsets[x + 1] - offsets[x] < delta:
            v, delta = x, offsets[x + 1] - offsets[x]
    best = min(k, delta)
    start, head, reverse, base = _split_graph(offsets, targets)
    capacity = base.copy()
    parent_arc = np.empty(2 * n, dtype=np.int64)
    queue = np.empty(2 * n, dtype=np.int64)
    adjacent = np.zeros(n, dtype=np.bool_)
    for e in range(offsets[v], offsets[v + 1]):
        adjacent[targets[e]] = True
    for w in range(n):
        if w != v and not adjacent[w] and best > 1:
            best = min(best, _disjoint_paths(start, head, reverse, base, capacity, parent_arc, queue, v, w, best))
    neighbours = targets[offsets[v] : offsets[v + 1]]
    mark = np.zeros(n, dtype=np.bool_)
    for i in range(len(neighbours)):
        x = neighbours[i]
        for e in range(offsets[x], offsets[x + 1]):
            mark[targets[e]] = True
        for j in range(i + 1, len(neighbours)):
            y = neighbours[j]
            if not mark[y] and best > 1:
                best = min(best, _disjoint_paths(start, head, reverse, base, capacity, parent_arc, queue, x, y, best))
        for e in range(offsets[x], offsets[x + 1]):
            mark[targets[e]] = False
    return best


def connectivity_upto(nodes, links, k: int) -> int:
    """min(kappa, k) of the graph on `nodes` with `links` (pairs of node ids; repeats and
    self-loops ignored, ends outside `nodes` not allowed)."""
    nodes = np.unique(np.asarray(list(nodes), dtype=np.int64))
    pairs = np.asarray(list(links), dtype=np.int64).reshape(-1, 2)
    pairs = pairs[pairs[:, 0] != pairs[:, 1]]
    a, b = np.searchsorted(nodes, pairs[:, 0]), np.searchsorted(nodes, pairs[:, 1])
    ends = np.unique(np.concatenate([np.column_stack([a, b]), np.column_stack([b, a])]), axis=0)
    offsets = np.searchsorted(ends[:, 0], np.arange(len(nodes) + 1)).astype(np.int64)
    return int(csr_connectivity_upto(offsets, np.ascontiguousarray(ends[:, 1]), k))
