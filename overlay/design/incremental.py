"""Day two: the links an incremental design keeps from yesterday's overlay, before its greedy.

An incremental design (docs/concepts/day-two.md) starts from an earlier run's links, matched to
today's node ids by their keys (the caller does the matching), and:

1. drops the links with an end that left (`departed`);
2. drops the links whose ends no longer share a topic (`unshared`): they connect nothing;
3. restores the budget (`over_budget`): while a node has more links than the degree budget, the
   link removed is the one with the most over-budget ends, then the fewest shared topics (the
   least gain), then the largest (u, v), the link the canonical greedy would have taken last;
   then, under an edge budget m, the links beyond m go by the fewest shared topics, then the
   largest (u, v). Preferring links between two over-budget nodes removes the fewest links for
   the degree budget when excess is spread thin, as it is after a day's churn;
4. releases redundant links where the budget binds (`release_redundant`, `released`): a kept link
   at a node at its degree budget (under an edge budget, any kept link) that no topic needs,
   because every topic it serves stays connected by the other kept links, goes. It connects
   nothing the overlay lacks without it, and it holds a place in the budget that the greedy can
   give a link that does;

then the same greedy continues from the kept links (`overlay.design.greedy.GreedyStart`): its
links after them are the canonical greedy sequence from that start.
"""

from __future__ import annotations

import dataclasses
import heapq
from dataclasses import dataclass, field

import numpy as np

from overlay.design import kernels
from overlay.design.classes import ComponentClasses, Subscriptions


@dataclass(frozen=True)
class KeptLinks:
    """What the carry-over kept of the previous links, and why the others went."""

    links: np.ndarray  # (k, 2) int64, u < v, in (u, v) order
    departed: int
    unshared: int
    over_budget: int
    released: int = 0
    # Computed on the way, handed on so that no later step computes them again:
    shared: np.ndarray | None = field(default=None, compare=False, repr=False)  # topics each link's ends share
    components: np.ndarray | None = field(default=None, compare=False, repr=False)  # the links' union-find over rows

    @property
    def removed(self) -> int:
        return self.departed + self.unshared + self.over_budget + self.released


def shared_topics(subscriptions: Subscriptions, links: np.ndarray) -> np.ndarray:
    """How many topics the two ends of each link share (each node's topics are sorted)."""
    links = np.ascontiguousarray(links, dtype=np.int64).reshape(-1, 2)
    return kernels.shared_topic_count(
        subscriptions.offsets,
        subscriptions.topics,
        np.ascontiguousarray(links[:, 0]),
        np.ascontiguousarray(links[:, 1]),
    )


def keep_links(
    subscriptions: Subscriptions,
    links: np.ndarray,
    departed: int,
    max_degree: int | None = None,
    max_edges: int | None = None,
) -> KeptLinks:
    """The previous links that stay. `links`: those whose both ends are still there, in today's
    ids (`departed` counts the others, dropped by the caller's key matching)."""
    links = np.sort(np.asarray(links, dtype=np.int64).reshape(-1, 2), axis=1)
    links = links[links[:, 0] != links[:, 1]]
    _, first = np.unique(links[:, 0] * (int(links.max(initial=0)) + 1) + links[:, 1], return_index=True)
    links = links[first]  # distinct, in (u, v) order
    shared = shared_topics(subscriptions, links)
    useful = shared > 0
    unshared = int((~useful).sum())
    links, shared = links[useful], shared[useful]
    keep = np.ones(len(links), dtype=bool)
    if max_degree is not None:
        keep &= _within_degree(links, shared, max_degree, subscriptions.nodes)
    if max_edges is not None and keep.sum() > max_edges:
        order = [i for i in np.flatnonzero(keep)]
        order.sort(key=lambda i: (shared[i], -links[i, 0], -links[i, 1]))
        keep[order[: int(keep.sum()) - max_edges]] = False
    return KeptLinks(links[keep], departed, unshared, int((~keep).sum()), shared=shared[keep])


