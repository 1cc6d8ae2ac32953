"""A Rappel node's candidate set (§3.3-3.4; docs/readings/rappel.md#candidates): nodes heard of through the
ping-ack gossip, with votes, an audited flag and when each was last heard of.

* Hearing of q (q is not the node itself nor one of its friends): a new q enters with one vote,
  unaudited; a known one gets a vote more; either way it is refreshed now.
* The set holds at most `capacity` (3 alpha^2 + 2 alpha): beyond it the least recently heard of
  leaves first (ties: the smaller id).
* An audit takes the unaudited candidate of most votes (ties: the most recently heard of, then the
  smaller id: our reading) and marks it audited.
* When the friends change, every candidate is open to audit again: votes 0, unaudited."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass


def capacity(alpha: int) -> int:
    """Friends of friends (alpha^2), friends of fans (2 alpha^2) and the fans (2 alpha)."""
    return 3 * alpha * alpha + 2 * alpha


@dataclass
class Candidate:
    votes: int
    audited: bool
    heard: int  # the round last heard of


def hear(
    candidates: dict[int, Candidate], heard_of: Iterable[int], me: int, friends: Iterable[int], now: int, limit: int
) -> None:
    """Votes for every id heard of (in place), then the LRU eviction down to `limit`."""
    skip = set(friends) | {me}
    for q in heard_of:
        if q in skip:
            continue
        known = candidates.get(q)
        if known is None:
            candidates[q] = Candidate(1, False, now)
        else:
            known.votes += 1
            known.heard = now
    if len(candidates) > limit:
        for q in sorted(candidates, key=lambda q: (candidates[q].heard, q))[: len(candidates) - limit]:
            del candidates[q]


def next_audit(candidates: dict[int, Candidate]) -> int | None:
    """The candidate an audit takes now (marked audited), or None when all were audited."""
    open_ = [q for q, c in candidates.items() if not c.audited]
    if not open_:
        return None
    chosen = min(open_, key=lambda q: (-candidates[q].votes, -candidates[q].heard, q))
    candidates[chosen].audited = True
    return chosen


def reopen(candidates: dict[int, Candidate]) -> None:
    """After any change of the friends: every candidate back to 0 votes, unaudited."""
    for c in candidates.values():
        c.votes, c.audited = 0, False
