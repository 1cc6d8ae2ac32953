"""An independent whole-network simulator of Rappel's per-feed dissemination trees, written from
the round described in `overlay/rappel/feeds.py`'s docstring (and the specs of `order_key`,
`receive_join` and `rejoin_distances` in `overlay/rappel/trees.py`), sharing no code with them:
its own keys, Alg. 2, rejoin distribution, walks, pulls and pushes. It runs every feed over dicts
for the whole network, where the simulator runs one feed per call, and must reach the same trees,
deliveries, traffic and met nodes after every round.

`coupled_run` drives it together with the friendship oracle (`rappel_oracle.FriendshipOracle`):
the friends of a round are the trees' entry points, and the nodes met on join walks go back to the
friendship overlay as votes at the next round."""

from __future__ import annotations

import math
from bisect import insort

from feverfew_oracle import rnd
from rappel_oracle import FriendshipOracle, bits_of

RAPPEL_ORDER, RAPPEL_PHASE, RAPPEL_REJOIN, RAPPEL_UPDATE = 19, 20, 21, 22
BLOOM_HASH, BLOOM_BITS, BLOOM_HASHES = 15, 1024, 3
TICKS, TICK_MS, STEP, PERIOD, PUBLISH_EVERY, CACHE, LAST_PUBLISHER_STEP = 6, 5000, 4, 120, 12, 10, 12
TIMEOUT = 3  # ticks (15 s) after the missed ping
DATA, JOIN, JOINS_IN, REJOINS_IN, PINGS = range(5)
NONE = -1


class _Member:
    __slots__ = (
        "online",
        "parent",
        "children",
        "since",
        "plan",
        "direct",
        "rejoin",
        "skip",
        "detect",
        "ancestors",
        "got",
    )

    def __init__(self):
        self.fresh()

    def fresh(self):
        self.online = False
        self.parent = None
        self.children = []
        self.since = None
        self.plan = None  # tick the join plan started at
        self.direct = False  # a fallback plan: every step has the publisher step's entries
        self.rejoin = None  # tick of the next periodic rejoin
        self.skip = False
        self.detect = None  # orphan: the tick it notices its parent is gone
        self.ancestors = []
        self.got = {}  # update -> (arrival ms, hops)


class _Tree:
    def __init__(self, feed, publisher, members):
        self.feed, self.publisher = feed, publisher
        self.members = {x: _Member() for x in sorted(members)}
        self.published = []  # tick of update u


def _opt(v):
    return NONE if v is None else v


