"""One hop of BeaConvey's Protocols 4-5 as Spark column expressions over ring offsets.

A message carries a target range [low, high) of ring positions, clockwise, low == high meaning
the whole ring. Offsets are clockwise distances from the node holding the message.

* `send` (Protocol 4): forward towards a position along the finger nearest to it clockwise,
  i.e. the finger with the largest distance not past it (finger[0], distance 1, always fits).
* next hops (Protocol 5) at the node v = low: Po takes v's nearest subscriber clockwise and v's
  subscribed fingers, inside (low, high), in clockwise order. When the last of them is not in
  the distant range [ceil(span / 2), span) of offsets, Pa1 and Pie add a pivot: v's nearest
  finger in the distant range; Pa1, when v has none, pivots at the start of the distant range.
  (The paper leaves both choices open; these are ours.)
"""

from __future__ import annotations

from pyspark.sql import Column
from pyspark.sql import functions as F

PROTOCOLS = ("po", "pa1", "pie", "scribe", "iscribe")
BEACONVEY = ("po", "pa1", "pie")


def greedy_step(fdist: Column, distance: Column) -> Column:
    """The distance of the finger to forward along towards a position `distance` ahead."""
    return F.try_element_at(F.filter(fdist, lambda d: d <= distance), F.lit(-1))


def hop_latency(fdist: Column, flat: Column, distance: Column) -> Column:
    """The latency of the link `greedy_step` takes (`flat` in `fdist`'s order; null without
    latencies): `fdist` is sorted, so the fingers not past the position are a prefix whose
    length is the chosen finger's index."""
    return F.try_element_at(flat, F.size(F.filter(fdist, lambda d: d <= distance)))


def range_span(low: Column, high: Column, n: int) -> Column:
    """How many positions [low, high) covers: n when low == high (the whole ring)."""
    width = F.pmod(high - low, F.lit(n))
    return F.when(width == 0, F.lit(n)).otherwise(width)


def next_hops(protocol: str, at: Column, span: Column, fdist: Column, subs: Column, n: int) -> Column:
    """The sorted next-hop offsets X of Protocol 5 at the node `at` = low of a message."""
    after = F.filter(subs, lambda p: p > at)
    nearest = F.coalesce(F.try_element_at(after, F.lit(1)), F.try_element_at(subs, F.lit(1)))
    nearest_offset = F.pmod(nearest - at, F.lit(n))
    near = F.when((nearest_offset > 0) & (nearest_offset < span), F.array(nearest_offset)).otherwise(
        F.array().cast("array<bigint>")
    )
    finger_positions = F.transform(fdist, lambda d: F.pmod(at + d, F.lit(n)))
    matched = F.filter(
        F.transform(F.array_intersect(finger_positions, subs), lambda p: F.pmod(p - at, F.lit(n))),
        lambda d: d < span,
    )
    hops = F.array_sort(F.array_distinct(F.concat(near, matched)))
    if protocol == "po":
        return hops
    middle = F.floor((span + 1) / 2).cast("long")
    wants_pivot = (F.size(hops) > 0) & (F.try_element_at(hops, F.lit(-1)) < middle)
    finger_pivot = F.try_element_at(F.filter(fdist, lambda d: (d >= middle) & (d < span)), F.lit(1))
    pivot = finger_pivot if protocol == "pie" else F.coalesce(finger_pivot, middle)
    return F.when(wants_pivot & pivot.isNotNull(), F.concat(hops, F.array(pivot))).otherwise(hops)
