"""Compiled inner loops of the routing supersteps: one batch of publications routed to the end.

Publications never interact, so a task can carry each of its publications through every
superstep on its own and emit the arrivals the DataFrame supersteps (`routing.simulate`) emit:
a message's hop count is its superstep. The hop rules are `routing.rules`, the functions the
DataFrame supersteps run too; the trees are `routing.trees`' over the same tables
(`routing.network`), in array form:

* fingers by ring position in CSR form: `f_offsets` (n + 1), `f_dist` (sorted clockwise
  distances per node), `f_lat` (each link's latency, NaN without latencies);
* subscribers by dense topic index in CSR form: `t_offsets`, `t_subs` (sorted positions), and
  `t_root`, each topic's tree root RP(t) (-1: none, and the publication is dropped as the
  DataFrame join drops it).

Arrivals are (publication row, at, hops, latency, sender, target) with NaN latency when the
network has none. Float latencies are summed in the order a message travels, as the supersteps
sum them, so both give the same doubles.
"""

from __future__ import annotations

import numba as nb
import numpy as np

from overlay.gossip.event_rows import longer, taller
from routing.rules import PROTOCOL_CODES, SCRIBE, send, spread

__all__ = ["PROTOCOL_CODES", "route_publications"]


@nb.njit(cache=True, nogil=True)
def _finger(f_offsets, f_dist, at, distance):
    """Index into f_dist of the finger `rules.send` takes from the node `at` (-1: none fits)."""
    i = send(f_dist[f_offsets[at] : f_offsets[at + 1]], distance)
    return f_offsets[at] + i if i >= 0 else -1


@nb.njit(cache=True, nogil=True)
def _emit(arrivals, lats, count, row, at, hops, lat, sender, target):
    """Append one arrival, growing the buffers when full."""
    arrivals, lats = taller(arrivals, count + 1), longer(lats, count + 1)
    arrivals[count, 0], arrivals[count, 1], arrivals[count, 2] = row, at, hops
    arrivals[count, 3], arrivals[count, 4] = sender, target
    lats[count] = lat
    return arrivals, lats, count + 1


