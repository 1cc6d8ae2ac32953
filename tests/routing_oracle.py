"""A message-level routing oracle in pure Python: one publication at a time, one message at a time.

It follows BeaConvey Protocols 4-5 and section 5.1 as the project reads them (routing/ module
docstrings): ring positions 0..n-1, `fingers[v]` = v's finger distances, ranges [low, high) with
low == high the whole ring. `link(u, v)` (optional) is the latency of the link u -> v: each
arrival carries the sum along its path (None without). `rp` (optional) roots a topic's tree at a
given position instead of the hashed one.
"""

from __future__ import annotations

from collections import Counter, deque
from dataclasses import dataclass, field

KNUTH = 2654435761


def rendezvous(topic: int, n: int) -> int:
    return ((topic * KNUTH) % (1 << 32)) * n >> 32


def send_step(fingers, v, target, n):
    """The next node from v towards target: the finger nearest to it without passing it."""
    distance = (target - v) % n
    return (v + max(d for d in fingers[v] if d <= distance)) % n


def next_hops(protocol, fingers, subs, v, low, high, n):
    span = (high - low) % n or n
    in_range = sorted((s - v) % n for s in subs if 0 < (s - v) % n < span)
    hops = set(in_range[:1])
    hops |= {d for d in fingers[v] if d < span and (v + d) % n in subs}
    hops = sorted(hops)
    if protocol in ("pa1", "pie") and hops:
        middle = (span + 1) // 2
        if hops[-1] < middle:
            distant = [d for d in fingers[v] if middle <= d < span]
            if distant:
                hops.append(min(distant))
            elif protocol == "pa1":
                hops.append(middle)
    return hops


def _no_latency(u, v):
    return None


def _add(latency, u, v, link):
    step = link(u, v)
    return None if latency is None or step is None else latency + step


@dataclass
class Routed:
    """What one publication caused: arrivals (node, hops, addressed to it, latency, sender)."""

    arrivals: list[tuple[int, int, bool, float | None, int]] = field(default_factory=list)

    def deliveries(self, subs, publisher):
        return sorted(
            (at, hops) for at, hops, target, _, _ in self.arrivals if target and at in subs and at != publisher
        )

    def latencies(self, subs, publisher):
        """{subscriber: the delivery's latency}."""
        return {at: ms for at, _, target, ms, _ in self.arrivals if target and at in subs and at != publisher}

    def received(self):
        return Counter(at for at, *_ in self.arrivals)

    def sent(self):
        return Counter(sender for *_, sender in self.arrivals)

    def pure_forwards(self, subs):
        return sum(1 for at, *_ in self.arrivals if at not in subs)


def route_beaconvey(protocol, fingers, subs, publisher, n, link=_no_latency) -> Routed:
    routed = Routed()
    start = 0.0 if link is not _no_latency else None
    queue = deque([(publisher, publisher, publisher, 0, start)])  # (at, low, high, hops, latency)
    while queue:
        at, low, high, hops, ms = queue.popleft()
        if at != low:
            outgoing = [(low, high)]
        else:
            xs = next_hops(protocol, fingers, subs, at, low, high, n)
            ends = xs[1:] + [(high - low) % n or n]
            outgoing = [((at + x) % n, (at + end) % n) for x, end in zip(xs, ends)]
        for new_low, new_high in outgoing:
            nxt = send_step(fingers, at, new_low, n)
            after = _add(ms, at, nxt, link)
            routed.arrivals.append((nxt, hops + 1, nxt == new_low, after, at))
            queue.append((nxt, new_low, new_high, hops + 1, after))
    return routed


def route(fingers, source, target, n) -> list[int]:
    """Greedy unicast: the nodes after `source` up to `target`."""
    path, at = [], source
    while at != target:
        at = send_step(fingers, at, target, n)
        path.append(at)
    return path


def scribe_children(fingers, subs, topic, n, rp=None):
    rp = rendezvous(topic, n) if rp is None else rp
    children = {}
    for s in subs:
        previous = s
        for at in route(fingers, s, rp, n):
            children.setdefault((at,), set()).add(((previous,), True))
            previous = at
    return rp, children


def iscribe_children(fingers, subs, topic, n, rp=None):
    rp = rendezvous(topic, n) if rp is None else rp
    children, ends = {}, set()
    for s in subs:
        prefix = (rp,)
        for at in route(fingers, rp, s, n):
            children.setdefault(prefix, set()).add(prefix + (at,))
            prefix = prefix + (at,)
        ends.add(prefix)
    return rp, {key: {(child, child in ends) for child in kids} for key, kids in children.items()}


def route_rendezvous(protocol, fingers, subs, topic, publisher, n, link=_no_latency, rp=None) -> Routed:
    build = scribe_children if protocol == "scribe" else iscribe_children
    rp, children = build(fingers, subs, topic, n, rp)
    routed = Routed()
    hops, ms, previous = 0, (0.0 if link is not _no_latency else None), publisher
    for at in route(fingers, publisher, rp, n):
        hops, ms = hops + 1, _add(ms, previous, at, link)
        routed.arrivals.append((at, hops, at == rp, ms, previous))
        previous = at
    queue = deque([((rp,), hops, ms)])
    while queue:
        key, depth, at_ms = queue.popleft()
        for child, target in sorted(children.get(key, ())):
            child_ms = _add(at_ms, key[-1], child[-1], link)
            routed.arrivals.append((child[-1], depth + 1, target, child_ms, key[-1]))
            queue.append((child, depth + 1, child_ms))
    return routed


def route_publication(protocol, fingers, subs_by_topic, topic, publisher, n, link=_no_latency, rp=None) -> Routed:
    subs = set(subs_by_topic.get(topic, ()))
    if protocol in ("po", "pa1", "pie"):
        return route_beaconvey(protocol, fingers, subs, publisher, n, link)
    return route_rendezvous(protocol, fingers, subs, topic, publisher, n, link, rp)
