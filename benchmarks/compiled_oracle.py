"""Compiled oracle for the greedy overlay designs: a speed yardstick and a second exact reference.

Independent of `overlay/`, `routing/` and `pipelines/` (it imports none of them): numba kernels,
one thread, for GM, GPA, MinMaxODA, GPM and GM2, giving the canonical sequence of
`tests/oracles.py: greedy_oracle` (GM2: `tests/ktco_oracle.py: gm2_ref`), gains included.

Structure, and why: a plain lazy greedy over gain upper bounds (the shared-topic counts; gains
never grow), two levels of heaps. Each candidate row u (its pairs (u, v), keys (-bound, v) packed
in one int64) is a sorted run of untouched pairs plus a min-heap (8-ary) of the pairs whose bound
was lowered, in place in the row's slice of the candidate CSR; a heap of rows keyed (-bound of
the row's top, u) picks the next pair. Two levels so that, in a MinMaxODA / GPM phase, a node
whose degree reached the limit drops its whole row at once, and a pair whose other end is full
waits in its row for the next phase; the sorted run so that the many pairs never lowered cost no
sift. The top pair is accepted when its recomputed gain equals its bound: every other key bounds
its own gain, so it is the true maximum, ties to the smallest (u, v). No sweep by bound level,
unlike `overlay/`.

Topic-connected components: a label per subscription position (node x's subscription to t, in
a CSR of subscriptions by node, topics sorted), merges relabelling the smaller component. A gain
marks u's labels by topic once and reads v's positions in order.

GM2 is compiled too, but not incremental: each topic's blocks are kept as a block-cut forest
(a vertex's parent block, a block's head vertex, so "share a block" is O(1)) and, as
`gm2_lazy` does, recomputed by an iterative Hopcroft-Tarjan over the component a link lands in
whenever the link joins two vertices that shared no block there. Exact and simple; its cost
grows with the component sizes times the links landing apart.

Usage (prints the links' count, TcoSuppR, seconds and the process's peak RSS as JSON):
  .venv/bin/python benchmarks/compiled_oracle.py --subscriptions FILE.parquet --algorithm gpm --max-degree 4 \
      [--nodes N] [--links OUT.npz]
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

import numba
import numpy as np

if __name__ == "__main__":  # a script: run the importable module, the name numba's cache holds
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
    from benchmarks.compiled_oracle import main

    main()
    raise SystemExit(0)

ALGORITHMS = ("gm", "gpa", "minmaxoda", "gpm", "gm2")
MASK32 = np.int64(0xFFFFFFFF)
COUNTS = ("gains_computed", "bounds_lowered", "pairs_set_aside", "rows_set_aside", "phases")
ARITY = 8  # heap fan-out: the children of a key share a cache line or two
NEVER = np.int64(1) << 62  # a budget or a degree limit that is never reached


# Instance: subscriptions by node (topics sorted) and by topic (nodes sorted) ----------------


class Instance:
    """The CSRs every kernel reads; positions are indices into `node_topic`."""

    def __init__(self, nodes: int, node_ids, topic_ids):
        node_ids = np.asarray(node_ids, dtype=np.int64).ravel()
        topic_ids = np.asarray(topic_ids, dtype=np.int64).ravel()
        if node_ids.shape != topic_ids.shape:
            raise ValueError("node_ids and topic_ids differ in length")
        if node_ids.size and (node_ids.min() < 0 or node_ids.max() >= nodes):
            raise ValueError(f"node ids must lie in [0, {nodes})")
        if nodes >= 1 << 31:
            raise ValueError("more nodes than int32 holds")
        _, topic = np.unique(topic_ids, return_inverse=True)  # dense topics, order kept
        topics = int(topic.max()) + 1 if topic.size else 0
        key = np.unique(node_ids * max(topics, 1) + topic.ravel())  # sorted by (node, topic), no repeats
        node = key // max(topics, 1)
        self.nodes = nodes
        self.topics = topics
        self.node_ptr = np.zeros(nodes + 1, dtype=np.int64)
        np.cumsum(np.bincount(node, minlength=nodes), out=self.node_ptr[1:])
        self.node_topic = (key % max(topics, 1)).astype(np.int32)
        order = np.argsort(self.node_topic, kind="stable")  # by topic, then node
        self.topic_ptr = np.zeros(topics + 1, dtype=np.int64)
        np.cumsum(np.bincount(self.node_topic, minlength=topics), out=self.topic_ptr[1:])
        self.topic_nodes = node[order].astype(np.int32)
        self.index_in_topic = np.empty(key.size, dtype=np.int64)
        self.index_in_topic[order] = np.arange(key.size)

    @property
    def subscriptions(self) -> int:
        return int(self.node_topic.size)

    def pair_capacity(self) -> int:
        """An upper bound on the pairs sharing a topic (the key array is allocated once at it;
        untouched pages of np.empty cost no memory)."""
        sizes = np.diff(self.topic_ptr)
        within = int(np.sum(sizes * (sizes - 1) // 2))  # <= S^2 / 2: no overflow below 4e9 subscriptions
        return max(min(within, self.nodes * (self.nodes - 1) // 2), 1)


# Candidates: (u, v) pairs u < v sharing a topic, rows by u, key v - (shared << 32) ascending ----
# (so bound descending, then v): a row is consumed from the left, as a sorted run.


@numba.njit(cache=True)
def _candidates(nodes, node_ptr, node_topic, topic_ptr, topic_nodes, index_in_topic, keys):
    ptr = np.zeros(nodes + 1, dtype=np.int64)
    count = np.zeros(nodes, dtype=np.int64)
    touched = np.empty(nodes, dtype=np.int32)
    most = 0
    for u in range(nodes):
        most = max(most, node_ptr[u + 1] - node_ptr[u])
    start = np.zeros(most + 2, dtype=np.int64)  # per bound: where its keys go in the row
    out = 0
    for u in range(nodes):
        seen = 0
        for p in range(node_ptr[u], node_ptr[u + 1]):
            t = node_topic[p]
            for i in range(index_in_topic[p] + 1, topic_ptr[t + 1]):
                v = topic_nodes[i]
                if count[v] == 0:
                    touched[seen] = v
                    seen += 1
                count[v] += 1
        if seen * 8 > nodes - u:  # dense row: counting sort by bound over the partners in order
            start[:] = 0
            for i in range(seen):
                start[count[touched[i]]] += 1
            at = out
            for bound in range(most + 1, 0, -1):
                at, start[bound] = at + start[bound], at
            for v in range(u + 1, nodes):
                if count[v]:
                    keys[start[count[v]]] = v - (count[v] << 32)
                    start[count[v]] += 1
                    count[v] = 0
        else:  # sparse row: heapsort (descending), then reversed
            for i in range(seen):
                v = touched[i]
                keys[out + i] = v - (count[v] << 32)
                count[v] = 0
            for i in range((seen - 2) // ARITY, -1, -1):
                _sift_down(keys, out, seen, i)
            for end in range(seen - 1, 0, -1):
                keys[out], keys[out + end] = keys[out + end], keys[out]
                _sift_down(keys, out, end, 0)
            for i in range(seen // 2):  # (a loop: a slice assignment compiles slowly)
                keys[out + i], keys[out + seen - 1 - i] = keys[out + seen - 1 - i], keys[out + i]
        out += seen
        ptr[u + 1] = out
    return ptr


# Heaps ---------------------------------------------------------------------------------------


@numba.njit("void(int64[::1], int64, int64, int64)", cache=True)  # typed once: no literal variants
def _sift_down(keys, base, size, i):
    item = keys[base + i]
    while True:
        first = ARITY * i + 1
        if first >= size:
            break
        child = first
        for c in range(first + 1, min(first + ARITY, size)):
            if keys[base + c] < keys[base + child]:
                child = c
        if keys[base + child] >= item:
            break
        keys[base + i] = keys[base + child]
        i = child
    keys[base + i] = item


@numba.njit("void(int64[::1], int64, int64)", cache=True)
def _sift_up(keys, base, i):
    item = keys[base + i]
    while i > 0:
        parent = (i - 1) // ARITY
        if keys[base + parent] <= item:
            break
        keys[base + i] = keys[base + parent]
        i = parent
    keys[base + i] = item


# Topic-connected components (GM family) ------------------------------------------------------
# label[p]: the component of subscription position p within its topic, named by one of its
# positions; a component's positions form a list (first = the label, member_next, tail), and a
# merge relabels the smaller one (O(S log S) in all). A gain then reads v's labels in order.


@numba.njit(cache=True)
def _mark(u, marked, node_ptr, node_topic, where, label):
    """where[t] = label of u's position in t (-1 for u's topics no more), replacing `marked`'s."""
    if marked >= 0:
        for p in range(node_ptr[marked], node_ptr[marked + 1]):
            where[node_topic[p]] = -1
    for p in range(node_ptr[u], node_ptr[u + 1]):
        where[node_topic[p]] = label[p]
    return u


