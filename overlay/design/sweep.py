"""Compiled kernels of the in-memory regime: candidate pairs bucketed by bound, and the level sweep.

When an instance's candidate state fits one place's memory, the whole greedy runs here, in one
process, without a Spark job per round. The state is one list of candidate pairs per *bound
level* g (the pairs whose gain is at most g and was last known to be exactly g, or is the
shared-topic count before any refresh), each pair held as one code `u * nodes + v`, so that a
list sorted by code is in (u, v) order: 8 bytes per candidate pair, nothing else.

The sweep (our reading of the lazy greedy of ICDCS'16 Alg. 1 and 3 over integer gains): in a
phase, walk the levels from the top down; at level g no eligible pair can gain more than g (every
eligible pair of a higher level was refreshed below it or added), so the first pair of level g,
in (u, v) order, whose refreshed gain is still g is the key-maximal eligible link: it is added.
Every other eligible pair of the level moves down to the level of its fresh gain (gains never
grow), a pair whose gain reached 0 leaves. A pair that is not eligible in this phase stays on
its level, in order, for a later phase (eligibility only shrinks within a phase); a pair that can
never be eligible again (an end at GPM's last degree) leaves. So the links come out as the
canonical greedy sequence, with each pair refreshed only when it reaches the top of what is left.

The relation ("same class") and the rule are given as flat arrays, so one kernel serves every
greedy: topic components (`parent`, `overlay.design.kernels`) or GM2's blocks
(`overlay.design.blocks`); no rule, or degree phases (`degrees`, `max_degree`).
"""

from __future__ import annotations

import numba as nb
import numpy as np
from numba.typed import List

from overlay.design import blocks, kernels

# state[...] slots of a sweep, kept across calls (one int64 array)
PHASE, LEVEL, READ, KEEP, EDGES, COMPONENTS, REFRESHES, FINISHED, VISITS = range(9)
STATE_SLOTS = 9
# relations and rules the kernel knows
COMPONENTS_RELATION, BLOCKS_RELATION = 0, 1
NO_RULE, DEGREE_RULE = 0, 1
FIRST_CAPACITY = 16


@nb.njit(cache=True, nogil=True)
def _push(levels, sizes, level, code):
    """Append a pair code to a level's list, doubling its array when full."""
    items = levels[level]
    size = sizes[level]
    if size == len(items):
        grown = np.empty(2 * len(items), dtype=np.int64)
        grown[:size] = items[:size]
        levels[level] = grown
        items = grown
    items[size] = code
    sizes[level] = size + 1


@nb.njit(cache=True, nogil=True)
def build_levels(offsets, topics, topic_offsets, topic_nodes, top_level):
    """The candidate pairs (u < v sharing a topic) in lists by shared-topic count, each in (u, v)
    order: a sparse product of the subscription matrix with its transpose, row by row."""
    nodes = len(offsets) - 1
    levels = List()
    for _ in range(top_level + 1):
        levels.append(np.empty(FIRST_CAPACITY, dtype=np.int64))
    sizes = np.zeros(top_level + 1, dtype=np.int64)
    count = np.zeros(nodes, dtype=np.int64)
    touched = np.empty(nodes, dtype=np.int64)
    for u in range(nodes):
        found = 0
        for i in range(offsets[u], offsets[u + 1]):
            t = topics[i]
            lo, hi = topic_offsets[t], topic_offsets[t + 1]
            start = lo + np.searchsorted(topic_nodes[lo:hi], u, side="right")
            for j in range(start, hi):
                v = topic_nodes[j]
                if count[v] == 0:
                    touched[found] = v
                    found += 1
                count[v] += 1
        touched[:found].sort()
        for q in range(found):
            v = touched[q]
            _push(levels, sizes, count[v], u * nodes + v)
            count[v] = 0
    return levels, sizes


@nb.njit(cache=True, nogil=True)
def pair_count(sizes):
    return sizes[1:].sum()


@nb.njit(cache=True, nogil=True)
def _gain(relation, offsets, topics, parent, forest_state, pblock, bparent, bhead, comp, comp_size, vmark, bmark, u, v):
    if relation == COMPONENTS_RELATION:
        return kernels.pair_gain(offsets, topics, parent, u, v)
    return blocks.pair_gain(offsets, topics, pblock, bparent, bhead, comp, comp_size, vmark, bmark, forest_state, u, v)


