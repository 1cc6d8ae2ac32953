"""Push-pull dissemination of one publication on one topic's subgraph
(docs/readings/feverfew.md#push-pull, Karp et al.), as a numpy kernel over the topic's own nodes:
topics are independent, so `disseminate` can run one topic per call in a grouped pandas function.

Synchronous cycles: every alive subscriber u reads the state at the start of cycle c and picks a
uniform alive neighbour v in G(t) (`draws[c, u]` modulo their number, neighbours in index order);
when exactly one of u, v is informed and its message age (cycles since it was informed) is at
most `age_limit`, the other is informed at the end of the cycle. A node that is not alive at a
cycle loses the message (it returns uninformed). Cycle 0 is the publication: the publisher alone
is informed, if alive."""

from __future__ import annotations

import numpy as np

NEVER = -1


def push_pull(
    indptr: np.ndarray,
    indices: np.ndarray,
    publisher: int,
    alive: np.ndarray,
    draws: np.ndarray,
    age_limit: int,
) -> np.ndarray:
    """Completion per cycle 0..C: informed alive subscribers over alive subscribers (NaN when none
    is alive). `indptr`/`indices`: the topic subgraph in CSR over local indices 0..n-1 (each
    undirected link both ways, neighbours sorted); `alive`: bool [C + 1, n]; `draws`: uint64
    [C + 1, n], the neighbour choices."""
    return completion(*push_pull_counts(indptr, indices, publisher, alive, draws, age_limit))


def completion(up: np.ndarray, informed: np.ndarray) -> np.ndarray:
    """informed / alive per cycle, NaN where no subscriber is alive."""
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.where(up > 0, informed / np.maximum(up, 1), np.nan)


def push_pull_counts(
    indptr: np.ndarray,
    indices: np.ndarray,
    publisher: int,
    alive: np.ndarray,
    draws: np.ndarray,
    age_limit: int,
) -> tuple[np.ndarray, np.ndarray]:
    """`push_pull`'s counts per cycle 0..C: alive subscribers, and informed alive subscribers."""
    cycles, n = alive.shape
    informed_at = np.full(n, NEVER, dtype=np.int64)
    up_count, informed_count = alive.sum(axis=1).astype(np.int64), np.zeros(cycles, dtype=np.int64)
    if alive[0, publisher]:
        informed_at[publisher] = 0
    informed_count[0] = _informed(informed_at, alive[0])
    for c in range(1, cycles):
        up = alive[c]
        informed_at[~up] = NEVER  # failed now: returns uninformed
        passing = (informed_at != NEVER) & (c - informed_at <= age_limit)
        newly = np.zeros(n, dtype=bool)
        for u in np.flatnonzero(up):
            neighbours = indices[indptr[u] : indptr[u + 1]]
            neighbours = neighbours[up[neighbours]]
            if neighbours.size == 0:
                continue
            v = int(neighbours[int(draws[c, u] % np.uint64(neighbours.size))])
            u_has, v_has = informed_at[u] != NEVER, informed_at[v] != NEVER
            if u_has and not v_has and passing[u]:
                newly[v] = True
            elif v_has and not u_has and passing[v]:
                newly[u] = True
        informed_at[newly] = c
        informed_count[c] = _informed(informed_at, up)
    return up_count, informed_count


def _informed(informed_at: np.ndarray, up: np.ndarray) -> int:
    return int(((informed_at != NEVER) & up).sum())
