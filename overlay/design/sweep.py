"""Compiled kernels of the in-memory regime: candidate pairs bucketed by bound, and the level sweep.

When an instance's candidate state fits one place's memory, the whole greedy runs here, in one
process, without a Spark job per round. The state is one list of candidate pairs per *bound
level* g (the pairs whose gain is at most g and was last known to be exactly g, or is the
shared-topic count before any refresh), each pair held as one code `(u * nodes + v) << stamp_bits
| stamp`, so that a list sorted by code is in (u, v) order: 8 bytes per candidate pair, nothing
else. The stamp is 1 + the links there were when the pair's gain was last computed (0: never):
a pair whose stamp is current has the exact gain of its level, the lazy greedy's "fresh" entry,
and is not computed again.

The sweep (our reading of the lazy greedy of ICDCS'16 Alg. 1 and 3 over integer gains): in a
phase, walk the levels from the top down; at level g no eligible pair can gain more than g (every
eligible pair of a higher level was refreshed below it or added), so the first pair of level g,
in (u, v) order, whose refreshed gain is still g is the key-maximal eligible link: it is added.
Every other eligible pair of the level moves down to the level of its fresh gain (gains never
grow), a pair whose gain reached 0 leaves. A pair that is not eligible in this phase stays on
its level, in order, for a later phase (eligibility only shrinks within a phase); a pair that can
never be eligible again (an end at GPM's last degree) leaves. So the links come out as the
canonical greedy sequence, with each pair refreshed only when it reaches the top of what is left.
A rebuild that prefers given pairs among equal gains (`level_of`) runs the same sweep over levels
2g + 1 (preferred) and 2g: the key (gain, preferred) falls as the gain does.

The relation ("same class") and the rule are given as flat arrays, so one kernel serves every
greedy: topic components (flat labels over subscription rows, the smaller class relabelled on a
merge) or GM2's blocks
(`overlay.design.blocks`); no rule, degree phases (`degrees`, `max_degree`), GSwicoS's ring
(`degrees`, path fragments as a union-find, `neighbours`) or GSwicoL's finger slots (`position`,
`mask`): a rule's `compiled()` form (`overlay.design.eligibility.CompiledRule`).
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
NO_RULE, DEGREE_RULE, RING_RULE, SLOT_RULE = 0, 1, 2, 3
ELIGIBLE, WAITING, DEAD = 0, 1, 2  # a pair now, in a later phase, never again
RING_EDGES, RING_NODES = 0, 1  # rule_state slots of the ring
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
def level_of(gain, pair, preferred):
    """A pair's level: its gain, or with `preferred` pairs (sorted indices u * nodes + v; a
    rebuild's yesterday links) 2 * gain + 1 for a preferred pair, 2 * gain for another, so that
    among equal gains the preferred pairs come first and the levels still fall with the gain."""
    if len(preferred) == 0:
        return gain
    at = np.searchsorted(preferred, pair)
    return 2 * gain + (1 if at < len(preferred) and preferred[at] == pair else 0)


@nb.njit(cache=True, nogil=True)
def build_levels(
    offsets, topics, topic_offsets, topic_nodes, group_lo, group_hi, top_level, stamp_bits, stamp, preferred, closed
):
    """The candidate pairs (u < v sharing a topic) in lists by shared-topic count, each in (u, v)
    order: a sparse product of the subscription matrix with its transpose, row by row. A row's
    partners come out in order by a sort when they are few, by a scan of the counters when they
    are many (a dense row: cheaper than sorting them).

    With classes (`group_lo`, `group_hi`: `kernels.count_partners`), a pair's level is its gain
    after a start's links, exact: its code carries `stamp` (1 + the links of the start).
    `preferred` (sorted pair indices, or empty): the levels are `level_of` (gain, preference).
    `closed` (a flag per node, or empty): nodes that can take no link in this run (GPM's at the
    degree budget already: an incremental design's full nodes); their pairs are left out, as the
    sweep would drop them unseen."""
    nodes = len(offsets) - 1
    levels = List()
    top = 2 * top_level + 1 if len(preferred) else top_level
    for _ in range(top + 1):
        levels.append(np.empty(FIRST_CAPACITY, dtype=np.int64))
    sizes = np.zeros(top + 1, dtype=np.int64)
    count = np.zeros(nodes, dtype=np.int64)
    touched = np.empty(nodes, dtype=np.int64)
    pruning = len(closed) > 0
    for u in range(nodes):
        if pruning and closed[u]:
            continue
        found = kernels.count_partners(
            offsets, topics, topic_offsets, topic_nodes, group_lo, group_hi, u, count, touched
        )
        if found * 16 < nodes - u:
            touched[:found].sort()
            for q in range(found):
                v = touched[q]
                if not (pruning and closed[v]):
                    level = level_of(count[v], u * nodes + v, preferred)
                    _push(levels, sizes, level, ((u * nodes + v) << stamp_bits) | stamp)
                count[v] = 0
        else:
            for v in range(u + 1, nodes):
                if count[v] > 0:
                    if not (pruning and closed[v]):
                        level = level_of(count[v], u * nodes + v, preferred)
                        _push(levels, sizes, level, ((u * nodes + v) << stamp_bits) | stamp)
                    count[v] = 0
    return levels, sizes


@nb.njit(cache=True, nogil=True)
def _order_level(items, ordered, size):
    """Put a level's list in (u, v) order: its first `ordered` codes are in order already (the
    pairs it kept or was built with); the codes moved down to it since are sorted and merged in."""
    if ordered >= size:
        return
    tail = np.sort(items[ordered:size])
    if ordered == 0 or items[ordered - 1] < tail[0]:
        items[ordered:size] = tail
        return
    head = items[:ordered].copy()
    i = j = 0
    for k in range(size):
        if j >= len(tail) or (i < ordered and head[i] < tail[j]):
            items[k] = head[i]
            i += 1
        else:
            items[k] = tail[j]
            j += 1


def stamp_bits_for(nodes: int, links: int) -> int:
    """Bits left for the stamp beside a pair's index, if they can count every link of the run
    (`links`: at most the candidate pairs and the links given at the start); else 0 (no stamps)."""
    free = 63 - max(1, nodes * nodes).bit_length()
    return free if free > 0 and links + 2 < 1 << free else 0


@nb.njit(cache=True, nogil=True)
def _mark(offsets, topics, row_of_topic, old, new):
    """Index node `new`'s subscription rows by topic (and forget `old`'s): the pairs of a level
    come grouped by u, so a pair's gain costs a lookup per topic of v, not a merge of two lists."""
    if old >= 0:
        for i in range(offsets[old], offsets[old + 1]):
            row_of_topic[topics[i]] = -1
    for i in range(offsets[new], offsets[new + 1]):
        row_of_topic[topics[i]] = i


