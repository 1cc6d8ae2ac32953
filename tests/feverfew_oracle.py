"""An independent whole-network simulator of Feverfew, written from the cycle described in
`overlay/gossip/feverfew.py`'s docstring (docs/readings/feverfew.md), sharing no code
with it: its own splitmix64, TTL0 formula, Jaccard ranks (exact fractions) and Alg. 3. It walks
the network phase by phase over dicts of sets, where the simulator runs per node on Spark, and
must reach the same state after every cycle."""

from __future__ import annotations

import math
from fractions import Fraction

M64 = (1 << 64) - 1
BOOT, SEND, ANSWER, PEER, UNIFORM = 5, 6, 7, 8, 9


def mix(z):
    z = (z + 0x9E3779B97F4A7C15) & M64
    z = ((z ^ (z >> 30)) * 0xBF58476D1CE4E5B9) & M64
    z = ((z ^ (z >> 27)) * 0x94D049BB133111EB) & M64
    return z ^ (z >> 31)


def rnd(seed, purpose, *key):
    x = mix(mix(seed & M64) ^ purpose)
    for k in key:
        x = mix(x ^ (k & M64))
    return x


def ttl_for(network, size, c=10):
    m = size - 1
    value = None
    if m >= 1:
        inner = 1 - math.log(network) / (network * (1 - math.exp(-c * m / network)))
        if inner > 0:
            big_m = -(network / c) * math.log(inner)
            if big_m < network:
                value = math.log2(-network * math.log(1 - big_m / network))
    if value is None:
        value = math.log2(network * math.log(network))
    return max(1, math.ceil(value))


def ratio(a, b):
    union = len(a | b)
    return Fraction(len(a & b), union) if union else Fraction(0)


