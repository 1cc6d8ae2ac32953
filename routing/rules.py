"""BeaConvey's routing rules (Protocols 4-5), written once, in numba, for every engine.

Both engines evaluate these functions and nothing else for a hop: the compiled engine
(`routing.kernels`) calls them on its broadcast tables, the DataFrame supersteps
(`routing.simulate`, `routing.trees`) call them through Arrow UDFs (`routing.protocols`) on the
routing-table rows joined to the messages. Why one implementation rather than one description
compiled into both a numba form and a Spark Column form: a rule written in two languages drifts
(the Column form and the numba form each had their own reading of `send` and Protocol 5 before),
and a generator from a shared description is a third program to keep right. A Pregel vertex
program is user code run on a vertex's state and messages anyway; here it is this module, and
the superstep plumbing (joins, explodes, tree multicast) stays in Spark.

Inputs are one node's rows of the routing tables (`routing.network`): `fdist`, the node's sorted
clockwise finger distances, and `subs`, the sorted ring positions of the topic's subscribers.
A message carries a target range [low, high) of ring positions, clockwise, low == high meaning
the whole ring; offsets are clockwise distances from the node holding the message.

* `send` (Protocol 4): forward towards a position along the finger nearest to it clockwise,
  i.e. the finger with the largest distance not past it (finger[0], distance 1, always fits).
* `next_hops` (Protocol 5) at the node v = low: Po takes v's nearest subscriber clockwise and
  v's subscribed fingers, inside (low, high), in clockwise order. When the last of them is not
  in the distant range [ceil(span / 2), span) of offsets, Pa1 and Pie add a pivot: v's nearest
  finger in the distant range; Pa1, when v has none, pivots at the start of the distant range.
  (The paper leaves both choices open; these are ours.)
* `spread`: the messages Protocol 4 sends on from low, one per next hop X_j, covering
  [X_j, X_j+1) (the last up to high); `hop_rows` is one superstep of a batch of messages.
"""

from __future__ import annotations

import numba as nb
import numpy as np

PO, PA1, PIE, SCRIBE, ISCRIBE = 0, 1, 2, 3, 4  # codes below SCRIBE are Protocol 5's range protocols
PROTOCOL_CODES = {"po": PO, "pa1": PA1, "pie": PIE, "scribe": SCRIBE, "iscribe": ISCRIBE}


@nb.njit(cache=True, nogil=True)
def first_above(values, x):
    """The first index of the sorted `values` holding a value > x (len(values): none)."""
    lo, hi = 0, len(values)
    while lo < hi:
        mid = (lo + hi) // 2
        if values[mid] <= x:
            lo = mid + 1
        else:
            hi = mid
    return lo


@nb.njit(cache=True, nogil=True)
def send(fdist, distance):
    """Index into `fdist` of the finger `send` takes towards a position `distance` ahead: the
    largest distance not past it (-1: none fits, and the message is lost)."""
    return first_above(fdist, distance) - 1


@nb.njit(cache=True, nogil=True)
def range_span(low, high, n):
    """How many positions [low, high) covers: n when low == high (the whole ring)."""
    width = (high - low) % n
    return n if width == 0 else width


@nb.njit(cache=True, nogil=True)
def next_hops(protocol, n, at, span, fdist, subs, out):
    """Protocol 5 at the node `at` = low: the sorted next-hop offsets X into `out` (room for
    len(fdist) + 2); their count."""
    count = 0
    for d in fdist:  # the subscribed fingers inside the range
        if d >= span:
            break
        position = (at + d) % n
        k = first_above(subs, position - 1)
        if k < len(subs) and subs[k] == position:
            out[count] = d
            count += 1
    if len(subs) > 0:  # and the nearest subscriber clockwise (wrapping to the first), if inside (0, span)
        first = first_above(subs, at)
        nearest = subs[first] if first < len(subs) else subs[0]
        near = (nearest - at) % n
        if 0 < near < span:
            slot = 0
            while slot < count and out[slot] < near:
                slot += 1
            if slot == count or out[slot] != near:
                for k in range(count, slot, -1):
                    out[k] = out[k - 1]
                out[slot] = near
                count += 1
    if protocol == PO:
        return count
    middle = (span + 1) // 2
    if count > 0 and out[count - 1] < middle:  # Pa1 and Pie: a pivot in the distant range
        pivot = -1
        for d in fdist:
            if middle <= d < span:
                pivot = d
                break
        if pivot < 0 and protocol == PA1:
            pivot = middle
        if pivot >= 0:
            out[count] = pivot
            count += 1
    return count


@nb.njit(cache=True, nogil=True)
def spread(protocol, n, at, high, fdist, subs, lows, highs):
    """Protocol 4 at the node `at` = low of a message [at, high): the ranges [lows[j], highs[j])
    of the messages it sends on (`lows`, `highs`: room for len(fdist) + 2); their count."""
    span = range_span(at, high, n)
    count = next_hops(protocol, n, at, span, fdist, subs, lows)
    for j in range(count):
        upper = lows[j + 1] if j + 1 < count else span
        highs[j] = (at + upper) % n
    for j in range(count):
        lows[j] = (at + lows[j]) % n
    return count


@nb.njit(cache=True, nogil=True)
def send_rows(f_offsets, f_values, distance):
    """`send` for a batch of rows (fingers as list offsets and values): the finger index of each
    row, -1 where none fits."""
    out = np.empty(len(distance), np.int64)
    for r in range(len(distance)):
        out[r] = send(f_values[f_offsets[r] : f_offsets[r + 1]], distance[r])
    return out


@nb.njit(cache=True, nogil=True)
def hop_rows(protocol, n, at, low, high, f_offsets, f_values, s_offsets, s_values):
    """One hop of a batch of range messages (Protocol 4) at the nodes `at`: a message not yet
    at its low goes on towards it with its range; one at its low is spread (`spread`). List
    offsets into the messages sent, their ranges (low, high) and the finger each leaves along
    (`send`; -1: none fits)."""
    rows = len(at)
    room = f_offsets[rows] - f_offsets[0] + 2 * rows
    offsets = np.empty(rows + 1, np.int64)
    lows, highs, fingers = np.empty(room, np.int64), np.empty(room, np.int64), np.empty(room, np.int64)
    count = 0
    for r in range(rows):
        offsets[r] = count
        fdist = f_values[f_offsets[r] : f_offsets[r + 1]]
        if at[r] != low[r]:
            lows[count], highs[count] = low[r], high[r]
            made = 1
        else:
            subs = s_values[s_offsets[r] : s_offsets[r + 1]]
            made = spread(protocol, n, at[r], high[r], fdist, subs, lows[count:], highs[count:])
        for j in range(count, count + made):
            fingers[j] = send(fdist, (lows[j] - at[r]) % n)
        count += made
    offsets[rows] = count
    return offsets, lows[:count], highs[:count], fingers[:count]