@nb.njit(cache=True, nogil=True)
def _merge(relation, offsets, topics, parent, forest_state, pblock, bparent, bhead, comp, comp_size, vmark, bmark, u, v):
    if relation == COMPONENTS_RELATION:
        return kernels.merge_pair(offsets, topics, parent, u, v)
    return blocks.merge_pair(offsets, topics, pblock, bparent, bhead, comp, comp_size, vmark, bmark, forest_state, u, v)


@nb.njit(cache=True, nogil=True)
def _complete(relation, state, forest_state, topics_count, shared_topics):
    if relation == COMPONENTS_RELATION:
        return state[COMPONENTS] <= topics_count
    return forest_state[blocks.COMPONENTS] <= topics_count and forest_state[blocks.BLOCKS] <= shared_topics


@nb.njit(cache=True, nogil=True)
def top_level(sizes):
    for g in range(len(sizes) - 1, 0, -1):
        if sizes[g] > 0:
            return g
    return 0


@nb.njit(cache=True, nogil=True)
def sweep(
    levels, sizes, state, nodes, offsets, topics,
    relation, parent, forest_state, pblock, bparent, bhead, comp, comp_size, vmark, bmark, topics_count, shared_topics,
    rule, degrees, max_degree, max_edges, link_budget,
):
    """Run the greedy from `state` until `link_budget` links were added, a phase ended or the run
    finished; the links added (u, v, gain) in order. `max_degree`, `max_edges`: 0 for none.
    `state` says where the sweep stands and is updated, so the next call continues."""
    out_u = np.empty(link_budget, dtype=np.int64)
    out_v = np.empty(link_budget, dtype=np.int64)
    out_g = np.empty(link_budget, dtype=np.int64)
    added = 0
    phase = state[PHASE]
    if _complete(relation, state, forest_state, topics_count, shared_topics):
        state[FINISHED] = 1
        return out_u[:0], out_v[:0], out_g[:0]
    g = state[LEVEL]
    while g >= 1:
        items = levels[g]
        size = sizes[g]
        read, keep = state[READ], state[KEEP]
        if read == 0 and keep == 0:
            items[:size].sort()  # pairs moved down from higher levels join in (u, v) order
        while read < size:
            code = items[read]
            read += 1
            u = code // nodes
            v = code - u * nodes
            state[VISITS] += 1
            if rule == DEGREE_RULE:
                if max_degree > 0 and (degrees[u] >= max_degree or degrees[v] >= max_degree):
                    continue  # never eligible again
                if degrees[u] >= phase or degrees[v] >= phase:
                    items[keep] = code  # for a later phase, in order
                    keep += 1
                    continue
            gain = _gain(relation, offsets, topics, parent, forest_state, pblock, bparent, bhead, comp, comp_size,
                         vmark, bmark, u, v)
            state[REFRESHES] += 1
            if gain == g:
                joined = _merge(relation, offsets, topics, parent, forest_state, pblock, bparent, bhead, comp,
                                comp_size, vmark, bmark, u, v)
                if joined != gain:
                    raise AssertionError("a link joined a different number of classes than its gain")
                state[COMPONENTS] -= joined
                if rule == DEGREE_RULE:
                    degrees[u] += 1
                    degrees[v] += 1
                out_u[added], out_v[added], out_g[added] = u, v, gain
                added += 1
                state[EDGES] += 1
                done = _complete(relation, state, forest_state, topics_count, shared_topics) or (
                    max_edges > 0 and state[EDGES] >= max_edges
                )
                if done or added == link_budget:
                    state[READ], state[KEEP], state[FINISHED] = read, keep, 1 if done else 0
                    if not done and read == size:  # the level is through: close it
                        sizes[g] = keep
                        state[READ] = state[KEEP] = 0
                        state[LEVEL] = g - 1
                    return out_u[:added], out_v[:added], out_g[:added]
            elif gain > g:
                raise AssertionError("a gain above its bound: gains must never grow")
            elif gain > 0:
                _push(levels, sizes, gain, code)
        sizes[g] = keep
        state[READ] = state[KEEP] = 0
        g -= 1
        state[LEVEL] = g
    # The phase ran dry: no eligible pair has a positive gain.
    if rule == DEGREE_RULE and (max_degree == 0 or phase < max_degree) and top_level(sizes) > 0:
        state[PHASE] = phase + 1
        state[LEVEL] = top_level(sizes)
    else:
        state[FINISHED] = 1
    return out_u[:added], out_v[:added], out_g[:added]