class FeverfewOracle:
    def __init__(
        self,
        n,
        subs,
        seed=1,
        rv_size=20,
        shuffle=10,
        sv_size=40,
        av_size=40,
        bubble_start=30,
        delta=1,
        clear_similar=False,
        pss="cyclon",
        bubble=True,
    ):
        self.n, self.seed = n, seed
        self.subs = {v: frozenset(subs.get(v, ())) for v in range(n)}
        self.rv_size, self.shuffle, self.sv_size, self.av_size = rv_size, shuffle, sv_size, av_size
        self.bubble_start, self.delta, self.clear_similar, self.pss, self.bubble = (
            bubble_start,
            delta,
            clear_similar,
            pss,
            bubble,
        )
        size = {}
        for v in range(n):
            for t in self.subs[v]:
                size[t] = size.get(t, 0) + 1
        self.size = size
        self.need = {t: (math.ceil(math.log(k)) if k > 1 else 0) for t, k in size.items()}
        self.rv = {v: {q: 0 for q in self.distinct(BOOT, (v,), rv_size, v)} for v in range(n)}
        self.sv = {v: [] for v in range(n)}
        self.lv = {v: [] for v in range(n)}
        self.mb = {v: set() for v in range(n)}
        self.av = {v: [] for v in range(n)}
        self.told = {v: set() for v in range(n)}
        self.held = {v: [] for v in range(n)}
        self.own = {v: {} for v in range(n)}  # topic -> [started, ttl, first, matches]
        self.covered = {}
        self.sent = {}

    def distinct(self, purpose, key, count, skip):
        out, k = [], 0
        while len(out) < min(count, self.n - 1):
            q = rnd(self.seed, purpose, *key, k) % self.n
            k += 1
            if q != skip and q not in out:
                out.append(q)
        return out

    def rest(self, v, view):
        return {t for t in self.subs[v] if sum(1 for q in view if t in self.subs[q]) < self.need[t]}

    def by_draw(self, ids, count, purpose, *key):
        return sorted(ids, key=lambda q: (rnd(self.seed, purpose, *key, q), q))[:count]

    def merge(self, view, incoming, spare, me):
        """Cyclon's rule: new entries fill free slots, then take the places of the entries sent
        (those still held, in the order sent); the rest are dropped."""
        k = 0
        for q, age in incoming:
            if q == me or q in view:
                continue
            if len(view) >= self.rv_size:
                while k < len(spare) and spare[k] not in view:
                    k += 1
                if k == len(spare):
                    continue
                view.pop(spare[k])
                k += 1
            view[q] = age

    def alg3(self, v, buffer):
        mine, left, chosen = self.subs[v], set(buffer) - {v}, []
        rest = {t for t in mine if self.need[t] > 0}
        while rest and left:
            best = max(left, key=lambda q: (ratio(rest, self.subs[q]), len(rest & self.subs[q]), -q))
            if not rest & self.subs[best]:
                break
            left.remove(best)
            chosen.append(best)
            rest = self.rest(v, chosen)
        return chosen

    def step(self, c, down=frozenset()):
        """Cycle c; the nodes of `down` are failed: they neither act nor are addressed."""
        n, seed = self.n, self.seed
        nodes = [v for v in range(n) if v not in down]
        sent = {v: [0, 0, 0, 0] for v in nodes}
        start_lv = {v: list(self.lv[v]) for v in nodes}
        rests = {v: self.rest(v, start_lv[v]) for v in nodes}
        # Random views at the start of the cycle.
        target, sent_ids, requests = {}, {}, {}
        if self.pss == "uniform":
            for v in nodes:
                fresh = self.distinct(UNIFORM, (c, v), self.shuffle, v)
                self.rv[v] = {q: 0 for q in fresh}
                target[v] = fresh[0] if fresh else None
        else:
            for v in nodes:
                self.rv[v] = {q: a + 1 for q, a in self.rv[v].items()}
            for v in nodes:
                if not self.rv[v]:
                    target[v] = None
                    continue
                oldest = max(self.rv[v].values())
                q = min(x for x, a in self.rv[v].items() if a == oldest)
                target[v] = q
                sent_ids[v] = self.by_draw([x for x in self.rv[v] if x != q], self.shuffle - 1, SEND, c, v)
                requests.setdefault(q, []).append((v, [(v, 0)] + [(x, self.rv[v][x]) for x in sent_ids[v]]))
                sent[v][0] += 1
        start_rv = {v: dict(self.rv[v]) for v in nodes}
        buffers = {v: set(start_rv[v]) | set(self.sv[v]) for v in nodes}
        peer = {}
        for v in nodes:
            pool = sorted(self.sv[v]) or sorted(self.lv[v]) or sorted(start_rv[v])
            peer[v] = pool[rnd(seed, PEER, c, v) % len(pool)] if pool else None
            if peer[v] is not None:
                sent[v][1] += 1
        # BubbleSample: emissions, copies along the Cyclon targets, agents' matches.
        copies, matches = {}, {}
        if self.bubble:
            for v in nodes:
                if c >= self.bubble_start:
                    for t in sorted(rests[v]):
                        d = self.own[v].get(t)
                        if d is None or c >= d[0] + d[1]:
                            ttl = ttl_for(n, self.size[t], self.shuffle)
                            self.own[v][t] = [c, ttl, -1, 0]
                            self.held[v].append((v, t, ttl))
                still = []
                for o, t, ttl in self.held[v]:
                    if target[v] is not None:
                        copies.setdefault(target[v], []).append((v, o, t, ttl - 1))
                        sent[v][2] += 1
                    if ttl > 1:
                        still.append((o, t, ttl - 1))
                self.held[v] = still
            for h in nodes:
                for o, t in self.av[h]:
                    for r in sorted(start_rv[h]):
                        if r != o and (o, r) not in self.told[h] and t in self.subs[r]:
                            self.told[h].add((o, r))
                            matches.setdefault(o, []).append((h, r, t, True))
                            matches.setdefault(r, []).append((h, o, t, False))
                            sent[h][3] += 2
        # The passive sides: Cyclon answers and merges, buffers pooled, copies, matches.
        answers = {}
        pools = {v: set(buffers[v]) for v in nodes}
        for q in nodes:
            for r, entries in sorted(requests.get(q, []), key=lambda x: x[0]):
                answer = self.by_draw(list(start_rv[q]), self.shuffle, ANSWER, c, q, r)
                answers[r] = [(x, start_rv[q][x]) for x in answer]
                sent[q][0] += 1
                self.merge(self.rv[q], entries, answer, q)
        for v in nodes:
            if peer[v] is not None:
                pools[peer[v]] |= buffers[v]
                pools[v] |= buffers[peer[v]]
                sent[peer[v]][1] += 1
        for h in nodes:
            for _src, o, t, ttl in sorted(copies.get(h, []), key=lambda x: x[0]):
                if o != h and (o, t) not in self.av[h]:
                    self.av[h].append((o, t))
                    if len(self.av[h]) > self.av_size:
                        self.av[h].pop(0)
                if ttl > 0:
                    self.held[h].append((o, t, ttl))
        for x in nodes:
            for _src, other, t, to_origin in sorted(matches.get(x, []), key=lambda m: m[0]):
                self.mb[x].add(other)
                if to_origin and t in self.own[x] and self.own[x][t][0] < c:
                    d = self.own[x][t]
                    d[3] += 1
                    if d[2] == -1:
                        d[2] = c
        # The active sides, the similar view and the ln-covered view.
        for v in nodes:
            if v in answers:
                self.rv[v].pop(target[v], None)
                self.merge(self.rv[v], answers[v], sent_ids[v], v)
            mine = self.subs[v]
            ranked = sorted(
                (q for q in pools[v] - {v} if ratio(rests[v], self.subs[q]) > 0),
                key=lambda q: (-ratio(rests[v], self.subs[q]), -ratio(mine, self.subs[q]), q),
            )
            self.sv[v] = ranked[: self.sv_size]
            if c % self.delta == 0:
                self.lv[v] = self.alg3(v, set(self.sv[v]) | set(self.lv[v]) | self.mb[v])
                self.mb[v] = set()
                if self.clear_similar:
                    self.sv[v] = []
            self.covered[v] = sorted({t for t in mine if self.need[t] > 0} - self.rest(v, self.lv[v]))
        self.sent = sent

    def state(self, v):
        told = sorted(self.told[v])
        own = sorted(self.own[v])
        return {
            "node_id": v,
            "rv": sorted(self.rv[v]),
            "rv_age": [self.rv[v][q] for q in sorted(self.rv[v])],
            "sv": self.sv[v],
            "lv": self.lv[v],
            "mb": sorted(self.mb[v]),
            "av_origin": [o for o, _ in self.av[v]],
            "av_topic": [t for _, t in self.av[v]],
            "reported_origin": [o for o, _ in told],
            "reported_other": [r for _, r in told],
            "held_origin": [h[0] for h in self.held[v]],
            "held_topic": [h[1] for h in self.held[v]],
            "held_ttl": [h[2] for h in self.held[v]],
            "own_topic": own,
            "own_started": [self.own[v][t][0] for t in own],
            "own_ttl": [self.own[v][t][1] for t in own],
            "own_first_match": [self.own[v][t][2] for t in own],
            "own_matches": [self.own[v][t][3] for t in own],
        }