@nb.njit(cache=True, nogil=True)
def _label_gain(offsets, topics, row_of_topic, label, v):
    """Shared topics of the marked node and v whose two subscription rows have different labels."""
    apart = 0
    for j in range(offsets[v], offsets[v + 1]):
        i = row_of_topic[topics[j]]
        if i >= 0 and label[i] != label[j]:
            apart += 1
    return apart


@nb.njit(cache=True, nogil=True)
def _label_merge(offsets, topics, row_of_topic, label, following, class_size, v):
    """Link the marked node and v: on each shared topic where they are apart, the smaller class
    takes the other's label (each row is relabelled O(log n) times in all); the classes joined."""
    joined = 0
    for j in range(offsets[v], offsets[v + 1]):
        i = row_of_topic[topics[j]]
        if i < 0:
            continue
        a, b = label[i], label[j]
        if a == b:
            continue
        joined += 1
        if class_size[a] < class_size[b]:
            a, b = b, a
        x = b
        last = b
        while x >= 0:
            label[x] = a
            last = x
            x = following[x]
        following[last] = following[a]  # b's members join a's list, after its head
        following[a] = b
        class_size[a] += class_size[b]
    return joined


@nb.njit(cache=True, nogil=True)
def labels_of(parent):
    """Flat labels of a union-find whose roots are the smallest rows (`kernels.flatten`), with each
    class's member list (`following`, from its head, the label row) and size."""
    kernels.flatten(parent)
    rows = len(parent)
    label = parent.copy()
    following = np.full(rows, -1, dtype=np.int64)
    class_size = np.ones(rows, dtype=np.int64)
    for i in range(rows):
        root = label[i]
        if root != i:
            following[i] = following[root]
            following[root] = i
            class_size[root] += 1
    return label, following, class_size


