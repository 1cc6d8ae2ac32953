"""Rappel's per-feed dissemination trees (§4-5; our reading: docs/readings/rappel.md, "The trees") as a small
discrete-event loop per feed, one round (30 s, six ticks of 5 s) at a time. Trees of different
feeds are independent given the friends of their members, so a round runs every feed on its own
(one Python call per feed, anywhere); the friendship overlay (`overlay.rappel.friendship`) gives
the entry points, and the nodes met on join walks go back to it as votes.

**The feed's members** are its subscribers and its publisher P (the root). Keys:
key(x) = (d(x, P), x), the publisher's (-1, P) (`trees.order_key`); L(a, b) is the latency, the
coordinates' distance in ms. A member is *attached* when it is the publisher and online, or has
a parent. Round r covers ticks 6(r - 1) .. 6(r - 1) + 5; tick k is time 5000 k ms.

Every member starts offline, knowing nothing. Parent pointers never form a cycle: a member only
ever attaches under a smaller key. A member's *chain* is its parent, the parent's
parent, ... up to the root (nearest first) when each of them is online and has a parent (the
root excepted); otherwise it has none.

**At the start of round r** (tick s = 6(r - 1)), members in ascending id, one after the other:
* an online member that `presence.up(x, r)` says is down fails: it leaves its parent's children,
  forgets everything (parent, children, updates, plans: a fresh member) and is offline; each of
  its children is an orphan: it notices at its detection tick, the first tick >= s whose
  (tick - phase) is a multiple of 6 (its pings to the parent go every 30 s, phase =
  draw(RAPPEL_PHASE, child, feed) mod 6), plus 3 (the 15 s timeout), and keeps as its ancestors
  the failed member's chain as it was at that moment (empty when it had none);
* an online member that leaves properly (`presence.leaves_properly`, §4.4), when it has children
  and its parent is online: its parent adopts the child of least key (the heir) at once, even
  over beta (for a moment: the leaver goes next); the leaver is out of the tree (walks reaching
  it are denied), and each other child, in ascending id, joins with entries: the heir, then the
  publisher; one whose join fails has no parent and starts a fallback plan at s + 4. Then the
  leaver forgets everything and is offline. (The paper's leaver keeps forwarding until its
  children have moved, or 30 s; here they move at once, so nothing is missed, and the 30 s
  never matter.) Without children, or without an online parent that has it as a child, it fails
  instead. Traffic (`join`): the leaver sends one to its parent (take the heir), one to each
  other child (rejoin at the heir) and one when it goes; the parent one to the heir; every child
  that moved one (moved);
* an offline member that is up comes online: the publisher becomes the root (its `since` is s);
  a subscriber starts its join plan at s.

**Each tick k of the round**, in this order, each part in ascending member id:
1. *Orphans* whose detection tick is k: the orphan leaves its (dead) parent and joins with
   entries: its ancestors still online and attached (nearest first), then its friends holding
   the feed (nearest first), then the publisher (entries may repeat: each is tried again).
2. *Join plans*: a plan started at tick s0 has a step every 4 ticks (20 s): steps s0 + 4m. The
   member's place in its own feeds' order, q = the rank of draw(RAPPEL_ORDER, node, feed) among
   its feeds (ascending draw, then feed), gives its publisher step m* = min(q, 12) (the paper's
   staggered join: one publisher join every 20 s in a random order, all that remain after the
   12th). At each step m, if some friend (of the round) holds the feed, the member joins with
   entries: those friends (nearest first), then the publisher; else at m >= m* it joins with the
   publisher as its only entry. A join that attaches ends the plan; one that fails waits for the
   next step. (Our reading: the steps are fixed in time, so that feeds stay independent; a step
   whose feed a friend covered earlier is idle.) An orphan or an evicted member whose join fails
   starts a fallback plan at k + 4 whose every step has the publisher step's entries.
3. *Periodic rejoins* (§4.3) whose tick is k: a member's first falls at its first attachment
   (of its session) + 1 + draw(RAPPEL_REJOIN, node, feed, 0) mod 120, then every 120 ticks
   (10 min) whatever happens at it (our reading, per feed: the paper starts them once all of a node's joins are done).
   One flagged by ChangeParent skips it (the flag goes). Otherwise,
   with h its depth (hops to the root, the chain intact) at least 2, it takes p with probability
   beta^-p / sum_{q=2..h} beta^-q (`trees.rejoin_distances`), drawn as
   u = draw(RAPPEL_REJOIN, node, feed, k) / 2^64 against the cumulative probabilities, and joins
   with the ancestor p levels up as its only entry; it moves only when the walk ends at another
   parent.
4. *Publication*, when k = draw(RAPPEL_UPDATE, feed) mod 12 (mod 12): update u (0, 1, ...) is
   published at 5000 k ms and, when the publisher is online, pushed down from it: each member
   reached from the root through children gets it at arrival(parent) + L(parent, child), at depth
   hops(parent) + 1 (the root has it at publication; it is no delivery). The feed keeps its last
   10 updates (the cache) and its members forget the older ones.

**A join of j with entries e1, e2, ...** tries each entry in turn (skipping j itself and entries
offline: a member by its state, another node by `presence.up`) with a walk, until one attaches
j. A walk from i repeats (Alg. 2, `trees.receive_join`
with j left out of every node's children: a node never forwards to the joiner): reaching j
itself (from its own subtree) ends the walk; a node offline ends it unanswered; a node not
attached or not a member (a Bloom false positive) ends it with a deny; case 2 moves to the
node's parent, case 4 to the child; case 3 or 5 attaches j under the node (leaving j's old parent). In case 5 the evicted child leaves and, at
once, joins with entries: the node it was told (ChangeParent), then the publisher; it is
flagged to skip its next periodic rejoin. Every node other than j a walk sends a join to is met
by j (once per join message).
Attaching j under i (nothing happens if i already is its parent): j leaves its old parent's
children, takes i as parent (i's children stay ascending), ends its plan, its orphan state and any
fallback; its first attachment since it came online sets `since` (the tick from which updates are
its) and its first periodic rejoin; then j pulls from its new parent every cached update published at or after its `since`
that the parent holds and j does not: arrival = max(now, parent's arrival) + L(parent, j), and
then pushes it down its subtree to members lacking it whose `since` is at or before its
publication (each at its parent's arrival plus L; hops: the depth, -1 off the root's tree).

**Traffic** (per member and round): `data`: updates sent to children (pushed or pulled); `join`:
join messages sent: each hop of a walk counts one for its sender (j for the first, then the
forwarding node; also the hop that reaches j itself or an offline node), and the node answering
counts one for its answer (deny or ok) and one for a ChangeParent; `joins_in`: join messages
received by online nodes other than j, `rejoins_in` those of periodic rejoins; `pings`, after
the six ticks: every online member whose parent is online and has it among its children sends it
one ping and the parent sends one ack (one each). A walk's order of events: the sender's count, then (unless it reached j)
j meets the node, then (if online) the node's `joins_in`, then its answer. Deliveries:
(member, update, publication ms, arrival ms, hops)."""

