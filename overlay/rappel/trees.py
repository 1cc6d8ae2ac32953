"""Rappel's per-feed trees, the pure pieces (§4; docs/readings/rappel.md#join, #rejoin): the order key, one
join request handled at a node (Alg. 2), and the periodic rejoin's choice of ancestor and expected
load.

Order key of x in feed f's tree: key(x) = (d(x, P(f)), x), the publisher's the least of all
((-1, P): it is the root even beside a node at distance 0). Invariant: key(parent) < key(child)."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

DENY, FORWARD, OK = "deny", "forward", "ok"
BETA = 5  # children per node and feed


def order_key(node: int, publisher: int, seconds_to_publisher: float) -> tuple[float, int]:
    return (-1.0, node) if node == publisher else (seconds_to_publisher, node)


@dataclass(frozen=True)
class JoinAnswer:
    """What node i answers to j's join: deny, forward to `to`, or ok; on an eviction (case 5),
    the child let go and the node it is told to rejoin at (ChangeParent)."""

    kind: str
    to: int | None = None
    evicted: int | None = None
    rejoin_at: int | None = None


def receive_join(
    i: int,
    j: int,
    subscribes: bool,
    parent: int | None,
    children: Sequence[int],
    key: Callable[[int], tuple[float, int]],
    seconds: Callable[[int, int], float],
    beta: int = BETA,
) -> JoinAnswer:
    """Alg. 2 at node i for j's join request: (1) i does not subscribe (a Bloom false positive):
    deny; (2) key(i) > key(j): forward to i's parent; (3) room for a child: ok; (4) every child's
    key below j's: forward to the child nearest j; (5) else take j, evict the child of largest key
    and tell it to rejoin at the nearest to it of i's children, j included. Ties of distance:
    the smaller id."""
    if not subscribes:
        return JoinAnswer(DENY)
    if key(i) > key(j):
        return JoinAnswer(FORWARD, to=parent)
    if len(children) < beta:
        return JoinAnswer(OK)
    if all(key(c) < key(j) for c in children):
        return JoinAnswer(FORWARD, to=min(children, key=lambda c: (seconds(c, j), c)))
    evicted = max(children, key=key)
    kept = [c for c in children if c != evicted] + [j]
    return JoinAnswer(OK, evicted=evicted, rejoin_at=min(kept, key=lambda c: (seconds(c, evicted), c)))


def rejoin_distances(height: int, beta: int = BETA) -> list[tuple[int, float]]:
    """(p, probability) of rejoining at the ancestor p levels up, p = 2..height: beta^-p over
    the sum of beta^-q, q = 2..height (§4.3). Empty below height 2."""
    weights = [(p, float(beta) ** -p) for p in range(2, height + 1)]
    total = sum(w for _, w in weights)
    return [(p, w / total) for p, w in weights]


def expected_rejoin_load(height: int, tree_height: int, beta: int = BETA) -> float:
    """Expected rejoin requests per period at a node of `height` in a complete beta-ary tree of
    `tree_height` (§4.3): sum over p = height + 2..H of 1 / sum_{q=2..p} beta^-q."""
    return sum(1.0 / sum(float(beta) ** -q for q in range(2, p + 1)) for p in range(height + 2, tree_height + 1))
