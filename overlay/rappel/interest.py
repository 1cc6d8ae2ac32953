"""What a Rappel node knows of another's interests and place (§3.2; our reading:
docs/readings/rappel.md#filters, #utilities, #audit): subscription filters, the pair and set utilities, and
one audit step (Alg. 1).

A node's subscriptions are a bit set held in a Python int: in `bloom` mode the 1024-bit Bloom
filter (3 hashes per feed: draw(0, BLOOM_HASH, k, feed) mod 1024, the same for every run), in
`exact` mode bit f for feed f (tests, ablations). Every formula reads bits only, so both modes
share it: J(i, j) = |B_i & B_j| / |B_i | B_j| (Jaccard of set bits), and

    U(i, j) = J(i, j) / d(i, j)
    U(i, F) = sum_{j in F} (J(i, j) + |{b in B_i & B_j : no other k in F has b}| / |B_i|) / d(i, j)

(Fig. 3), d in seconds, at least `MIN_DISTANCE` (docs/readings/rappel.md#utilities: the unit does not
matter, delta is relative; the guard keeps co-located nodes finite)."""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence

from overlay.draws import BLOOM_HASH, draw_int

BLOOM_BITS = 1024
BLOOM_HASHES = 3
MODES = ("bloom", "exact")
MIN_DISTANCE = 1e-4  # seconds
DELTA = 0.01  # an audit's swap must raise the set utility by more than 1%


def bloom_bits(feed: int, bits: int = BLOOM_BITS, hashes: int = BLOOM_HASHES) -> list[int]:
    """The bits a feed sets in a Bloom filter."""
    return [draw_int(0, BLOOM_HASH, k, feed) % bits for k in range(hashes)]


def filter_of(feeds: Iterable[int], mode: str = "bloom", bits: int = BLOOM_BITS, hashes: int = BLOOM_HASHES) -> int:
    """A node's subscription bit set (see the module doc)."""
    if mode not in MODES:
        raise ValueError(f"mode must be one of {', '.join(MODES)}, got {mode!r}")
    out = 0
    for feed in feeds:
        if mode == "exact":
            out |= 1 << feed
        else:
            for bit in bloom_bits(feed, bits, hashes):
                out |= 1 << bit
    return out


def holds(filter_bits: int, feed: int, mode: str = "bloom") -> bool:
    """Whether the filter (maybe falsely, in bloom mode) holds the feed."""
    if mode == "exact":
        return bool(filter_bits >> feed & 1)
    return all(filter_bits >> bit & 1 for bit in bloom_bits(feed))


def false_positive_rate(feeds: int, bits: int = BLOOM_BITS, hashes: int = BLOOM_HASHES) -> float:
    """(1 - e^(-k n / m))^k: the chance a filter of `feeds` feeds holds another feed."""
    return (1.0 - math.exp(-hashes * feeds / bits)) ** hashes


def jaccard(a: int, b: int) -> float:
    union = (a | b).bit_count()
    return (a & b).bit_count() / union if union else 0.0


def distance(a: Sequence[float], b: Sequence[float]) -> float:
    """Seconds between two coordinates given in milliseconds, at least `MIN_DISTANCE`."""
    return max(math.dist(a, b) / 1000.0, MIN_DISTANCE)


def pair_utility(mine: int, theirs: int, seconds: float) -> float:
    return jaccard(mine, theirs) / max(seconds, MIN_DISTANCE)


def set_utility(mine: int, friends: Mapping[int, tuple[int, float]]) -> float:
    """U(i, F) of Fig. 3; `friends`: id -> (their filter, distance in seconds)."""
    if not mine:
        return 0.0
    total = 0.0
    size = mine.bit_count()
    for j, (theirs, seconds) in friends.items():
        others = 0
        for k, (bits, _) in friends.items():
            if k != j:
                others |= bits
        unique = (mine & theirs & ~others).bit_count()
        total += (jaccard(mine, theirs) + unique / size) / max(seconds, MIN_DISTANCE)
    return total


def audit(
    mine: int,
    friends: Mapping[int, tuple[int, float]],
    candidate: int,
    known: tuple[int, float],
    alpha: int,
    delta: float = DELTA,
) -> int | None:
    """Alg. 1 (its loop over CANDIDATES read as over FRIENDS): None if `candidate` is not viable;
    else the friend it replaces, or -1 when the set has room. Ties between replacements: the
    smaller id."""
    if len(friends) < alpha:
        return -1
    base = set_utility(mine, friends)
    best, victim = -math.inf, None
    for j in sorted(friends):
        trial = {k: v for k, v in friends.items() if k != j}
        trial[candidate] = known
        value = set_utility(mine, trial)
        if value > best:
            best, victim = value, j
    return victim if best > (1.0 + delta) * base else None