@numba.njit(cache=True)
def _gain_components(v, node_ptr, node_topic, where, label):
    """The gain of (u, v), u marked in `where`: one look-up per topic of v."""
    gain = 0
    for q in range(node_ptr[v], node_ptr[v + 1]):
        lu = where[node_topic[q]]
        gain += (lu >= 0) & (lu != label[q])  # no branch: shared topics come at random
    return gain


@numba.njit(cache=True)
def _link_components(u, v, node_ptr, node_topic, label, member_next, tail, size):
    """Merge u's and v's components on their shared topics; the merges made."""
    i, i_end, j, j_end = node_ptr[u], node_ptr[u + 1], node_ptr[v], node_ptr[v + 1]
    merges = 0
    while i < i_end and j < j_end:
        a, b = node_topic[i], node_topic[j]
        if a < b:
            i += 1
        elif a > b:
            j += 1
        else:
            big, small = label[i], label[j]
            if big != small:
                if size[big] < size[small]:
                    big, small = small, big
                x = small
                while x >= 0:
                    label[x] = big
                    x = member_next[x]
                member_next[tail[big]] = small
                tail[big] = tail[small]
                size[big] += size[small]
                merges += 1
            i += 1
            j += 1
    return merges


# Blocks per topic (GM2) ----------------------------------------------------------------------
# Vertices are subscription positions; `state` is a tuple of one-int64-per-position arrays:
# block (x's parent block, -1 for a DFS root, named by the position of the DFS child that closed
# it), head (a block's vertex nearest the root), adj (x's last arc), then the DFS's scratch. x and
# y share a block iff their parent blocks are one (not -1), or one heads the other's parent block.
# (One-dimensional arrays only: numba compiles slowly the shape errors of multi-dimensional ones.)


