"""Compiled kernels of GM2's "same class" relation: the blocks of every topic, kept as links arrive.

GM2 (kTCO paper, Alg. 1; docs/readings/ktco.md#gm2) gains on a topic when the two ends lie in no
common block (2-connected component) of the topic's subgraph. Each topic's blocks are held as a
rooted *block-cut forest* over subscription rows (row i: one node's subscription to one topic):

* `pblock[i]`: the block above row i (its parent in the forest), -1 while i is isolated;
* `bhead[b]`: the row b hangs from (its parent cut vertex), -1 for the root block of a component;
* blocks merge through a union-find over block ids (`bparent`; a block's head is kept at its root).

Two rows i != j of one topic share a block iff `P(i) == P(j)`, or `P(i)`'s head is j, or `P(j)`'s
head is i (P = the root of the block above). So a flattened copy (`label`, `head`) answers the
question in constant time on the executors, like the components' union-find (a component relation
is the special case without heads).

A link (i, j) on a topic where they share no block:

* in two components: the smaller tree is re-rooted at its end (the parent pointers along one
  path reversed) and hung, through a new two-row block (a bridge), from the other end;
* in one component: every block on the i-j path of the forest merges into one (a new cycle), found
  by walking up from both ends in turn until one walk meets the other's marks (the lowest common
  ancestor), so the work is proportional to the path it merges.

Counts kept as it goes: topic components and non-trivial blocks; a 2TCO is reached when every
topic has one component and every topic with two or more subscribers one block.
"""

from __future__ import annotations

import numba as nb
import numpy as np

from overlay.design.kernels import apart_in, find

# state[...] slots (one int64 array, so the kernels can update counters in place)
NEXT_BLOCK, COMPONENTS, BLOCKS, STAMP = 0, 1, 2, 3
STATE_SLOTS = 4


@nb.njit(cache=True, nogil=True)
def shares_block(pblock, bparent, bhead, i, j):
    """Whether rows i != j (of one topic) lie in one block."""
    a, b = pblock[i], pblock[j]
    if a >= 0:
        a = find(bparent, a)
    if b >= 0:
        b = find(bparent, b)
    return not apart_in(a, b, bhead, i, j)


@nb.njit(cache=True, nogil=True)
def _reroot(pblock, bparent, bhead, x):
    """Make row x the root of its tree: reverse the parent pointers on the path from x up."""
    if pblock[x] < 0:
        return
    below = x
    block = find(bparent, pblock[x])
    while True:
        head = bhead[block]
        bhead[block] = below
        if head < 0:
            break
        above = find(bparent, pblock[head])
        pblock[head] = block
        below, block = head, above
    pblock[x] = -1  # x now has no parent; the caller hangs it


@nb.njit(cache=True, nogil=True)
def _bridge(pblock, bparent, bhead, comp, comp_size, state, i, j):
    """Link rows i and j of two components through a new block {i, j}."""
    ci, cj = find(comp, i), find(comp, j)
    if comp_size[ci] < comp_size[cj]:
        i, j, ci, cj = j, i, cj, ci
    # j's side is the smaller: re-root it at j and hang it from i by the new block.
    _reroot(pblock, bparent, bhead, j)
    block = state[NEXT_BLOCK]
    state[NEXT_BLOCK] += 1
    bparent[block] = block
    if pblock[i] < 0:  # i isolated (so is j): the new block is a root
        bhead[block] = -1
        pblock[i] = block
    else:
        bhead[block] = i
    pblock[j] = block
    if ci < cj:
        comp[cj] = ci
    else:
        comp[ci] = cj
    comp_size[ci if ci < cj else cj] = comp_size[ci] + comp_size[cj]
    state[COMPONENTS] -= 1
    state[BLOCKS] += 1


@nb.njit(cache=True, nogil=True)
def _up(pblock, bparent, bhead, is_block, x):
    """The parent of a forest element (a row, or a block id): (is_block, id), id -1 at a root."""
    if is_block:
        return False, bhead[x]
    return True, find(bparent, pblock[x])


@nb.njit(cache=True, nogil=True)
def _walk_up(pblock, bparent, bhead, vmark, bmark, is_block, x, own, other):
    """One step of a walk towards the root: (is_block, x, met) of the parent element, `met` when
    the other walk marked it already (else it gets this walk's mark)."""
    is_block, x = _up(pblock, bparent, bhead, is_block, x)
    if x < 0:
        return is_block, x, False
    marks = bmark if is_block else vmark
    if marks[x] == other:
        return is_block, x, True
    marks[x] = own
    return is_block, x, False