PUSH, PUBLISH, CHURN, REJOIN = 10, 11, 12, 14


def published_topics(subs, seed, count):
    """The topics with two or more subscribers of smallest draw, publication k on the k-th."""
    size = {}
    for topics in subs.values():
        for t in topics:
            size[t] = size.get(t, 0) + 1
    return sorted((t for t, k in size.items() if k >= 2), key=lambda t: (rnd(seed, PUBLISH, -1, t), t))[:count]


def push_pull_oracle(subs, links, topic, pub, seed, cycles, substitution=0.0, mass_share=0.0, mass_cycle=1):
    """[(alive, informed)] for cycles 0..cycles of one publication, walked node by node."""
    members = sorted(v for v, topics in subs.items() if topic in topics)
    inside = set(members)
    near = {v: [] for v in members}
    for u, v in links:
        if u in inside and v in inside:
            near[u].append(v)
            near[v].append(u)
    publisher = min(members, key=lambda x: rnd(seed, PUBLISH, topic, x))
    n = len(members)
    limit = 1 if n < 3 else max(1, math.ceil(math.log(n, 3) + math.log(math.log(n))))
    gone = set()
    if mass_share > 0:
        gone = {x for x in members if mass_share >= 1 or rnd(seed, CHURN, 0, x) < int(mass_share * 2.0**64)}
    down_before = set()
    informed = {publisher: 0}
    out = [(n, 1)]
    for c in range(1, cycles + 1):
        down = set()
        if substitution > 0:
            down = {x for x in members if x not in down_before and rnd(seed, CHURN, c, x) < int(substitution * 2.0**64)}
        down_before = set(down)
        if c >= mass_cycle:
            down |= gone
        down.discard(publisher)
        for x in down:
            informed.pop(x, None)
        up = [x for x in members if x not in down]
        new = set()
        for u in up:
            options = sorted(v for v in near[u] if v not in down)
            if not options:
                continue
            v = options[rnd(seed, PUSH, pub, c, u) % len(options)]
            if (u in informed) != (v in informed):
                giver = u if u in informed else v
                if c - informed[giver] <= limit:
                    new.add(v if giver == u else u)
        for x in new:
            informed[x] = c
        out.append((len(up), sum(1 for x in up if x in informed)))
    return out