from __future__ import annotations

import math
from collections.abc import Iterator
from dataclasses import dataclass, field

import numpy as np

from overlay.draws import RAPPEL_ORDER, RAPPEL_PHASE, RAPPEL_REJOIN, RAPPEL_UPDATE, draw_int
from overlay.rappel.interest import holds
from overlay.rappel.trees import BETA, FORWARD, order_key, receive_join, rejoin_distances

NONE = -1
TICK_MS = 5000
TICKS_PER_ROUND = 6
STAGGER_TICKS = 4  # 20 s between two publisher joins
STAGGER_JOINS = 12  # after the 12th, every remaining feed joins at its publisher
REJOIN_TICKS = 120  # 10 min
PING_TICKS = 6  # a child pings its parent every 30 s ...
TIMEOUT_TICKS = 3  # ... and gives up on it after 15 s
UPDATE_TICKS = 12  # one update a minute per feed
CACHE = 10  # updates a node keeps, and pulls from a new parent
_SPAN = float(1 << 64)
TRAFFIC_KINDS = ("data", "join", "joins_in", "rejoins_in", "pings")


def first_tick(round_: int) -> int:
    return TICKS_PER_ROUND * (round_ - 1)


@dataclass
class Member:
    online: bool = False
    parent: int = NONE
    children: list[int] = field(default_factory=list)  # ascending
    since: int = NONE  # the tick from which updates are the member's (its session's first attachment)
    plan: int = NONE  # the tick its join plan started; NONE: no plan
    direct: bool = False  # a fallback plan: the publisher from its first step on
    rejoin: int = NONE  # the tick of its next periodic rejoin
    skip: bool = False  # told to change parent: skips its next periodic rejoin
    detect: int = NONE  # an orphan: the tick it notices its parent is gone
    ancestors: list[int] = field(default_factory=list)  # an orphan's, nearest first
    got: dict[int, int] = field(default_factory=dict)  # update -> arrival (ms)


@dataclass
class Delivery:
    node: int
    update: int
    published: int  # ms
    arrival: int | float  # ms
    hops: int


