"""Compiled inner loops of the greedy engine: pair gains, merges and the per-partition sample.

The greedy's work is many small sequential steps (a sorted merge of two topic lists, a
union-find lookup per shared topic), which neither DataFrame operations nor numpy express
without large intermediate arrays. These are compiled with numba (`cache=True`: compiled once per
machine, then loaded in a fraction of a second by every process and Python worker).

Subscriptions are held in CSR form: the subscriptions of node x are rows
`offsets[x]:offsets[x + 1]` of `topics` (sorted). `parent` is a union-find over subscription
rows: rows i and j of one topic are in the same class when `find(parent, i) == find(parent, j)`.
The root of a class is its smallest row, so `flatten` makes every entry point at its root in one
ascending pass, and a flattened array answers `find` in one step, without writing (what
executors receive, as `apart`'s labels).
"""

from __future__ import annotations

import numba as nb
import numpy as np


@nb.njit(cache=True, nogil=True)
def find(parent, x):
    root = x
    while parent[root] != root:
        root = parent[root]
    while parent[x] != root:
        following = parent[x]
        parent[x] = root
        x = following
    return root


@nb.njit(cache=True, nogil=True)
def next_shared(topics, i, i_end, j, j_end):
    """The next rows i' >= i and j' >= j of one topic in two sorted lists (-1, -1: none left)."""
    while i < i_end and j < j_end:
        ti, tj = topics[i], topics[j]
        if ti < tj:
            i += 1
        elif ti > tj:
            j += 1
        else:
            return i, j
    return -1, -1


@nb.njit(cache=True, nogil=True)
def shared_topic_count(offsets, topics, us, vs):
    """How many topics the two ends of each link (us[k], vs[k]) share. u's topics are marked once
    for a run of links with the same u (links in (u, v) order: once per node), so a link costs
    the topics of v, not of both ends."""
    out = np.zeros(len(us), dtype=np.int64)
    if len(us) == 0 or len(topics) == 0:
        return out
    marked_by = np.full(topics.max() + 1, -1, dtype=np.int64)
    for k in range(len(us)):
        u, v = us[k], vs[k]
        if k == 0 or us[k - 1] != u:
            for i in range(offsets[u], offsets[u + 1]):
                marked_by[topics[i]] = u
        count = 0
        for j in range(offsets[v], offsets[v + 1]):
            if marked_by[topics[j]] == u:
                count += 1
        out[k] = count
    return out


@nb.njit(cache=True, nogil=True)
def merge_links(offsets, topics, parent, us, vs):
    """Add every link (us[k], vs[k]) to the union-find; the classes they joined in all."""
    joined = 0
    for k in range(len(us)):
        joined += merge_pair(offsets, topics, parent, us[k], vs[k])
    return joined


COUNT, MERGE, FLAT = 0, 1, 2  # what `_walk_shared` does with each shared topic


@nb.njit(cache=True, nogil=True)
def _walk_shared(offsets, topics, parent, head, u, v, mode):
    """Walk the shared topics of u and v (a merge of two sorted lists) and count those whose two
    subscriptions are in different classes: of the union-find `parent` (COUNT), joining those
    classes (MERGE), or of a flattened relation `parent` with `head` (FLAT: `apart`)."""
    i, j = offsets[u], offsets[v]
    count = 0
    while True:
        i, j = next_shared(topics, i, offsets[u + 1], j, offsets[v + 1])
        if i < 0:
            return count
        if mode == FLAT:
            if apart(parent, head, i, j):
                count += 1
        else:
            a, b = find(parent, i), find(parent, j)
            if a != b:
                count += 1
                if mode == MERGE:
                    if a < b:
                        parent[b] = a
                    else:
                        parent[a] = b
        i += 1
        j += 1


@nb.njit(cache=True, nogil=True)
def pair_gain(offsets, topics, parent, u, v):
    """Shared topics of u and v whose two subscriptions are in different classes."""
    return _walk_shared(offsets, topics, parent, parent[:0], u, v, COUNT)