def age_limit_of(n):
    return 1 if n < 3 else max(1, math.ceil(math.log(n, 3) + math.log(math.log(n))))


def healing_oracle(oracle, base, pubs, seed, cycles, substitution=0.0, mass_share=0.0, mass_cycle=1):
    """Push-pull inside the gossip of `oracle` (a FeverfewOracle after `base` cycles), its nodes
    failing and returning: {pub: [(alive, informed)] for cycles 0..cycles}; the oracle is left in
    its last state. `pubs`: [(pub, topic)]."""
    n = oracle.n
    subs = oracle.subs
    members = {p: [v for v in range(n) if t in subs[v]] for p, t in pubs}
    publisher = {p: min(members[p], key=lambda x: rnd(seed, PUBLISH, t, x)) for p, t in pubs}
    limit = {p: age_limit_of(len(members[p])) for p, _ in pubs}
    topic_of = dict(pubs)
    spared = set(publisher.values())
    gone = set()
    if mass_share > 0:
        gone = {x for x in range(n) if mass_share >= 1 or rnd(seed, CHURN, 0, x) < int(mass_share * 2.0**64)}
    informed = {v: {} for v in range(n)}
    for p in publisher:
        informed[publisher[p]][p] = 0
    out = {p: [(len(members[p]), 1)] for p, _ in pubs}
    churned, was_down = set(), set()
    for k in range(1, cycles + 1):
        now = set()
        if substitution > 0:
            now = {x for x in range(n) if x not in churned and rnd(seed, CHURN, k, x) < int(substitution * 2.0**64)}
        churned = now
        down = (now | (gone if k >= mass_cycle else set())) - spared
        up = [v for v in range(n) if v not in down]
        for v in range(n):
            if v in down or v in was_down:
                oracle.rv[v], oracle.sv[v], oracle.lv[v], oracle.mb[v] = {}, [], [], set()
                oracle.av[v], oracle.told[v], oracle.held[v], oracle.own[v] = [], set(), [], {}
                informed[v] = {}
            if v in was_down and v not in down:  # back: a fresh random view of nodes up
                i, fresh = 0, []
                while len(fresh) < min(oracle.rv_size, len(up) - 1):
                    q = rnd(seed, REJOIN, k, v, i) % n
                    i += 1
                    if q != v and q not in down and q not in fresh:
                        fresh.append(q)
                oracle.rv[v] = {q: 0 for q in fresh}
            elif v not in down:
                oracle.rv[v] = {q: a for q, a in oracle.rv[v].items() if q not in down}
                oracle.sv[v] = [q for q in oracle.sv[v] if q not in down]
                oracle.lv[v] = [q for q in oracle.lv[v] if q not in down]
                oracle.mb[v] = {q for q in oracle.mb[v] if q not in down}
                oracle.av[v] = [(o, t) for o, t in oracle.av[v] if o not in down]
                oracle.held[v] = [h for h in oracle.held[v] if h[0] not in down]
        new = []
        for v in up:
            for p in sorted(topic_of):
                t = topic_of[p]
                if t not in subs[v]:
                    continue
                options = sorted(q for q in oracle.lv[v] if t in subs[q])
                if not options:
                    continue
                q = options[rnd(seed, PUSH, p, k, v) % len(options)]
                if (p in informed[v]) != (p in informed[q]):
                    giver, taker = (v, q) if p in informed[v] else (q, v)
                    if k - informed[giver][p] <= limit[p]:
                        new.append((taker, p))
        oracle.step(base + k, down)
        for taker, p in new:
            informed[taker].setdefault(p, k)
        was_down = down
        for p, _ in pubs:
            alive = [v for v in members[p] if v not in down]
            out[p].append((len(alive), sum(1 for v in alive if p in informed[v])))
    return out


