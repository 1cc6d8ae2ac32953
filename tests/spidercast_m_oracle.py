"""A plain-Python SpiderCastM (ICDCS'16 section IX, with the reading in
`overlay/design/spidercast.py`'s docstring), written from that text alone, and Spark's xxhash64
for its tie-breaks, so that a seed gives the same overlay here as in Spark."""

from __future__ import annotations

MASK = (1 << 64) - 1
PRIME1, PRIME2, PRIME3 = 0x9E3779B185EBCA87, 0xC2B2AE3D27D4EB4F, 0x165667B19E3779F9
PRIME4, PRIME5 = 0x85EBCA77C2B2AE63, 0x27D4EB2F165667C5
SPARK_SEED = 42


def _rotl(x: int, r: int) -> int:
    return ((x << r) | (x >> (64 - r))) & MASK


def _fmix(h: int) -> int:
    h ^= h >> 33
    h = (h * PRIME2) & MASK
    h ^= h >> 29
    h = (h * PRIME3) & MASK
    return h ^ (h >> 32)


def _hash_int(value: int, seed: int) -> int:
    h = (seed + PRIME5 + 4) & MASK
    h ^= ((value & 0xFFFFFFFF) * PRIME1) & MASK
    return _fmix((_rotl(h, 23) * PRIME2 + PRIME3) & MASK)


def _hash_long(value: int, seed: int) -> int:
    h = (seed + PRIME5 + 8) & MASK
    h ^= (_rotl((value * PRIME2) & MASK, 31) * PRIME1) & MASK
    return _fmix((_rotl(h, 27) * PRIME1 + PRIME4) & MASK)


def xxhash64(*values: tuple[str, int]) -> int:
    """Spark's `xxhash64` of ("int" | "long", value) columns, as a signed 64-bit integer."""
    h = SPARK_SEED
    for kind, value in values:
        h = (_hash_int if kind == "int" else _hash_long)(value, h)
    return h - (1 << 64) if h >> 63 else h


def spidercast_m_oracle(
    subs: dict[int, set[int]], d: int, seed: int, kg: int = 3, kr: int = 1, max_rounds: int | None = None
) -> list[tuple[int, int, int]]:
    """(u, v, round) of every link in the order they were added (round, priority, u, v)."""

    def h(round_no: int, a: int, b: int) -> int:
        return xxhash64(("int", seed), ("int", round_no), ("long", a), ("long", b))

    nodes = sorted(subs)
    neighbours: dict[int, set[int]] = {p: set() for p in nodes}
    added: list[tuple[int, int, int]] = []
    for round_no in range(1, (max_rounds or 50 * d + 50) + 1):
        open_nodes = [p for p in nodes if len(neighbours[p]) < d]

        def coverage(p: int, t: int) -> int:
            return sum(1 for q in neighbours[p] if t in subs[q])

        proposals = set()
        for p in open_nodes:
            targets = [q for q in open_nodes if q != p and q not in neighbours[p]]
            pick = None
            if (len(neighbours[p]) + 1) % (kg + kr) != 0:  # a greedy turn
                needy = {t for t in subs[p] if coverage(p, t) < kg}
                scores = {q: len(needy & subs[q]) for q in targets}
                scored = [q for q in targets if scores[q] > 0]
                if scored:
                    pick = max(scored, key=lambda q: (scores[q], -h(round_no, p, q), q))
            if pick is None:  # a random turn, or a greedy one with nothing to gain
                topic = min(subs[p], key=lambda t: (coverage(p, t) >= kr, h(round_no, p, t)))
                sharing = [q for q in targets if topic in subs[q]]
                if sharing:
                    pick = min(sharing, key=lambda q: (h(round_no, p, q), q))
            if pick is not None:
                proposals.add((min(p, pick), max(p, pick)))
        if not proposals:
            break
        order = sorted(proposals, key=lambda e: (h(round_no, *e), e))
        kept: dict[int, int] = {}
        accepted = []
        for u, v in order:  # each end keeps its proposals in this order while it has free degree
            ends = [kept.get(n, 0) < d - len(neighbours[n]) for n in (u, v)]
            for n in (u, v):
                kept[n] = kept.get(n, 0) + 1
            if all(ends):
                accepted.append((u, v))
        for u, v in accepted:
            neighbours[u].add(v)
            neighbours[v].add(u)
            added.append((u, v, round_no))
    return added