@nb.njit(cache=True, nogil=True)
def merge_pair(offsets, topics, parent, u, v):
    """Join the classes of u's and v's subscriptions on every shared topic; the gain realised."""
    return _walk_shared(offsets, topics, parent, parent[:0], u, v, MERGE)


@nb.njit(cache=True, nogil=True)
def redundant_in_order(offsets, topics, parent, us, vs, releasable):
    """One pass over links in the caller's order: a link that joins classes on a shared topic is
    added to the union-find; a `releasable` one that joins none is marked (every topic it serves
    is connected without it by the links before it, all of which stay)."""
    marked = np.zeros(len(us), dtype=np.bool_)
    for k in range(len(us)):
        # A link that joins nothing changes nothing: one walk both merges and tells.
        if merge_pair(offsets, topics, parent, us[k], vs[k]) == 0 and releasable[k]:
            marked[k] = True
    return marked


@nb.njit(cache=True, nogil=True)
def flat_pair_gain(offsets, topics, label, head, u, v):
    """`pair_gain` against a flattened relation (`apart`: one step per lookup, nothing written)."""
    return _walk_shared(offsets, topics, label, head, u, v, FLAT)


@nb.njit(cache=True, nogil=True)
def apart_in(a, b, head, i, j):
    """Whether subscription rows i != j of one topic, in classes a and b (-1: a class of its
    own), are in different classes; `head`, when not empty, gives a class's head row, which
    also belongs to it (GM2's blocks, `overlay.design.blocks`)."""
    if a < 0 or b < 0:
        return True
    if a == b:
        return False
    return not (len(head) > 0 and (head[a] == j or head[b] == i))


@nb.njit(cache=True, nogil=True)
def apart(label, head, i, j):
    """`apart_in` on a flattened relation: `label` is each row's class."""
    return apart_in(label[i], label[j], head, i, j)


@nb.njit(cache=True, nogil=True)
def pair_gains(offsets, topics, label, head, us, vs):
    """The gains of many pairs against a flattened relation (`apart`: one step per lookup).

    Rows come grouped by u (the table's (u, v) order): u's subscription rows are marked by topic
    once per group, and each v's topics are looked up, so a pair costs |T(v)| steps instead of a
    merge of two lists. Any order is correct; a new u only costs its marking."""
    gains = np.empty(len(us), dtype=np.int64)
    if len(us) == 0:
        return gains
    row_of_topic = np.full(topics.max() + 1 if len(topics) else 1, -1, dtype=np.int64)
    marked = -1
    for r in range(len(us)):
        u, v = us[r], vs[r]
        if u != marked:
            if marked >= 0:
                for i in range(offsets[marked], offsets[marked + 1]):
                    row_of_topic[topics[i]] = -1
            for i in range(offsets[u], offsets[u + 1]):
                row_of_topic[topics[i]] = i
            marked = u
        count = 0
        for j in range(offsets[v], offsets[v + 1]):
            i = row_of_topic[topics[j]]
            if i >= 0 and apart(label, head, i, j):
                count += 1
        gains[r] = count
    return gains