class TreesOracle:
    def __init__(self, n, subs, coords, publishers, seed=1, beta=5, mode="bloom", up=None, proper=None):
        self.n, self.seed, self.beta, self.mode = n, seed, beta, mode
        self.proper = proper or (lambda node, round_: False)  # a node going offline then leaves properly
        self.subs = {v: set(subs.get(v, ())) for v in range(n)}
        self.coords = [tuple(c) for c in coords]
        self.publishers = list(publishers)
        self.up = up or (lambda node, round_: True)
        self.bits = [bits_of(self.subs[v], mode) for v in range(n)]
        self.trees = []
        for f, p in enumerate(self.publishers):
            self.trees.append(_Tree(f, p, {v for v in range(n) if f in self.subs[v]} | {p}))
        self.deliveries, self.traffic, self.met = [], {}, {}
        self._star = {}

    # -- pieces ---------------------------------------------------------------------------------
    def latency(self, a, b):
        return math.dist(self.coords[a], self.coords[b])

    def seconds(self, a, b):
        return self.latency(a, b) / 1000.0

    def key(self, t, x):
        return (-1.0, x) if x == t.publisher else (self.seconds(x, t.publisher), x)

    def holds(self, node, feed):
        if self.mode == "exact":
            return feed in self.subs[node]
        return all(rnd(0, BLOOM_HASH, k, feed) % BLOOM_BITS in self.bits[node] for k in range(BLOOM_HASHES))

    def publisher_step(self, node, feed):
        got = self._star.get((node, feed))
        if got is None:
            order = sorted(self.subs[node], key=lambda g: (rnd(self.seed, RAPPEL_ORDER, node, g), g))
            got = self._star[(node, feed)] = min(order.index(feed), LAST_PUBLISHER_STEP)
        return got

    @staticmethod
    def rejoin_distances(height, beta):
        weights = [(p, float(beta) ** -p) for p in range(2, height + 1)]
        total = sum(w for _, w in weights)
        return [(p, w / total) for p, w in weights]

    def count(self, t, node, what, k=1):
        row = self.traffic.setdefault((t.feed, node), [0, 0, 0, 0, 0])
        row[what] += k

    def online(self, t, x):
        m = t.members.get(x)
        return m.online if m is not None else self.up(x, self.r)

    def attached(self, t, x):
        m = t.members[x]
        return m.online if x == t.publisher else m.parent is not None

    def chain(self, t, x):
        out, y, seen = [], x, {x}
        while y != t.publisher:
            p = t.members[y].parent
            if p is None or p in seen:
                return None
            mp = t.members[p]
            if not mp.online or (p != t.publisher and mp.parent is None):
                return None
            out.append(p)
            seen.add(p)
            y = p
        return out

    def holders(self, t, x):
        hs = [y for y in self.friends.get(x, ()) if self.holds(y, t.feed)]
        return sorted(hs, key=lambda y: (self.seconds(x, y), y))

    # -- Alg. 2 ---------------------------------------------------------------------------------
    def receive_join(self, t, i, j):
        """('deny'|'forward'|'ok', to, evicted, rejoin_at) at member i for j, j left out."""
        mi = t.members[i]
        kids = [c for c in mi.children if c != j]
        kj = self.key(t, j)
        if self.key(t, i) > kj:
            return "forward", mi.parent, None, None
        if len(kids) < self.beta:
            return "ok", None, None, None
        if all(self.key(t, c) < kj for c in kids):
            return "forward", min(kids, key=lambda c: (self.seconds(c, j), c)), None, None
        evicted = max(kids, key=lambda c: self.key(t, c))
        kept = [c for c in kids if c != evicted] + [j]
        return "ok", None, evicted, min(kept, key=lambda c: (self.seconds(c, evicted), c))

    # -- joins ----------------------------------------------------------------------------------
    def join(self, t, j, entries, k, rejoin=False):
        for e in entries:
            if e == j or not self.online(t, e):
                continue
            if self.walk(t, j, e, k, rejoin):
                return True
        return False

    def walk(self, t, j, i, k, rejoin):
        sender, hops = j, 0
        while True:
            hops += 1
            if hops > 10 * self.n + 10:
                raise RuntimeError(f"walk of {j} in feed {t.feed} does not end (tick {k})")
            self.count(t, sender, JOIN)
            if i == j:
                return False
            self._met.setdefault(j, []).append(i)
            if not self.online(t, i):
                return False
            self.count(t, i, JOINS_IN)
            if rejoin:
                self.count(t, i, REJOINS_IN)
            if i not in t.members or not self.attached(t, i):
                self.count(t, i, JOIN)  # deny
                return False
            kind, to, evicted, rejoin_at = self.receive_join(t, i, j)
            if kind == "forward":
                sender, i = i, to
                continue
            self.count(t, i, JOIN)  # ok
            if evicted is not None:
                self.count(t, i, JOIN)  # ChangeParent
            self.attach(t, j, i, k)
            if evicted is not None:
                self.evict(t, evicted, i, rejoin_at, k)
            return True

    def evict(self, t, x, i, rejoin_at, k):
        mi, mx = t.members[i], t.members[x]
        mi.children.remove(x)
        mx.parent = None
        mx.skip = True
        if not self.join(t, x, [rejoin_at, t.publisher], k):
            self.fallback(t, x, k)

    def fallback(self, t, x, k):
        m = t.members[x]
        m.plan, m.direct = k + STEP, True

    def attach(self, t, j, i, k):
        mj, mi = t.members[j], t.members[i]
        if mj.parent == i:
            return
        if mj.parent is not None:
            old = t.members[mj.parent]
            if j in old.children:
                old.children.remove(j)
        mj.parent = i
        insort(mi.children, j)
        mj.plan, mj.direct, mj.detect, mj.ancestors = None, False, None, []
        if mj.since is None:
            mj.since = k
            mj.rejoin = k + 1 + rnd(self.seed, RAPPEL_REJOIN, j, t.feed, 0) % PERIOD
        self.pull(t, j, i, k)

    # -- updates --------------------------------------------------------------------------------
    def deliver(self, t, x, u, arrival, hops):
        t.members[x].got[u] = (arrival, hops)
        self.deliveries.append((t.feed, x, u, TICK_MS * t.published[u], arrival, hops))

    def push(self, t, x, u):
        """x just got u: down its subtree, to members lacking u whose since is at or before it."""
        arrival, hops = t.members[x].got[u]
        for c in t.members[x].children:
            mc = t.members[c]
            if u in mc.got or mc.since is None or mc.since > t.published[u]:
                continue
            self.count(t, x, DATA)
            self.deliver(t, c, u, arrival + self.latency(x, c), hops + 1 if hops >= 0 else -1)
            self.push(t, c, u)

    def pull(self, t, j, i, k):
        mj, mi = t.members[j], t.members[i]
        ch = self.chain(t, j)
        depth = len(ch) if ch is not None else -1
        now = TICK_MS * k
        for u in range(max(0, len(t.published) - CACHE), len(t.published)):
            if t.published[u] < mj.since or u not in mi.got or u in mj.got:
                continue
            self.count(t, i, DATA)
            self.deliver(t, j, u, max(now, mi.got[u][0]) + self.latency(i, j), depth)
            self.push(t, j, u)

    def publish(self, t, k):
        u = len(t.published)
        t.published.append(k)
        root = t.members[t.publisher]
        if root.online:
            root.got[u] = (TICK_MS * k, 0)
            self.push(t, t.publisher, u)
        for m in t.members.values():
            m.got.pop(u - CACHE, None)

    # -- the round ------------------------------------------------------------------------------
    def fail(self, t, x, s):
        m = t.members[x]
        ch = self.chain(t, x)
        ancestors = list(ch) if ch is not None else []
        if m.parent is not None and x in t.members[m.parent].children:
            t.members[m.parent].children.remove(x)
        for c in m.children:
            mc = t.members[c]
            phase = rnd(self.seed, RAPPEL_PHASE, c, t.feed) % TICKS
            mc.detect = s + (phase - s) % TICKS + TIMEOUT
            mc.ancestors = list(ancestors)
        m.fresh()

    def leave(self, t, x, s):
        """§4.4: the parent adopts the child nearest the publisher, the others rejoin under it,
        then x goes (without children or a parent up that has it as a child: a failure)."""
        m = t.members[x]
        if (
            not m.children
            or m.parent is None
            or not t.members[m.parent].online
            or x not in t.members[m.parent].children
        ):
            self.fail(t, x, s)
            return
        parent = m.parent
        heir = min(m.children, key=lambda c: self.key(t, c))
        self.count(t, x, JOIN)
        self.count(t, parent, JOIN)
        self.attach(t, heir, parent, s)
        self.count(t, heir, JOIN)
        t.members[parent].children.remove(x)
        m.parent = None
        for c in sorted(m.children):
            self.count(t, x, JOIN)
            if self.join(t, c, [heir, t.publisher], s):
                self.count(t, c, JOIN)
            else:
                t.members[c].parent = None
                self.fallback(t, c, s)
        self.count(t, x, JOIN)
        m.fresh()

    def presence(self, t, s):
        for x in sorted(t.members):
            m = t.members[x]
            up = self.up(x, self.r)
            if m.online and not up:
                if self.proper(x, self.r):
                    self.leave(t, x, s)
                else:
                    self.fail(t, x, s)
            elif not m.online and up:
                m.online = True
                if x == t.publisher:
                    m.since = s
                else:
                    m.plan, m.direct = s, False

    def tick(self, t, k):
        ids = sorted(t.members)
        for x in ids:  # 1. orphans
            m = t.members[x]
            if m.online and m.detect == k:
                if m.parent is not None and x in t.members[m.parent].children:
                    t.members[m.parent].children.remove(x)
                m.parent = None
                ancestors = [a for a in m.ancestors if t.members[a].online and self.attached(t, a)]
                m.detect, m.ancestors = None, []
                if not self.join(t, x, ancestors + self.holders(t, x) + [t.publisher], k):
                    self.fallback(t, x, k)
        for x in ids:  # 2. join plans
            m = t.members[x]
            if not m.online or m.plan is None or k < m.plan or (k - m.plan) % STEP:
                continue
            hs = self.holders(t, x)
            if hs:
                entries = hs + [t.publisher]
            elif m.direct or (k - m.plan) // STEP >= self.publisher_step(x, t.feed):
                entries = [t.publisher]
            else:
                continue
            self.join(t, x, entries, k)
        for x in ids:  # 3. periodic rejoins
            m = t.members[x]
            if not m.online or m.rejoin != k:
                continue
            m.rejoin = k + PERIOD
            if m.skip:
                m.skip = False
                continue
            ch = self.chain(t, x)
            if ch is None or len(ch) < 2:
                continue
            u = rnd(self.seed, RAPPEL_REJOIN, x, t.feed, k) / float(1 << 64)
            dist = self.rejoin_distances(len(ch), self.beta)
            acc, p = 0.0, dist[-1][0]
            for q, prob in dist:
                acc += prob
                if u < acc:
                    p = q
                    break
            self.join(t, x, [ch[p - 1]], k, rejoin=True)
        if k % PUBLISH_EVERY == rnd(self.seed, RAPPEL_UPDATE, t.feed) % PUBLISH_EVERY:  # 4.
            self.publish(t, k)

    def pings(self, t):
        for x in sorted(t.members):
            m = t.members[x]
            up = t.members[m.parent] if m.online and m.parent is not None else None
            if up is not None and up.online and x in up.children:
                self.count(t, x, PINGS)
                self.count(t, m.parent, PINGS)

    def round(self, r, friends):
        self.r, self.friends = r, friends
        self.deliveries, self.traffic, self._met = [], {}, {}
        s = TICKS * (r - 1)
        for t in self.trees:
            self.presence(t, s)
            for k in range(s, s + TICKS):
                self.tick(t, k)
            self.pings(t)
        self.met = {v: sorted(ids) for v, ids in self._met.items()}

    def tree(self, feed):
        t = self.trees[feed]
        return {
            x: (
                m.online,
                _opt(m.parent),
                sorted(m.children),
                _opt(m.since),
                _opt(m.plan),
                _opt(m.rejoin),
                m.skip,
                _opt(m.detect),
            )
            for x, m in t.members.items()
        }

    def fallbacks(self, feed):
        """Members whose plan is a fallback plan (every step has the publisher step's entries)."""
        return {x for x, m in self.trees[feed].members.items() if m.plan is not None and m.direct}


def coupled_run(
    n,
    subs,
    coords,
    publishers,
    rounds,
    seed=1,
    alpha=6,
    delta=0.01,
    mode="bloom",
    utility="interest-distance",
    presence_down=lambda r: set(),
    beta=5,
    proper=None,
):
    """Rappel as a whole, round by round: the friendship round r, then the trees' round r on its
    friends; the nodes met on the join walks of round r are heard of at round r + 1. Yields
    (r, friendship oracle, trees oracle) after each round."""
    downs = {}

    def down(r):
        if r not in downs:
            downs[r] = set(presence_down(r))
        return downs[r]

    fo = FriendshipOracle(
        n, subs, coords, seed=seed, alpha=alpha, delta=delta, mode=mode, utility=utility, intro=None, down=down
    )
    trees = TreesOracle(
        n, subs, coords, publishers, seed=seed, beta=beta, mode=mode, up=lambda v, r: v not in down(r), proper=proper
    )
    for r in range(1, rounds + 1):
        fo.step(r)
        trees.round(r, {v: sorted(fo.friends[v]) for v in range(n)})
        for v in range(n):
            fo.met[v] = list(trees.met.get(v, []))
        yield r, fo, trees