@dataclass
class FeedTree:
    feed: int
    publisher: int
    members: dict[int, Member]
    updates: list[tuple[int, int]] = field(default_factory=list)  # (update, publish tick), the cache


class RoundOutput:
    """What one feed's round produced: deliveries, traffic per member, and the nodes each
    member met on its walks."""

    def __init__(self) -> None:
        self.deliveries: list[Delivery] = []
        self.traffic: dict[int, list[int]] = {}
        self.met: dict[int, list[int]] = {}

    def count(self, node: int, kind: int, n: int = 1) -> None:
        self.traffic.setdefault(node, [0] * len(TRAFFIC_KINDS))[kind] += n


DATA, JOIN, JOINS_IN, REJOINS_IN, PINGS = range(len(TRAFFIC_KINDS))


class Feeds:
    """Every feed's static facts for the event loop: subscriptions (a node's feeds and filter,
    `friendship.Interests`), coordinates, publishers, who is online (`presence.Presence`)."""

    def __init__(self, interests, publishers: np.ndarray, presence, seed: int, beta: int = BETA) -> None:
        self.interests, self.publishers, self.presence, self.seed, self.beta = (
            interests,
            publishers,
            presence,
            seed,
            beta,
        )
        self._place: dict[tuple[int, int], int] = {}

    # -- static facts ----------------------------------------------------------------------
    def latency(self, a: int, b: int) -> float:
        c = self.interests.coordinates
        return math.dist(c[a], c[b])

    def place(self, node: int, feed: int) -> int:
        """The feed's rank in the node's random order of its feeds."""
        found = self._place.get((node, feed))
        if found is None:
            feeds = sorted(self.interests.feeds(node), key=lambda f: (draw_int(self.seed, RAPPEL_ORDER, node, f), f))
            for q, f in enumerate(feeds):
                self._place[(node, f)] = q
            found = self._place.get((node, feed), 0)
        return found

    def start(self, feed: int, subscribers) -> FeedTree:
        publisher = int(self.publishers[feed])
        members = {int(x): Member() for x in subscribers}
        members.setdefault(publisher, Member())
        return FeedTree(feed, publisher, members)

    # -- one round -------------------------------------------------------------------------
    def round(self, tree: FeedTree, friends: dict[int, list[int]], round_: int) -> RoundOutput:
        """Advances `tree` (in place) through the round's six ticks; `friends`: each member's
        friends of the round."""
        run = _Round(self, tree, friends, round_)
        run.presence()
        for k in range(first_tick(round_), first_tick(round_) + TICKS_PER_ROUND):
            run.tick(k)
        run.pings()
        return run.out