@nb.njit(cache=True, nogil=True)
def route_publications(
    protocol,
    n,
    limit,
    has_latency,
    topics,
    publishers,
    f_offsets,
    f_dist,
    f_lat,
    t_offsets,
    t_subs,
    t_root,
):
    """Every arrival of the publications (dense topic index, publisher position): an int64 array
    of (row, at, hops, sender, target) rows and their latencies; `limit` bounds the hops."""
    arrivals = np.empty((1024, 5), np.int64)  # row, at, hops, sender, target
    lats = np.empty(1024, np.float64)
    count = 0
    # a FIFO of messages of one publication: at, low, high, hops, latency
    q_at = np.empty(1024, np.int64)
    q_low = np.empty(1024, np.int64)
    q_high = np.empty(1024, np.int64)
    q_hops = np.empty(1024, np.int64)
    q_lat = np.empty(1024, np.float64)
    max_fingers = 0
    for v in range(n):
        max_fingers = max(max_fingers, f_offsets[v + 1] - f_offsets[v])
    low_buffer = np.empty(max_fingers + 2, np.int64)
    high_buffer = np.empty(max_fingers + 2, np.int64)
    # Scribe: each node's next hop towards RP(t) on the topic's tree (-2: not on it)
    parent = np.full(n, -2, np.int64)
    parent_lat = np.zeros(n, np.float64)
    depth = np.full(n, -1, np.int64)
    cum = np.zeros(n, np.float64)
    marked = np.empty(n, np.int64)
    stack = np.empty(n, np.int64)
    start = 0.0 if has_latency else np.nan
    for row in range(len(topics)):
        topic, publisher = topics[row], publishers[row]
        subs_lo, subs_hi = t_offsets[topic], t_offsets[topic + 1]
        if protocol < SCRIBE:
            head, tail = 0, 1
            q_at[0], q_low[0], q_high[0], q_hops[0], q_lat[0] = publisher, publisher, publisher, 0, start
            while head < tail:
                at, low, high, hops, lat = q_at[head], q_low[head], q_high[head], q_hops[head], q_lat[head]
                head += 1
                if f_offsets[at] == f_offsets[at + 1]:
                    continue  # a node without fingers: the supersteps' join drops the message
                if hops + 1 >= limit:
                    raise RuntimeError("messages still moving after the superstep limit: routing does not terminate")
                if at != low:  # `send`: one hop towards low, the range kept
                    outgoing = 1
                    low_buffer[0], high_buffer[0] = low, high
                else:
                    fdist = f_dist[f_offsets[at] : f_offsets[at + 1]]
                    subs = t_subs[subs_lo:subs_hi]
                    outgoing = spread(protocol, n, at, high, fdist, subs, low_buffer, high_buffer)
                for j in range(outgoing):
                    new_low, new_high = low_buffer[j], high_buffer[j]
                    i = _finger(f_offsets, f_dist, at, (new_low - at) % n)
                    if i < 0:
                        continue
                    nxt = (at + f_dist[i]) % n
                    after = lat + f_lat[i]
                    arrivals, lats, count = _emit(arrivals, lats, count, row, nxt, hops + 1, after, at, nxt == new_low)
                    if tail == len(q_at):
                        q_at, q_low, q_high = longer(q_at, tail + 1), longer(q_low, tail + 1), longer(q_high, tail + 1)
                        q_hops, q_lat = longer(q_hops, tail + 1), longer(q_lat, tail + 1)
                    q_at[tail], q_low[tail], q_high[tail], q_hops[tail], q_lat[tail] = (
                        nxt,
                        new_low,
                        new_high,
                        hops + 1,
                        after,
                    )
                    tail += 1
            continue
        rp = t_root[topic]
        if rp < 0:
            continue
        # unicast from the publisher to RP(t)
        at, hops, lat = publisher, 0, start
        lost = False
        while at != rp:
            i = _finger(f_offsets, f_dist, at, (rp - at) % n)
            if i < 0:
                lost = True
                break
            if hops + 1 >= limit:
                raise RuntimeError("messages still moving after the superstep limit: routing does not terminate")
            nxt = (at + f_dist[i]) % n
            lat = lat + f_lat[i]
            arrivals, lats, count = _emit(arrivals, lats, count, row, nxt, hops + 1, lat, at, nxt == rp)
            at, hops = nxt, hops + 1
        if lost:
            continue
        if protocol == SCRIBE:
            # the tree: every subscriber's route to RP(t), each node's parent its next hop
            found = 0
            for k in range(subs_lo, subs_hi):
                x = t_subs[k]
                steps = 0
                while x != rp and parent[x] == -2:
                    i = _finger(f_offsets, f_dist, x, (rp - x) % n)
                    if i < 0:
                        raise RuntimeError("a tree route reached a node without a finger towards RP(t)")
                    parent[x] = (x + f_dist[i]) % n
                    parent_lat[x] = f_lat[i]
                    marked[found] = x
                    found += 1
                    x = parent[x]
                    steps += 1
                    if steps > limit:
                        raise RuntimeError("tree routes still moving after the hop limit: the fingers do not route")
            depth[rp], cum[rp] = hops, lat
            for m in range(found):
                # climb to a node of known depth, then fill the chain in downwards (top-down sums)
                top, y = 0, marked[m]
                while depth[y] < 0:
                    stack[top] = y
                    top += 1
                    y = parent[y]
                while top > 0:
                    top -= 1
                    z = stack[top]
                    depth[z] = depth[parent[z]] + 1
                    cum[z] = cum[parent[z]] + parent_lat[z]
            for m in range(found):
                x = marked[m]
                if depth[x] > limit:
                    raise RuntimeError("messages still moving after the superstep limit: routing does not terminate")
                arrivals, lats, count = _emit(arrivals, lats, count, row, x, depth[x], cum[x], parent[x], True)
            for m in range(found):
                x = marked[m]
                parent[x], depth[x] = -2, -1
            depth[rp] = -1
        else:
            # the trie of the routes from RP(t) to every subscriber: a node per route prefix
            children = nb.typed.Dict.empty(key_type=nb.types.int64, value_type=nb.types.int64)
            size_trie = subs_hi - subs_lo + 1
            trie_at = np.empty(size_trie, np.int64)
            trie_parent = np.empty(size_trie, np.int64)
            trie_depth = np.empty(size_trie, np.int64)
            trie_cum = np.empty(size_trie, np.float64)
            trie_end = np.zeros(size_trie, np.bool_)
            trie_at[0], trie_parent[0], trie_depth[0], trie_cum[0] = rp, -1, hops, lat
            nodes = 1
            for k in range(subs_lo, subs_hi):
                s = t_subs[k]
                x, node = rp, 0
                while x != s:
                    i = _finger(f_offsets, f_dist, x, (s - x) % n)
                    if i < 0:
                        raise RuntimeError("a tree route reached a node without a finger towards its subscriber")
                    nxt = (x + f_dist[i]) % n
                    key = node * n + nxt
                    if key in children:
                        node = children[key]
                    else:
                        if nodes == len(trie_at):
                            trie_at, trie_parent = longer(trie_at, nodes + 1), longer(trie_parent, nodes + 1)
                            trie_depth, trie_cum = longer(trie_depth, nodes + 1), longer(trie_cum, nodes + 1)
                            trie_end = longer(trie_end, nodes + 1)
                            trie_end[nodes:] = False
                        trie_at[nodes], trie_parent[nodes] = nxt, node
                        trie_depth[nodes] = trie_depth[node] + 1
                        trie_cum[nodes] = trie_cum[node] + f_lat[i]
                        children[key] = nodes
                        node = nodes
                        nodes += 1
                        if trie_depth[node] > limit:
                            raise RuntimeError("tree routes still moving after the hop limit: the fingers do not route")
                    x = nxt
                trie_end[node] = True
            for node in range(1, nodes):
                arrivals, lats, count = _emit(
                    arrivals,
                    lats,
                    count,
                    row,
                    trie_at[node],
                    trie_depth[node],
                    trie_cum[node],
                    trie_at[trie_parent[node]],
                    trie_end[node],
                )
    return arrivals[:count], lats[:count]