@nb.njit(cache=True, nogil=True)
def transpose(offsets, topics, label, topic_count):
    """The subscriptions by topic in one counting pass (rows come in (node, topic) order, so each
    topic's subscribers come out ascending): `topic_offsets`, `topic_nodes`, and with `label` (a
    flattened union-find over rows, a class's root its smallest row) each topic's subscribers
    grouped by class, classes in the order of their smallest member, with each row's own class
    span `[group_lo, group_hi)` (empty arrays without `label`)."""
    rows = len(topics)
    topic_offsets = np.zeros(topic_count + 1, dtype=np.int64)
    for i in range(rows):
        topic_offsets[topics[i] + 1] += 1
    for t in range(topic_count):
        topic_offsets[t + 1] += topic_offsets[t]
    fill = topic_offsets[:-1].copy()
    by_topic = np.empty(rows, dtype=np.int64)  # row indices, by topic, ascending within one
    for u in range(len(offsets) - 1):
        for i in range(offsets[u], offsets[u + 1]):
            t = topics[i]
            by_topic[fill[t]] = i
            fill[t] += 1
    owner = np.empty(rows, dtype=np.int64)
    for u in range(len(offsets) - 1):
        for i in range(offsets[u], offsets[u + 1]):
            owner[i] = u
    topic_nodes = np.empty(rows, dtype=np.int64)
    if len(label) == 0:
        for j in range(rows):
            topic_nodes[j] = owner[by_topic[j]]
        return topic_offsets, topic_nodes, np.empty(0, dtype=np.int64), np.empty(0, dtype=np.int64)
    group_lo = np.empty(rows, dtype=np.int64)
    group_hi = np.empty(rows, dtype=np.int64)
    size = np.zeros(rows, dtype=np.int64)  # by class root: members on this topic, then the next slot
    start = np.zeros(rows, dtype=np.int64)
    for t in range(topic_count):
        lo, hi = topic_offsets[t], topic_offsets[t + 1]
        for j in range(lo, hi):
            size[label[by_topic[j]]] += 1
        at = lo
        for j in range(lo, hi):  # classes in the order of their first (smallest) member
            root = label[by_topic[j]]
            if by_topic[j] == root:
                start[root] = at
                at += size[root]
        for j in range(lo, hi):
            i = by_topic[j]
            root = label[i]
            place = start[root]
            start[root] += 1
            topic_nodes[place] = owner[i]
        for j in range(lo, hi):
            i = by_topic[j]
            root = label[i]
            group_hi[i] = start[root]  # the end of its class's span
            group_lo[i] = start[root] - size[root]
        for j in range(lo, hi):
            size[label[by_topic[j]]] = 0
    return topic_offsets, topic_nodes, group_lo, group_hi


@nb.njit(cache=True, nogil=True)
def split_topics(topics, parent, topic_count):
    """Which topics have their subscription rows in more than one class of the union-find
    `parent` (not flattened: each row's root is found)."""
    first = np.full(topic_count, -1, dtype=np.int64)
    split = np.zeros(topic_count, dtype=np.bool_)
    for i in range(len(topics)):
        root = i
        while parent[root] != root:
            root = parent[root]
        t = topics[i]
        if first[t] < 0:
            first[t] = root
        elif first[t] != root:
            split[t] = True
    return split


@nb.njit(cache=True, nogil=True)
def flatten(parent):
    """Point every row at its root (roots are the smallest rows of their classes)."""
    for i in range(len(parent)):
        parent[i] = parent[parent[i]]


@nb.njit(cache=True, nogil=True)
def sample_row(count, tail, a, b, position, row, per_node, top):
    """One row (a, b) of a key-ordered stream, at `position`: whether it is sampled (among the
    first `top` rows, or among the first `per_node` rows of either end); it becomes the tail
    (`row`) of an end that has had exactly `per_node` rows before it."""
    sampled = position < top or count[a] < per_node or count[b] < per_node
    if count[a] == per_node:
        tail[a] = row
    if count[b] == per_node:
        tail[b] = row
    count[a] += 1
    count[b] += 1
    return sampled


@nb.njit(cache=True, nogil=True)
def sample_in_key_order(us, vs, nodes, per_node, top):
    """Which rows (already in key order: gain desc, u, v) a round samples, and what bounds the rest.

    Returns the sampled mask, per node the row index of its (per_node + 1)-th row (-1 when it
    has no more rows: its *tail*), and the index of the first row not sampled (-1). Every
    unsampled row containing node x ranks at or after x's tail row (`sample_row`)."""
    count = np.zeros(nodes, dtype=np.int64)
    tail = np.full(nodes, -1, dtype=np.int64)
    take = np.zeros(len(us), dtype=np.bool_)
    first_left = -1
    for r in range(len(us)):
        if sample_row(count, tail, us[r], vs[r], r, r, per_node, top):
            take[r] = True
        elif first_left < 0:
            first_left = r
    return take, tail, first_left