SPIDER = 13


def global_feverfew_oracle(n, subs):
    """Alg. 3 at every node over every node sharing a topic with it: the undirected links."""
    oracle = FeverfewOracle(n, subs, rv_size=0)
    links = set()
    for p in range(n):
        sharing = {q for q in range(n) if q != p and oracle.subs[q] & oracle.subs[p]}
        links |= {(min(p, q), max(p, q)) for q in oracle.alg3(p, sharing)}
    return links


def spidercast_oracle(n, subs, known, seed, kg=3, kr=1):
    """SpiderCast's greedy-then-random choices at every node over `known[p]`: undirected links."""
    subs = {v: set(subs.get(v, ())) for v in range(n)}
    size = {}
    for topics in subs.values():
        for t in topics:
            size[t] = size.get(t, 0) + 1
    links = set()
    for p in range(n):
        mine = subs[p]
        cands = set(known[p]) - {p}
        picked = []
        greedy = {t: 0 for t in mine}
        while True:
            scored = [
                (sum(1 for t in subs[q] & mine if greedy[t] < min(kg, size[t] - 1)), -q) for q in cands - set(picked)
            ]
            if not scored or max(scored)[0] == 0:
                break
            q = -max(scored)[1]
            picked.append(q)
            for t in subs[q] & mine:
                greedy[t] += 1
        rand = {t: 0 for t in mine}
        for t in sorted(mine):
            if rand[t] >= min(kr, size[t] - 1):
                continue
            options = [q for q in cands if t in subs[q] and q not in picked]
            if options:
                q = min(options, key=lambda x: (rnd(seed, SPIDER, p, t, x), x))
                picked.append(q)
                for s in subs[q] & mine:
                    rand[s] += 1
        links |= {(min(p, q), max(p, q)) for q in picked}
    return links


def oracle_for(nodes: int, pairs, params) -> FeverfewOracle:
    """The oracle of a simulation with these settings (`params`: a FeverfewParams, read by name)."""
    subs: dict[int, set] = {}
    for v, t in pairs:
        subs.setdefault(v, set()).add(t)
    return FeverfewOracle(
        nodes,
        subs,
        seed=params.seed,
        rv_size=params.random_view,
        shuffle=params.shuffle,
        sv_size=params.similar_view,
        av_size=params.agent_view,
        bubble_start=params.bubble_start,
        delta=params.delta,
        clear_similar=params.clear_similar,
        pss=params.pss,
        bubble=params.bubble,
    )


def assert_same_states(rows: dict, oracle: FeverfewOracle, cycle: int) -> None:
    """Every node's state row (`rows`: node -> row) is the oracle's after `cycle`."""
    for v in range(oracle.n):
        want, got = oracle.state(v), rows[v]
        for column, value in want.items():
            assert list(got[column]) == list(value) if isinstance(value, list) else got[column] == value, (
                f"cycle {cycle}, node {v}, {column}: simulator {got[column]}, oracle {value}"
            )
        assert list(got["covered"]) == oracle.covered[v], (cycle, v)
        assert list(got["sent"]) == oracle.sent[v], (cycle, v)