@numba.njit(cache=True)
def _share_block(p, q, block, head):
    bp, bq = block[p], block[q]
    return (bp >= 0 and (bp == bq or head[bp] == q)) or (bq >= 0 and head[bq] == p)


@numba.njit(cache=True)
def _gain_blocks(v, node_ptr, node_topic, where, block, head):
    """The GM2 gain of (u, v), u marked in `where` by position: v's topics where no block holds both."""
    gain = 0
    for q in range(node_ptr[v], node_ptr[v + 1]):
        p = where[node_topic[q]]
        if p >= 0 and not _share_block(p, q, block, head):
            gain += 1
    return gain


@numba.njit(cache=True)
def _relabel_blocks(root, state, to, nxt, mark):
    """Hopcroft-Tarjan, iterative, over root's component: its blocks relabelled; (vertices
    reached, blocks)."""
    block, head, adj, stamp, disc, low, up, it, calls, pending = state
    stamp[root] = mark
    disc[root] = 0
    low[root] = 0
    up[root] = -1
    it[root] = adj[root]
    block[root] = -1
    calls[0] = root
    depth, waiting, clock, blocks = 1, 0, 1, 0
    while depth:
        x = calls[depth - 1]
        e = it[x]
        if e >= 0:
            it[x] = nxt[e]
            y = to[e]
            if stamp[y] != mark:
                stamp[y] = mark
                disc[y] = clock
                low[y] = clock
                clock += 1
                up[y] = x
                it[y] = adj[y]
                calls[depth] = y
                depth += 1
                pending[waiting] = y
                waiting += 1
            elif y != up[x]:
                low[x] = min(low[x], disc[y])
        else:
            depth -= 1
            if depth:
                w = x
                x = calls[depth - 1]
                low[x] = min(low[x], low[w])
                if low[w] >= disc[x]:  # w's subtree, down to w, closes a block headed by x
                    head[w] = x
                    blocks += 1
                    while True:
                        waiting -= 1
                        z = pending[waiting]
                        block[z] = w
                        if z == w:
                            break
    return clock, blocks