class _Round:
    def __init__(self, feeds: Feeds, tree: FeedTree, friends: dict[int, list[int]], round_: int) -> None:
        self.f, self.t, self.friends, self.round = feeds, tree, friends, round_
        self.m = tree.members
        self.out = RoundOutput()
        p = tree.publisher
        keys = {x: order_key(x, p, feeds.latency(x, p) / 1000.0) for x in self.m}
        self.key = keys.__getitem__

    # -- helpers ---------------------------------------------------------------------------
    def attached(self, x: int) -> bool:
        m = self.m.get(x)
        return m is not None and m.online and (x == self.t.publisher or m.parent != NONE)

    def chain(self, x: int) -> list[int] | None:
        """x's ancestors, nearest first, when its chain reaches the root; else None."""
        out, y = [], x
        while y != self.t.publisher:
            parent = self.m[y].parent
            if parent == NONE or not self.m[parent].online:
                return None
            out.append(parent)
            y = parent
        return out

    def holders(self, x: int) -> list[int]:
        """x's friends whose filter holds the feed, nearest first."""
        w, feed = self.f.interests, self.t.feed
        found = [q for q in self.friends.get(x, ()) if holds(w.filter(q), feed, w.mode)]
        return sorted(found, key=lambda q: (self.f.latency(x, q), q))

    # -- presence --------------------------------------------------------------------------
    def presence(self) -> None:
        s = first_tick(self.round)
        for x in sorted(self.m):
            m = self.m[x]
            up = self.f.presence.up(x, self.round)
            if m.online and not up:
                if self.f.presence.leaves_properly(x, self.round):
                    self.leave(x, s)
                else:
                    self.fail(x, s)
            elif not m.online and up:
                m.online = True
                if x == self.t.publisher:
                    m.since = s
                else:
                    m.plan = s

    def fail(self, x: int, s: int) -> None:
        m = self.m[x]
        above = self.chain(x) or []
        if m.parent != NONE and m.parent in self.m:
            siblings = self.m[m.parent].children
            if x in siblings:
                siblings.remove(x)
        for c in m.children:
            child = self.m[c]
            phase = draw_int(self.f.seed, RAPPEL_PHASE, c, self.t.feed) % PING_TICKS
            child.detect = s + (phase - s) % PING_TICKS + TIMEOUT_TICKS
            child.ancestors = list(above)
        self.m[x] = Member()

    def leave(self, x: int, s: int) -> None:
        """A proper leave (§4.4) when x has children and an online parent that has it as a child (an
        orphan that has not noticed yet has none); else as a failure."""
        m = self.m[x]
        parent = m.parent
        if not m.children or parent == NONE or not self.m[parent].online or x not in self.m[parent].children:
            self.fail(x, s)
            return
        out, heir = self.out, min(m.children, key=self.key)
        out.count(x, JOIN)  # take the heir
        out.count(parent, JOIN)  # the heir's new parent tells it
        self.attach(heir, parent, s)
        out.count(heir, JOIN)  # moved
        self.m[parent].children.remove(x)
        m.parent = NONE  # out of the tree: walks reaching x are denied
        for c in list(m.children):
            out.count(x, JOIN)  # rejoin at the heir
            if self.join(c, [heir, self.t.publisher], s):
                out.count(c, JOIN)  # moved
            else:
                self.m[c].parent = NONE
                self.fallback(c, s)
        out.count(x, JOIN)  # gone
        self.m[x] = Member()

    # -- one tick --------------------------------------------------------------------------
    def tick(self, k: int) -> None:
        for x in sorted(x for x, m in self.m.items() if m.online and m.detect == k):
            m = self.m[x]
            m.parent, m.detect = NONE, NONE
            entries = [a for a in m.ancestors if self.attached(a)] + self.holders(x) + [self.t.publisher]
            m.ancestors = []
            self.join_or_retry(x, entries, k)
        for x in sorted(x for x, m in self.m.items() if m.online and m.plan != NONE and k >= m.plan):
            self.plan_step(x, k)
        for x in sorted(x for x, m in self.m.items() if m.online and m.rejoin == k):
            self.periodic(x, k)
        if k % UPDATE_TICKS == draw_int(self.f.seed, RAPPEL_UPDATE, self.t.feed) % UPDATE_TICKS:
            self.publish(k)

    def plan_step(self, x: int, k: int) -> None:
        m = self.m[x]
        step, rest = divmod(k - m.plan, STAGGER_TICKS)
        if rest:
            return
        holders = self.holders(x)
        if holders:
            self.join(x, holders + [self.t.publisher], k)
        elif m.direct or step >= min(self.f.place(x, self.t.feed), STAGGER_JOINS):
            self.join(x, [self.t.publisher], k)

    def periodic(self, x: int, k: int) -> None:
        m = self.m[x]
        m.rejoin = k + REJOIN_TICKS
        if m.skip:
            m.skip = False
            return
        chain = self.chain(x) if self.attached(x) else None
        if chain is None or len(chain) < 2:
            return
        u = draw_int(self.f.seed, RAPPEL_REJOIN, x, self.t.feed, k) / _SPAN
        choices = rejoin_distances(len(chain), self.f.beta)
        p, total = choices[-1][0], 0.0
        for distance, probability in choices:
            total += probability
            if u < total:
                p = distance
                break
        self.join(x, [chain[p - 1]], k, rejoin=True)

    # -- joins -----------------------------------------------------------------------------
    def online(self, x: int) -> bool:
        return self.m[x].online if x in self.m else self.f.presence.up(x, self.round)

    def join(self, j: int, entries: list[int], k: int, rejoin: bool = False) -> bool:
        """Tries the entries in turn; True once j is attached."""
        for e in entries:
            if e != j and self.online(e) and self.walk(j, e, k, rejoin) != NONE:
                return True
        return False

    def join_or_retry(self, j: int, entries: list[int], k: int) -> None:
        """An orphan's or an evicted member's join: failing, it starts a fallback plan (the
        publisher at every step, the first at k + 4)."""
        if not self.join(j, entries, k):
            self.fallback(j, k)

    def fallback(self, j: int, k: int) -> None:
        m = self.m[j]
        m.plan, m.direct = k + STAGGER_TICKS, True

    def walk(self, j: int, i: int, k: int, rejoin: bool) -> int:
        """One walk from i (see the module doc); the parent j ends under, or NONE."""
        out = self.out
        sender = j
        while True:
            out.count(sender, JOIN)
            if i == j:
                return NONE
            out.met.setdefault(j, []).append(i)
            if not self.online(i):
                return NONE  # no answer
            out.count(i, JOINS_IN)
            if rejoin:
                out.count(i, REJOINS_IN)
            if i not in self.m or not self.attached(i):
                out.count(i, JOIN)  # deny: a Bloom false positive, a node not in the tree
                return NONE
            m = self.m[i]
            children = [c for c in m.children if c != j]
            answer = receive_join(
                i,
                j,
                True,
                m.parent if m.parent != NONE else None,
                children,
                self.key,
                lambda a, b: self.f.latency(a, b),
                self.f.beta,
            )
            if answer.kind == FORWARD:
                sender, i = i, answer.to
                continue
            out.count(i, JOIN)  # ok
            self.attach(j, i, k)
            if answer.evicted is not None:
                self.evict(answer.evicted, i, answer.rejoin_at, k)
            return i

    def attach(self, j: int, i: int, k: int) -> None:
        m = self.m[j]
        if m.parent == i:
            return
        if m.parent != NONE and m.parent in self.m and j in self.m[m.parent].children:
            self.m[m.parent].children.remove(j)
        m.parent, m.plan, m.direct, m.detect, m.ancestors = i, NONE, False, NONE, []
        children = self.m[i].children
        children.append(j)
        children.sort()
        if m.since == NONE:
            m.since = k
        if m.rejoin == NONE:
            m.rejoin = k + 1 + draw_int(self.f.seed, RAPPEL_REJOIN, j, self.t.feed, 0) % REJOIN_TICKS
        self.pull(j, i, k)

    def evict(self, n: int, i: int, rejoin_at: int, k: int) -> None:
        self.m[i].children.remove(n)
        self.m[n].parent = NONE
        self.m[n].skip = True
        self.out.count(i, JOIN)  # ChangeParent
        self.join_or_retry(n, [rejoin_at, self.t.publisher], k)

    # -- updates ---------------------------------------------------------------------------
    def publish(self, k: int) -> None:
        t = self.t
        u = t.updates[-1][0] + 1 if t.updates else 0
        t.updates.append((u, k))
        del t.updates[:-CACHE]
        keep = {v for v, _ in t.updates}
        for m in self.m.values():
            for v in [v for v in m.got if v not in keep]:
                del m.got[v]
        root = self.m[t.publisher]
        if not root.online:
            return
        root.got[u] = k * TICK_MS
        self.push(t.publisher, u, k * TICK_MS, 0)

    def push(self, x: int, u: int, published: int, hops: int) -> None:
        """u down x's subtree from x (which has it), to members lacking it."""
        stack = [(x, hops)]
        while stack:
            y, above = stack.pop()
            depth = NONE if above == NONE else above + 1
            for c in self.m[y].children:
                child = self.m[c]
                if u in child.got or published < child.since * TICK_MS:
                    continue
                child.got[u] = self.m[y].got[u] + self.f.latency(y, c)
                self.out.count(y, DATA)
                self.out.deliveries.append(Delivery(c, u, published, child.got[u], depth))
                stack.append((c, depth))

    def pull(self, j: int, i: int, k: int) -> None:
        m, parent = self.m[j], self.m[i]
        chain = self.chain(j)
        depth = NONE if chain is None else len(chain)
        for u, tick in self.t.updates:
            if u in m.got or u not in parent.got or tick < m.since:
                continue
            m.got[u] = max(k * TICK_MS, parent.got[u]) + self.f.latency(i, j)
            self.out.count(i, DATA)
            self.out.deliveries.append(Delivery(j, u, tick * TICK_MS, m.got[u], depth))
            self.push(j, u, tick * TICK_MS, depth)

    def pings(self) -> None:
        for x in sorted(self.m):
            m = self.m[x]
            if m.online and m.parent != NONE and self.m[m.parent].online and x in self.m[m.parent].children:
                self.out.count(x, PINGS)
                self.out.count(m.parent, PINGS)


def layout(tree: FeedTree) -> Iterator[tuple[int, int, int]]:
    """Each online member's (node, parent, depth), ascending; NONE: no parent (the root, or not
    attached), no depth (its chain does not reach the root)."""
    members, root = tree.members, tree.publisher
    depths: dict[int, int] = {root: 0} if members[root].online else {}

    def depth(x: int) -> int:
        path = []
        while x not in depths:
            parent = members[x].parent
            if parent == NONE or not members[parent].online or x not in members[parent].children:
                break
            path.append(x)
            x = parent
        known = depths.get(x, NONE)
        for y in reversed(path):
            known = NONE if known == NONE else known + 1
            depths[y] = known
        return depths.get(path[0], NONE) if path else known

    for x in sorted(members):
        if members[x].online:
            yield x, members[x].parent, depth(x)
