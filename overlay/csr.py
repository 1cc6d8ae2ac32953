"""Compressed sparse rows from plain arrays: the adjacency the compiled graph kernels walk."""

from __future__ import annotations

import numpy as np


def run_starts(ordered: np.ndarray) -> np.ndarray:
    """Where each run of equal values starts in `ordered` (sorted, or grouped), as int64."""
    if len(ordered) == 0:
        return np.zeros(0, dtype=np.int64)
    return np.flatnonzero(np.r_[True, ordered[1:] != ordered[:-1]]).astype(np.int64)


def undirected_csr(a: np.ndarray, b: np.ndarray, vertices: int) -> tuple[np.ndarray, np.ndarray]:
    """(offsets, targets) of the undirected graph with edges (a[i], b[i]) over 0..vertices-1:
    `targets[offsets[x]:offsets[x + 1]]` are x's neighbours, ascending; self-loops dropped, a
    repeated edge kept as many times as it is given."""
    tails = np.concatenate([a, b]).astype(np.int64)
    heads = np.concatenate([b, a]).astype(np.int64)
    keep = tails != heads
    tails, heads = tails[keep], heads[keep]
    order = np.lexsort((heads, tails))
    offsets = np.searchsorted(tails[order], np.arange(vertices + 1)).astype(np.int64)
    return offsets, np.ascontiguousarray(heads[order])