@numba.njit(cache=True)
def _link_blocks(u, v, node_ptr, node_topic, topic_ptr, state, to, nxt, count, done):
    """Add (u, v) to the graph of each shared topic and relabel the blocks of those where it joins
    vertices that shared none (the others' blocks stay); (to, nxt, arc count, topics now one block)."""
    block, head, adj = state[0], state[1], state[2]
    need = count + 2 * (node_ptr[u + 1] - node_ptr[u])
    if need > to.size:
        to = np.concatenate((to[:count], np.empty(max(to.size, need), dtype=np.int64)))
        nxt = np.concatenate((nxt[:count], np.empty(to.size - count, dtype=np.int64)))
    finished = 0
    i, i_end, j, j_end = node_ptr[u], node_ptr[u + 1], node_ptr[v], node_ptr[v + 1]
    while i < i_end and j < j_end:
        t, t_v = node_topic[i], node_topic[j]
        if t < t_v:
            i += 1
        elif t > t_v:
            j += 1
        else:
            apart = not _share_block(i, j, block, head)
            to[count], nxt[count], adj[i] = j, adj[i], count
            to[count + 1], nxt[count + 1], adj[j] = i, adj[j], count + 1
            count += 2
            if apart:
                reached, blocks = _relabel_blocks(i, state, to, nxt, count)  # `count` only grows: a fresh stamp
                if not done[t] and reached == topic_ptr[t + 1] - topic_ptr[t] and blocks == 1:
                    done[t] = True
                    finished += 1
            i += 1
            j += 1
    return to, nxt, count, finished


# The greedy ----------------------------------------------------------------------------------


# Rows: row u's slice of the candidate keys, [ptr[u], ptr[u + 1]), holds a heap of the pairs
# whose bound was lowered (its first heap[u] slots), then the pairs waiting for the next phase
# (wait[u]), then, from run[u] on, the untouched rest of the sorted row. Every pair consumed from
# the run goes to the heap, the waiting ones or nowhere, so the three never overlap.

EMPTY = np.int64(1) << 62  # above every key: a row with nothing left


@numba.njit(cache=True)
def _row_top(keys, ptr, heap, run, u):
    top = keys[run[u]] if run[u] < ptr[u + 1] else EMPTY
    if heap[u] and keys[ptr[u]] < top:
        top = keys[ptr[u]]
    return top


@numba.njit(cache=True)
def _row_pop(keys, ptr, heap, wait, run, u):
    """Remove the row's top pair (the run's first or the heap's root)."""
    base = ptr[u]
    if run[u] < ptr[u + 1] and (heap[u] == 0 or keys[run[u]] < keys[base]):
        run[u] += 1
        return
    heap[u] -= 1
    last = base + heap[u]
    keys[base] = keys[last]
    keys[last] = keys[last + wait[u]]  # the last waiting pair fills the hole the heap left
    _sift_down(keys, base, heap[u], 0)


@numba.njit(cache=True)
def _row_push(keys, ptr, heap, wait, u, key):
    """Into the heap: the first waiting pair moves to the end of the waiting ones."""
    slot = ptr[u] + heap[u]
    keys[slot + wait[u]] = keys[slot]
    keys[slot] = key
    heap[u] += 1
    _sift_up(keys, ptr[u], heap[u] - 1)