@nb.njit(cache=True, nogil=True)
def parent_of(label, parent):
    """Write labels back as a flattened union-find rooted at each class's smallest row."""
    smallest = np.full(len(label), -1, dtype=np.int64)
    for i in range(len(label)):
        if smallest[label[i]] < 0:
            smallest[label[i]] = i
    for i in range(len(label)):
        parent[i] = smallest[label[i]]


@nb.njit(cache=True, nogil=True)
def _gain(
    relation,
    offsets,
    topics,
    row_of_topic,
    label,
    forest_state,
    pblock,
    bparent,
    bhead,
    comp,
    comp_size,
    vmark,
    bmark,
    u,
    v,
):
    if relation == COMPONENTS_RELATION:
        return _label_gain(offsets, topics, row_of_topic, label, v)
    return blocks.pair_gain(offsets, topics, pblock, bparent, bhead, comp, comp_size, vmark, bmark, forest_state, u, v)


@nb.njit(cache=True, nogil=True)
def _merge(
    relation,
    offsets,
    topics,
    row_of_topic,
    label,
    following,
    class_size,
    forest_state,
    pblock,
    bparent,
    bhead,
    comp,
    comp_size,
    vmark,
    bmark,
    u,
    v,
):
    if relation == COMPONENTS_RELATION:
        return _label_merge(offsets, topics, row_of_topic, label, following, class_size, v)
    return blocks.merge_pair(offsets, topics, pblock, bparent, bhead, comp, comp_size, vmark, bmark, forest_state, u, v)


@nb.njit(cache=True, nogil=True)
def _complete(relation, state, forest_state, topics_count, shared_topics):
    if relation == COMPONENTS_RELATION:
        return state[COMPONENTS] <= topics_count
    return forest_state[blocks.COMPONENTS] <= topics_count and forest_state[blocks.BLOCKS] <= shared_topics


@nb.njit(cache=True, nogil=True)
def _slot_phase(position, n, a, b):
    """The phase of b as seen from a on the ring: i with (pos b - pos a) mod n in [2^i, 2^(i+1))."""
    distance = (position[b] - position[a]) % n
    phase = 0
    while distance >> (phase + 1):
        phase += 1
    return phase


@nb.njit(cache=True, nogil=True)
def _eligibility(rule, u, v, phase, degrees, max_degree, fragment, position, mask, rule_state):
    if rule == DEGREE_RULE:
        if max_degree > 0 and (degrees[u] >= max_degree or degrees[v] >= max_degree):
            return DEAD
        if degrees[u] >= phase or degrees[v] >= phase:
            return WAITING
        return ELIGIBLE
    if rule == RING_RULE:  # the closing link is the caller's (the only pair left)
        if degrees[u] >= 2 or degrees[v] >= 2 or kernels.find(fragment, u) == kernels.find(fragment, v):
            return DEAD
        return ELIGIBLE
    if rule == SLOT_RULE:
        n = len(position)
        if (mask[u] >> _slot_phase(position, n, u, v)) & 1 == 0 or (mask[v] >> _slot_phase(position, n, v, u)) & 1 == 0:
            return ELIGIBLE
        return DEAD  # slots only fill
    return ELIGIBLE


@nb.njit(cache=True, nogil=True)
def _accept(rule, u, v, degrees, fragment, neighbours, position, mask, rule_state):
    """Tell the rule of a link; the finger (owner, phase) it took under the slot rule, else (-1, -1)."""
    if rule == DEGREE_RULE:
        degrees[u] += 1
        degrees[v] += 1
    elif rule == RING_RULE:
        neighbours[u, degrees[u]] = v
        neighbours[v, degrees[v]] = u
        degrees[u] += 1
        degrees[v] += 1
        ru, rv = kernels.find(fragment, u), kernels.find(fragment, v)
        fragment[max(ru, rv)] = min(ru, rv)
        rule_state[RING_EDGES] += 1
    elif rule == SLOT_RULE:
        n = len(position)
        owner, other = u, v
        if (mask[u] >> _slot_phase(position, n, u, v)) & 1:
            owner, other = v, u
        phase = _slot_phase(position, n, owner, other)
        mask[owner] |= 1 << phase
        return owner, phase
    return -1, -1