@nb.njit(cache=True, nogil=True)
def _close_cycle(pblock, bparent, bhead, vmark, bmark, state, i, j):
    """Merge every block on the i-j path of one component's forest into one block."""
    state[STAMP] += 2
    mark_i, mark_j = state[STAMP], state[STAMP] + 1
    vmark[i], vmark[j] = mark_i, mark_j
    ib, ix, jb, jx = False, i, False, j  # the two walks' current elements
    meet_block, meet = False, -1
    while meet < 0:
        if ix >= 0:
            ib, ix, met = _walk_up(pblock, bparent, bhead, vmark, bmark, ib, ix, mark_i, mark_j)
            if met:
                meet_block, meet = ib, ix
                break
        if jx >= 0:
            jb, jx, met = _walk_up(pblock, bparent, bhead, vmark, bmark, jb, jx, mark_j, mark_i)
            if met:
                meet_block, meet = jb, jx
                break
        if ix < 0 and jx < 0:
            raise AssertionError("rows of one component without a common ancestor")
    # The merged block hangs where the path's top hangs.
    head = bhead[meet] if meet_block else meet
    root = -1
    merged = 0
    for start in (i, j):
        if start == meet and not meet_block:
            continue  # this end is the top of the path
        is_block, x = False, start
        while True:
            is_block, x = _up(pblock, bparent, bhead, is_block, x)
            if x == meet and is_block == meet_block:
                break
            if is_block:
                merged += 1
                if root < 0:
                    root = x
                else:
                    bparent[x] = root
    if meet_block:
        merged += 1
        bparent[meet] = root
        bparent[root] = root
    bhead[root] = head
    state[BLOCKS] -= merged - 1


@nb.njit(cache=True, nogil=True)
def link_rows(pblock, bparent, bhead, comp, comp_size, vmark, bmark, state, i, j):
    """Add a link between rows i and j of one topic; whether they shared no block before (a gain)."""
    if shares_block(pblock, bparent, bhead, i, j):
        return False
    if find(comp, i) != find(comp, j):
        _bridge(pblock, bparent, bhead, comp, comp_size, state, i, j)
    else:
        _close_cycle(pblock, bparent, bhead, vmark, bmark, state, i, j)
    return True


@nb.njit(cache=True, nogil=True)
def _walk_shared(offsets, topics, pblock, bparent, bhead, comp, comp_size, vmark, bmark, state, u, v, merge):
    """Walk the shared topics of nodes u and v (a merge of two sorted lists); count those on which
    they lie in no common block, and add the link on them when `merge`."""
    i, i_end = offsets[u], offsets[u + 1]
    j, j_end = offsets[v], offsets[v + 1]
    apart = 0
    while i < i_end and j < j_end:
        if topics[i] < topics[j]:
            i += 1
        elif topics[i] > topics[j]:
            j += 1
        else:
            if merge:
                apart += link_rows(pblock, bparent, bhead, comp, comp_size, vmark, bmark, state, i, j)
            elif not shares_block(pblock, bparent, bhead, i, j):
                apart += 1
            i += 1
            j += 1
    return apart


@nb.njit(cache=True, nogil=True)
def pair_gain(offsets, topics, pblock, bparent, bhead, comp, comp_size, vmark, bmark, state, u, v):
    """Shared topics of nodes u and v on which they lie in no common block."""
    return _walk_shared(offsets, topics, pblock, bparent, bhead, comp, comp_size, vmark, bmark, state, u, v, False)


@nb.njit(cache=True, nogil=True)
def merge_pair(offsets, topics, pblock, bparent, bhead, comp, comp_size, vmark, bmark, state, u, v):
    """Add the link (u, v) on every shared topic; the gain it realised."""
    return _walk_shared(offsets, topics, pblock, bparent, bhead, comp, comp_size, vmark, bmark, state, u, v, True)


@nb.njit(cache=True, nogil=True)
def flat_relation(pblock, bparent, bhead):
    """(label, head) for the executors: each row's block root (-1 isolated) and each root's head."""
    rows = len(pblock)
    label = np.empty(rows, dtype=np.int64)
    head = np.full(len(bhead), -1, dtype=np.int64)
    for i in range(rows):
        if pblock[i] < 0:
            label[i] = -1
        else:
            root = find(bparent, pblock[i])
            label[i] = root
            head[root] = bhead[root]
    return label, head