@nb.njit(cache=True, nogil=True)
def count_partners(offsets, topics, topic_offsets, topic_nodes, group_lo, group_hi, u, count, touched):
    """Count, in `count[v]`, the topics u shares with every later node v; the v's first counted
    go to `touched[:found]` (unordered); returns `found`. Work: the sizes of u's topics.

    With classes (`group_lo`, `group_hi` not empty: `overlay.design.pairs.by_topic_and_class`),
    only the shared topics where u and v are in different classes count, and the work is the
    subscribers of u's topics outside u's own class: the pairs a start's links leave apart."""
    found = 0
    grouped = len(group_lo) > 0
    for i in range(offsets[u], offsets[u + 1]):
        t = topics[i]
        lo, hi = topic_offsets[t], topic_offsets[t + 1]
        if grouped:  # any order: those after u, on both sides of u's class
            found = _count_later(topic_nodes, lo, group_lo[i], u, count, touched, found)
            found = _count_later(topic_nodes, group_hi[i], hi, u, count, touched, found)
        else:  # ascending: those after u are a tail
            start = lo + np.searchsorted(topic_nodes[lo:hi], u, side="right")
            found = _count_later(topic_nodes, start, hi, u, count, touched, found)
    return found


@nb.njit(cache=True, nogil=True)
def _count_later(topic_nodes, lo, hi, u, count, touched, found):
    """`count_partners` over `topic_nodes[lo:hi]`: the nodes after u."""
    for j in range(lo, hi):
        v = topic_nodes[j]
        if v > u:
            if count[v] == 0:
                touched[found] = v
                found += 1
            count[v] += 1
    return found


@nb.njit(cache=True, nogil=True)
def shared_counts_of_range(offsets, topics, topic_offsets, topic_nodes, group_lo, group_hi, first, last):
    """(u, v, |T(u) & T(v)|) for every u in [first, last) and v > u sharing a topic with u (with
    classes: the shared topics where they are apart, and only pairs with one; `count_partners`).

    Row by row, as a sparse product of the subscription matrix with its transpose: for each
    topic of u, count every later subscriber of it. Work: sum over u's topics of their sizes."""
    nodes = len(offsets) - 1
    count = np.zeros(nodes, dtype=np.int64)
    touched = np.empty(nodes, dtype=np.int64)
    capacity = 1024
    out_u = np.empty(capacity, dtype=np.int64)
    out_v = np.empty(capacity, dtype=np.int64)
    out_c = np.empty(capacity, dtype=np.int64)
    size = 0
    for u in range(first, last):
        found = count_partners(offsets, topics, topic_offsets, topic_nodes, group_lo, group_hi, u, count, touched)
        if size + found > capacity:
            while size + found > capacity:
                capacity *= 2
            out_u = np.concatenate((out_u[:size], np.empty(capacity - size, dtype=np.int64)))
            out_v = np.concatenate((out_v[:size], np.empty(capacity - size, dtype=np.int64)))
            out_c = np.concatenate((out_c[:size], np.empty(capacity - size, dtype=np.int64)))
        touched[:found].sort()  # rows come out in (u, v) order: rounds sort them by gain alone
        for q in range(found):
            v = touched[q]
            out_u[size] = u
            out_v[size] = v
            out_c[size] = count[v]
            count[v] = 0
            size += 1
    return out_u[:size], out_v[:size], out_c[:size]


@nb.njit(cache=True, nogil=True)
def order_by_gain(gains):
    """A stable order of the rows by gain, highest first (a counting sort: gains are small
    integers). Rows already in (u, v) order come out in key order."""
    top = 0
    for g in gains:
        if g > top:
            top = g
    counts = np.zeros(top + 2, dtype=np.int64)
    for g in gains:
        counts[top - g + 1] += 1
    for i in range(1, len(counts)):
        counts[i] += counts[i - 1]
    order = np.empty(len(gains), dtype=np.int64)
    for r in range(len(gains)):
        slot = top - gains[r]
        order[counts[slot]] = r
        counts[slot] += 1
    return order