@numba.njit(cache=True)
def _rows_build(rows, keys, ptr, heap, run):
    """The heap of rows: (-bound of the row's top, u) packed in one int64, so that the heap never
    reads the large, scattered candidate keys."""
    size = 0
    for u in range(rows.size):
        top = _row_top(keys, ptr, heap, run, u)
        if top != EMPTY:
            rows[size] = (top & ~MASK32) + u
            size += 1
    for i in range((size - 2) // ARITY, -1, -1):
        _sift_down(rows, 0, size, i)
    return size


@numba.njit(cache=True)
def _greedy(nodes, node_ptr, node_topic, topic_ptr, ptr, keys, use_blocks, phased, max_edges, max_degree):
    positions = node_topic.size
    topics = topic_ptr.size - 1
    # Topics: components as labels (GM family), or blocks and the links inside (GM2).
    label = np.arange(positions).astype(np.int32)  # GM2: each position its own, for `_mark`
    member_next = np.full(0 if use_blocks else positions, -1, dtype=np.int32)
    tail = np.arange(member_next.size).astype(np.int32)
    size = np.ones(member_next.size, dtype=np.int32)
    vertices = positions if use_blocks else 0
    state = (
        np.full(vertices, -1, dtype=np.int64),
        np.full(vertices, -1, dtype=np.int64),
        np.full(vertices, -1, dtype=np.int64),
        np.full(vertices, -1, dtype=np.int64),
        np.empty(vertices, dtype=np.int64),
        np.empty(vertices, dtype=np.int64),
        np.empty(vertices, dtype=np.int64),
        np.empty(vertices, dtype=np.int64),
        np.empty(vertices, dtype=np.int64),
        np.empty(vertices, dtype=np.int64),
    )
    to = np.empty(1024 if use_blocks else 0, dtype=np.int64)
    nxt = np.empty(to.size, dtype=np.int64)
    count = np.int64(0)
    done = np.zeros(topics, dtype=np.bool_)
    # Progress: TCC merges towards S - |T| (GM family), or topics made one block (GM2).
    span = 0
    for t in range(topics):
        n_t = topic_ptr[t + 1] - topic_ptr[t]
        if use_blocks:
            span += 1 if n_t >= 2 else 0
        else:
            span += n_t - 1
    progress = 0
    heap = np.zeros(nodes, dtype=np.int64)
    wait = np.zeros(nodes, dtype=np.int64)
    run = ptr[:-1].copy()
    rows = np.empty(nodes, dtype=np.int64)
    live = _rows_build(rows, keys, ptr, heap, run)
    degree = np.zeros(nodes, dtype=np.int64)
    capacity = 2 * positions + 1 if use_blocks else span + 1
    out_u = np.empty(capacity, dtype=np.int32)
    out_v = np.empty(capacity, dtype=np.int32)
    out_g = np.empty(capacity, dtype=np.int32)
    links = 0
    version = 0
    fresh_u, fresh_v, fresh_version = -1, -1, -1  # the pair whose bound is its gain at that version
    where = np.full(topics, -1, dtype=np.int32)
    marked = np.int64(-1)  # not a literal: one compilation of `_mark`
    limit = 1 if phased else NEVER
    counts = np.zeros(len(COUNTS), dtype=np.int64)
    while True:
        counts[4] += 1
        while live and progress < span and links < max_edges:
            u = rows[0] & MASK32
            if degree[u] >= limit:  # the whole row waits for the next phase
                counts[3] += 1
                live -= 1
                rows[0] = rows[live]
                _sift_down(rows, 0, live, 0)
                continue
            key = _row_top(keys, ptr, heap, run, u)
            v = key & MASK32
            bound = -(key >> 32)
            if degree[v] >= limit:
                counts[2] += 1
                gain = -1  # to the row's waiting pairs
            elif fresh_u == u and fresh_v == v and fresh_version == version:
                gain = bound
            else:
                counts[0] += 1
                if marked != u:
                    marked = _mark(u, marked, node_ptr, node_topic, where, label)
                if use_blocks:
                    gain = _gain_blocks(v, node_ptr, node_topic, where, state[0], state[1])
                else:
                    gain = _gain_components(v, node_ptr, node_topic, where, label)
            _row_pop(keys, ptr, heap, wait, run, u)
            if 0 < gain < bound:  # a stale bound: lowered, into the row's heap, and look again
                counts[1] += 1
                _row_push(keys, ptr, heap, wait, u, v - (gain << 32))
                fresh_u, fresh_v, fresh_version = u, v, version
            elif gain < 0:
                keys[ptr[u] + heap[u] + wait[u]] = key
                wait[u] += 1
                # The run's next pairs to full nodes wait too, now: whenever they go makes no
                # difference, and in one sequential pass they cost no round through the heaps.
                while run[u] < ptr[u + 1] and degree[keys[run[u]] & MASK32] >= limit:
                    keys[ptr[u] + heap[u] + wait[u]] = keys[run[u]]
                    wait[u] += 1
                    run[u] += 1
                    counts[2] += 1
            top = _row_top(keys, ptr, heap, run, u)
            if top == EMPTY:
                live -= 1
                rows[0] = rows[live]
            else:
                rows[0] = (top & ~MASK32) + u
            _sift_down(rows, 0, live, 0)
            if gain <= 0 or gain < bound:
                continue
            out_u[links], out_v[links], out_g[links] = u, v, gain
            links += 1
            version += 1
            degree[u] += 1
            degree[v] += 1
            if use_blocks:
                to, nxt, count, finished = _link_blocks(
                    u, v, node_ptr, node_topic, topic_ptr, state, to, nxt, count, done
                )
                progress += finished
            else:
                _link_components(u, v, node_ptr, node_topic, label, member_next, tail, size)
                progress += gain
                if marked >= 0:  # labels changed: mark again
                    marked = _mark(marked, marked, node_ptr, node_topic, where, label)
        if not phased or progress >= span or links >= max_edges or limit >= max_degree:
            break
        limit += 1  # next phase: every row's waiting pairs join its heap
        for u in range(nodes):
            for _ in range(wait[u]):
                heap[u] += 1
                _sift_up(keys, ptr[u], heap[u] - 1)
            wait[u] = 0
        live = _rows_build(rows, keys, ptr, heap, run)
        if live == 0:  # not reached while progress < span (a pair is left then): no endless phases
            break
    return out_u[:links].copy(), out_v[:links].copy(), out_g[:links].copy(), counts


@numba.njit(cache=True)
def _merges(node_ptr, node_topic, u, v):
    """TCC merges made by the links (u, v): TCC(E) = subscriptions - merges."""
    label = np.arange(node_topic.size).astype(np.int32)
    member_next = np.full(node_topic.size, -1, dtype=np.int32)
    tail = label.copy()
    size = np.ones(node_topic.size, dtype=np.int32)
    merges = 0
    for k in range(u.size):
        a, b = min(u[k], v[k]), max(u[k], v[k])
        merges += _link_components(a, b, node_ptr, node_topic, label, member_next, tail, size)
    return merges


# Public API ----------------------------------------------------------------------------------

_warm = False


def warm_up() -> None:
    """Compile (or load from numba's cache) every kernel on a tiny instance, once, so that the
    timings of `greedy` hold no compilation."""
    global _warm
    if _warm:
        return
    _warm = True
    node_ids = np.array([0, 0, 1, 1, 2, 2, 3, 4], dtype=np.int64)
    topic_ids = np.array([0, 1, 0, 1, 0, 1, 1, 0], dtype=np.int64)
    for algorithm in ALGORITHMS:
        greedy(
            6,
            node_ids,
            topic_ids,
            algorithm,
            max_edges=2 if algorithm == "gpa" else None,
            max_degree=2 if algorithm == "gpm" else None,
        )
    tco_support(6, node_ids, topic_ids, np.array([0]), np.array([1]))


def greedy(
    nodes: int,
    node_ids,
    topic_ids,
    algorithm: str,
    max_edges: int | None = None,
    max_degree: int | None = None,
    *,
    counts: dict | None = None,
) -> tuple[np.ndarray, np.ndarray, np.ndarray, dict]:
    """(u, v, gain) of the links in the order added, and {"candidates": s, "greedy": s}.

    gm, gpa (max_edges = m), minmaxoda, gpm (max_degree = d), gm2. Node ids in [0, nodes);
    topic ids any integers; repeated subscriptions count once. `counts`, if given, receives the
    work done (COUNTS, and the candidate pairs), for comparing yardsticks.
    """
    if algorithm not in ALGORITHMS:
        raise ValueError(f"algorithm must be one of {ALGORITHMS}, not {algorithm!r}")
    if algorithm == "gpm" and (max_degree is None or max_degree < 1):
        raise ValueError("gpm needs max_degree >= 1")
    if algorithm == "gm2" and max_edges is not None:
        raise ValueError("gm2 takes no budget")
    warm_up()
    start = time.perf_counter()
    instance = Instance(nodes, node_ids, topic_ids)
    keys = np.empty(instance.pair_capacity(), dtype=np.int64)
    ptr = _candidates(
        nodes,
        instance.node_ptr,
        instance.node_topic,
        instance.topic_ptr,
        instance.topic_nodes,
        instance.index_in_topic,
        keys,
    )
    built = time.perf_counter()
    u, v, gain, work_counts = _greedy(
        nodes,
        instance.node_ptr,
        instance.node_topic,
        instance.topic_ptr,
        ptr,
        keys,
        algorithm == "gm2",
        algorithm in ("minmaxoda", "gpm"),
        NEVER if max_edges is None else np.int64(max_edges),
        np.int64(max_degree) if algorithm == "gpm" else NEVER,
    )
    finished = time.perf_counter()
    if counts is not None:
        counts.update(zip(COUNTS, work_counts.tolist(), strict=True))
        counts["pairs"] = int(ptr[-1])
    return u, v, gain, {"candidates": built - start, "greedy": finished - built}


def tco_support(nodes: int, node_ids, topic_ids, u, v) -> float:
    """TcoSuppR = (TCC(empty) - TCC(E)) / (TCC(empty) - TCC(complete)); 1.0 when the span is 0."""
    instance = Instance(nodes, node_ids, topic_ids)
    span = instance.subscriptions - int(np.count_nonzero(np.diff(instance.topic_ptr)))
    if span == 0:
        return 1.0
    merges = _merges(
        instance.node_ptr, instance.node_topic, np.asarray(u, dtype=np.int64), np.asarray(v, dtype=np.int64)
    )
    return merges / span


def zipf_instance(nodes: int, topics: int, low: int, high: int, seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    """(node_ids, topic_ids): each node draws k ~ U[low, high] topics by weight (r + 1)^-1, without
    replacement (Gumbel top-k, exact for successive weighted draws)."""
    rng = np.random.default_rng(seed)
    log_weight = -np.log(np.arange(1, topics + 1, dtype=np.float64))
    counts = rng.integers(low, high + 1, size=nodes)
    node_parts, topic_parts = [], []
    for first in range(0, nodes, 1000):
        last = min(first + 1000, nodes)
        scores = log_weight + rng.gumbel(size=(last - first, topics))
        order = np.argsort(-scores, axis=1)
        for row in range(last - first):
            k = int(counts[first + row])
            node_parts.append(np.full(k, first + row, dtype=np.int64))
            topic_parts.append(order[row, :k].astype(np.int64))
    return np.concatenate(node_parts), np.concatenate(topic_parts)


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--subscriptions", required=True, help="parquet with columns node_id, topic_id (dense from 0)")
    parser.add_argument("--algorithm", required=True, choices=ALGORITHMS)
    parser.add_argument("--max-edges", type=int, help="gpa: the link budget m")
    parser.add_argument("--max-degree", type=int, help="gpm: the degree bound d")
    parser.add_argument("--nodes", type=int, help="the node count (default: the largest node id + 1)")
    parser.add_argument("--links", help="write the links (u, v, gain in the order added) to this .npz")
    args = parser.parse_args(argv)
    import resource

    import pyarrow.parquet as pq

    warm_up()
    table = pq.read_table(args.subscriptions, columns=["node_id", "topic_id"])
    node_ids = table.column("node_id").to_numpy().astype(np.int64)
    topic_ids = table.column("topic_id").to_numpy().astype(np.int64)
    del table
    nodes = args.nodes if args.nodes is not None else int(node_ids.max()) + 1 if node_ids.size else 0
    # the process's peak before the instance's work: imports, the kernels, the subscriptions read
    before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024
    u, v, gain, seconds = greedy(nodes, node_ids, topic_ids, args.algorithm, args.max_edges, args.max_degree)
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024
    if args.links:
        np.savez(args.links, u=u, v=v, gain=gain)
    print(
        json.dumps(
            {
                "links": int(u.size),
                "tco_support": tco_support(nodes, node_ids, topic_ids, u, v),
                "seconds_candidates": round(seconds["candidates"], 4),
                "seconds_greedy": round(seconds["greedy"], 4),
                "gain_sum": int(gain.sum()),
                "peak_rss_bytes": peak,
                "peak_rss_before_bytes": before,
            }
        )
    )


if __name__ == "__main__":
    main()