@nb.njit(cache=True, nogil=True)
def _ring_complete(rule_state):
    n = rule_state[RING_NODES]
    return rule_state[RING_EDGES] >= (n if n >= 3 else max(n - 1, 0))


@nb.njit(cache=True, nogil=True)
def top_level(sizes):
    for g in range(len(sizes) - 1, 0, -1):
        if sizes[g] > 0:
            return g
    return 0


@nb.njit(cache=True, nogil=True)
def sweep(
    levels,
    sizes,
    ordered,
    state,
    nodes,
    offsets,
    topics,
    relation,
    label,
    following,
    class_size,
    forest_state,
    pblock,
    bparent,
    bhead,
    comp,
    comp_size,
    vmark,
    bmark,
    topics_count,
    shared_topics,
    rule,
    degrees,
    max_degree,
    fragment,
    neighbours,
    position,
    mask,
    rule_state,
    max_edges,
    link_budget,
    stamp_bits,
    preferred,
):
    """Run the greedy from `state` until `link_budget` links were added, a phase ended or the run
    finished (`ordered[g]`: how many of level g's first codes are in order); the links added (u, v, gain) in order. `max_degree`, `max_edges`: 0 for none.
    `state` says where the sweep stands and is updated, so the next call continues."""
    room = link_budget + 1  # a ring's closing link comes with the one before it
    out_u = np.empty(room, dtype=np.int64)
    out_v = np.empty(room, dtype=np.int64)
    out_g = np.empty(room, dtype=np.int64)
    out_owner = np.empty(room, dtype=np.int64)
    out_phase = np.empty(room, dtype=np.int64)
    added = 0
    phase = state[PHASE]
    if _complete(relation, state, forest_state, topics_count, shared_topics) or (
        rule == RING_RULE and _ring_complete(rule_state)
    ):
        state[FINISHED] = 1
        return out_u[:0], out_v[:0], out_g[:0], out_owner[:0], out_phase[:0]
    row_of_topic = np.full(topics.max() + 1 if len(topics) else 1, -1, dtype=topics.dtype)
    stamp_mask = (1 << stamp_bits) - 1
    marked = -1
    g = state[LEVEL]
    while g >= 1:
        items = levels[g]
        size = sizes[g]
        read, keep = state[READ], state[KEEP]
        if read == 0 and keep == 0:
            _order_level(items, ordered[g], size)
        while read < size:
            code = items[read]
            read += 1
            pair = code >> stamp_bits
            u = pair // nodes
            v = pair - u * nodes
            state[VISITS] += 1
            if (rule == DEGREE_RULE and degrees[u] >= phase) or (rule == RING_RULE and degrees[u] >= 2):
                # u cannot take a link in this phase: its whole run of pairs here (they are in
                # (u, v) order) waits for a later phase, or leaves when u is full for good.
                end = read + np.searchsorted(items[read:size], ((u + 1) * nodes) << stamp_bits)
                waits = rule == DEGREE_RULE and not (max_degree > 0 and degrees[u] >= max_degree)
                if waits:
                    for q in range(read - 1, end):
                        items[keep] = items[q]
                        keep += 1
                state[VISITS] += end - read
                read = end
                continue
            if rule != NO_RULE:
                eligibility = _eligibility(rule, u, v, phase, degrees, max_degree, fragment, position, mask, rule_state)
                if eligibility == DEAD:
                    continue  # never eligible again
                if eligibility == WAITING:
                    items[keep] = code  # for a later phase, in order
                    keep += 1
                    continue
            if relation == COMPONENTS_RELATION and u != marked:
                _mark(offsets, topics, row_of_topic, marked, u)
                marked = u
            stamp = (state[EDGES] + 1) & stamp_mask
            if stamp_bits > 0 and code & stamp_mask == stamp:
                level = g  # computed since the last link: exact
                gain = g >> 1 if len(preferred) else g
            else:
                gain = _gain(
                    relation,
                    offsets,
                    topics,
                    row_of_topic,
                    label,
                    forest_state,
                    pblock,
                    bparent,
                    bhead,
                    comp,
                    comp_size,
                    vmark,
                    bmark,
                    u,
                    v,
                )
                state[REFRESHES] += 1
                level = level_of(gain, pair, preferred)
            if level == g:
                joined = _merge(
                    relation,
                    offsets,
                    topics,
                    row_of_topic,
                    label,
                    following,
                    class_size,
                    forest_state,
                    pblock,
                    bparent,
                    bhead,
                    comp,
                    comp_size,
                    vmark,
                    bmark,
                    u,
                    v,
                )
                if joined != gain:
                    raise AssertionError("a link joined a different number of classes than its gain")
                state[COMPONENTS] -= joined
                out_owner[added], out_phase[added] = _accept(
                    rule,
                    u,
                    v,
                    degrees,
                    fragment,
                    neighbours,
                    position,
                    mask,
                    rule_state,
                )
                out_u[added], out_v[added], out_g[added] = u, v, gain
                added += 1
                state[EDGES] += 1
                if (
                    rule == RING_RULE
                    and rule_state[RING_EDGES] == rule_state[RING_NODES] - 1
                    and rule_state[RING_NODES] >= 3
                ):
                    # A Hamiltonian path: the one pair left closes the circle, when it gains.
                    a = b = -1
                    for x in range(len(degrees)):
                        if degrees[x] < 2:
                            if a < 0:
                                a = x
                            else:
                                b = x
                    if relation == COMPONENTS_RELATION:
                        _mark(offsets, topics, row_of_topic, marked, a)
                        marked = a
                    closing = _gain(
                        relation,
                        offsets,
                        topics,
                        row_of_topic,
                        label,
                        forest_state,
                        pblock,
                        bparent,
                        bhead,
                        comp,
                        comp_size,
                        vmark,
                        bmark,
                        a,
                        b,
                    )
                    if closing > 0:
                        joined = _merge(
                            relation,
                            offsets,
                            topics,
                            row_of_topic,
                            label,
                            following,
                            class_size,
                            forest_state,
                            pblock,
                            bparent,
                            bhead,
                            comp,
                            comp_size,
                            vmark,
                            bmark,
                            a,
                            b,
                        )
                        state[COMPONENTS] -= joined
                        _accept(rule, a, b, degrees, fragment, neighbours, position, mask, rule_state)
                        out_u[added], out_v[added], out_g[added] = a, b, closing
                        out_owner[added] = out_phase[added] = -1
                        added += 1
                        state[EDGES] += 1
                    state[FINISHED] = 1
                    return out_u[:added], out_v[:added], out_g[:added], out_owner[:added], out_phase[:added]
                done = (
                    _complete(relation, state, forest_state, topics_count, shared_topics)
                    or (max_edges > 0 and state[EDGES] >= max_edges)
                    or (rule == RING_RULE and _ring_complete(rule_state))
                )
                if done or added == link_budget:
                    state[READ], state[KEEP], state[FINISHED] = read, keep, 1 if done else 0
                    if not done and read == size:  # the level is through: close it
                        sizes[g] = ordered[g] = keep
                        state[READ] = state[KEEP] = 0
                        state[LEVEL] = g - 1
                    return out_u[:added], out_v[:added], out_g[:added], out_owner[:added], out_phase[:added]
            elif level > g:
                raise AssertionError("a gain above its bound: gains must never grow")
            elif gain > 0:
                _push(levels, sizes, level, (pair << stamp_bits) | stamp)
        sizes[g] = ordered[g] = keep
        state[READ] = state[KEEP] = 0
        g -= 1
        state[LEVEL] = g
    # The phase ran dry: no eligible pair has a positive gain.
    if rule == DEGREE_RULE and (max_degree == 0 or phase < max_degree) and top_level(sizes) > 0:
        state[PHASE] = phase + 1
        state[LEVEL] = top_level(sizes)
    else:
        state[FINISHED] = 1
    return out_u[:added], out_v[:added], out_g[:added], out_owner[:added], out_phase[:added]