def _within_degree(links: np.ndarray, shared: np.ndarray, max_degree: int, nodes: int) -> np.ndarray:
    """Which links stay so that no node has more than `max_degree` (see the module doc)."""
    degree = np.bincount(links.reshape(-1), minlength=nodes)
    keep = np.ones(len(links), dtype=bool)

    def over_ends(i: int) -> int:
        u, v = links[i]
        return int(degree[u] > max_degree) + int(degree[v] > max_degree)

    over = (degree[links[:, 0]] > max_degree).astype(np.int64) + (degree[links[:, 1]] > max_degree)
    heap = [(-int(over[i]), int(shared[i]), -int(links[i, 0]), -int(links[i, 1]), int(i)) for i in np.flatnonzero(over)]
    heapq.heapify(heap)
    while heap:
        negative, s, nu, nv, i = heapq.heappop(heap)
        now = over_ends(i)
        if now == 0:
            continue
        if -negative != now:  # an end came within the budget since: its place in the order moved
            heapq.heappush(heap, (-now, s, nu, nv, i))
            continue
        keep[i] = False
        u, v = links[i]
        degree[u] -= 1
        degree[v] -= 1
    return keep


def release_redundant(
    subscriptions: Subscriptions,
    kept: KeptLinks,
    max_degree: int | None = None,
    max_edges: int | None = None,
) -> KeptLinks:
    """`kept` without its redundant links where the budget binds (step 4 of the module doc).

    Which links count as redundant depends on an order, since two links closing one cycle are each
    redundant while the other stays: the links are taken one at a time, those with no end at its
    degree budget first, then one, then two (so the releasable ones are judged last, against all
    the others), then more shared topics first, then (u, v); a releasable link that joins no two
    classes of the links taken before it goes, every other link is taken. The topic components
    of what stays are those of `kept`: the TCC count does not change. Without a budget nothing
    binds and `kept` is returned as it is."""
    links = kept.links
    if (max_degree is None and max_edges is None) or len(links) == 0:
        return kept
    if max_edges is not None:
        bound_ends = np.ones(len(links), dtype=np.int64)
    else:
        at_budget = np.bincount(links.reshape(-1), minlength=subscriptions.nodes) >= max_degree
        bound_ends = at_budget[links[:, 0]].astype(np.int64) + at_budget[links[:, 1]]
    shared = kept.shared if kept.shared is not None else shared_topics(subscriptions, links)
    # links are in (u, v) order: a stable sort by (bound ends, more shared first) keeps it within ties
    most = int(shared.max(initial=0))
    order = np.argsort(bound_ends * (most + 1) + (most - shared), kind="stable")
    classes = ComponentClasses(subscriptions)
    marked = kernels.redundant_in_order(
        subscriptions.offsets,
        subscriptions.topics,
        classes.parent,
        np.ascontiguousarray(links[order, 0]),
        np.ascontiguousarray(links[order, 1]),
        bound_ends[order] > 0,
    )
    released = np.zeros(len(links), dtype=bool)
    released[order[marked]] = True
    # The released links joined no classes: the union-find is that of the links that stay.
    stay = ~released
    return dataclasses.replace(
        kept, links=links[stay], released=int(released.sum()), shared=shared[stay], components=classes.parent
    )


def open_topics(
    subscriptions: Subscriptions, links: np.ndarray, components: np.ndarray | None = None
) -> tuple[Subscriptions, int, ComponentClasses]:
    """The subscriptions of the topics `links` leave disconnected, over the same node ids; how
    many topics with subscribers the links connect already; and the links' topic components over
    those rows (the greedy engine's start classes: it need not merge the links again). A link's
    gain counts only topics whose subscribers it joins, so the greedy from `links` adds the same
    links, with the same gains, on these alone: an incremental design's candidate pairs are the
    pairs sharing an open topic. `components`: the links' union-find over the subscription rows,
    when the caller has it (`KeptLinks.components`; flattened here)."""
    if components is None:
        components = ComponentClasses(subscriptions).parent
        links = np.ascontiguousarray(links, dtype=np.int64).reshape(-1, 2)
        kernels.merge_links(
            subscriptions.offsets,
            subscriptions.topics,
            components,
            np.ascontiguousarray(links[:, 0]),
            np.ascontiguousarray(links[:, 1]),
        )
    kernels.flatten(components)  # roots are the smallest rows of their classes: one pass
    topics = subscriptions.topics
    split = kernels.split_topics(topics, components, int(topics.max(initial=-1)) + 1)
    keep = split[topics]
    # The rows kept stay in (node, topic) order: the CSR offsets are the running count of them,
    # and a class's root (its smallest row, on the same topic) is kept with it.
    kept_before = np.concatenate([[0], np.cumsum(keep, dtype=np.int64)])
    restricted = Subscriptions(kept_before[subscriptions.offsets], np.ascontiguousarray(topics[keep]))
    classes = ComponentClasses(restricted, parent=kept_before[components[keep]])
    return restricted, len(subscriptions.topic_sizes) - int(split.sum()), classes
