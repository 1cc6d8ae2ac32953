"""An independent whole-network simulator of Rappel's friendship overlay, written from the round
described in `overlay/rappel/friendship.py`'s docstring (docs/readings/rappel.md#friendship),
sharing no code with it: its own Bloom hashes, Jaccard, set utility, audit and candidate book.
It walks the network phase by phase over dicts, where the simulator runs per node on Spark, and
must reach the same state after every round."""

from __future__ import annotations

import math

from feverfew_oracle import rnd

BLOOM_HASH, FCFS = 15, 17


def bits_of(feeds, mode):
    out = set()
    for f in feeds:
        if mode == "exact":
            out.add(f)
        else:
            out.update(rnd(0, BLOOM_HASH, k, f) % 1024 for k in range(3))
    return frozenset(out)


def jac(a, b):
    return len(a & b) / len(a | b) if a | b else 0.0


class FriendshipOracle:
    def __init__(
        self,
        n,
        subs,
        coords,
        seed=1,
        alpha=6,
        delta=0.01,
        mode="bloom",
        utility="interest-distance",
        intro=None,
        down=None,
    ):
        self.n, self.subs, self.coords, self.seed = n, subs, coords, seed
        self.alpha, self.delta, self.utility = alpha, delta, utility
        self.bits = [bits_of(subs[v], mode) for v in range(n)]
        self.down = down or (lambda r: set())
        self.cap = 3 * alpha * alpha + 2 * alpha
        self.friends = {v: set() for v in range(n)}
        self.fans = {v: {} for v in range(n)}
        self.votes = {v: {} for v in range(n)}  # candidate -> [votes, audited, heard]
        self.met = {v: list((intro or {}).get(v, ())) for v in range(n)}
        self.sent = {v: [0, 0, 0, 0] for v in range(n)}
        self.seen = {"evicted": 0, "refused": 0, "swapped": 0, "lost": 0}  # the hard paths taken

    def dist(self, a, b):
        if self.utility == "interest":
            return 1.0
        (xa, ya), (xb, yb) = self.coords[a], self.coords[b]
        return max(math.hypot(xa - xb, ya - yb) / 1000.0, 1e-4)

    def hear(self, v, ids, r):
        book = self.votes[v]
        for q in ids:
            if q == v or q in self.friends[v]:
                continue
            if q in book:
                book[q][0] += 1
                book[q][2] = r
            else:
                book[q] = [1, False, r]
        while len(book) > self.cap:
            oldest = min(book, key=lambda q: (book[q][2], q))
            del book[oldest]
            self.seen["evicted"] += 1

    def pick(self, v):
        book = self.votes[v]
        open_ = [q for q in book if not book[q][1]]
        if not open_:
            return None
        best = max(open_, key=lambda q: (book[q][0], book[q][2], -q))
        book[best][1] = True
        return best

    def value(self, v, group):
        """U(v, group), summing over `group` in its order."""
        mine = self.bits[v]
        if not mine:
            return 0.0
        total = 0.0
        for j in group:
            rest = set()
            for k in group:
                if k != j:
                    rest |= self.bits[k]
            alone = len((mine & self.bits[j]) - rest)
            total += (jac(mine, self.bits[j]) + alone / len(mine)) / self.dist(v, j)
        return total

    def step(self, r):
        down = self.down(r)
        self.sent = {v: [0, 0, 0, 0] for v in range(self.n)}
        alive = [v for v in range(self.n) if v not in down]
        pings, requests, asked = {}, {}, {}
        # act
        for v in alive:
            self.hear(v, self.met[v], r)
            self.met[v] = []
            for j in sorted(self.friends[v]):
                pings.setdefault(j, []).append(v)
                self.sent[v][0] += 1
            asked[v] = {}
            room = self.alpha - len(self.friends[v])
            if room > 0:
                for _ in range(room):
                    c = self.pick(v)
                    if c is None:
                        break
                    asked[v][c] = None
            else:
                c = self.pick(v)
                if c is not None:
                    group = sorted(self.friends[v])
                    base = self.value(v, group)
                    top, victim = -math.inf, None
                    for j in group:
                        score = self.value(v, [k for k in group if k != j] + [c])
                        if score > top:
                            top, victim = score, j
                    if top > (1 + self.delta) * base:
                        asked[v][c] = victim
                        self.seen["swapped"] += 1
            for c in asked[v]:
                requests.setdefault(c, []).append(v)
                self.sent[v][2] += 1
        # serve
        start_friends = {v: sorted(self.friends[v]) for v in range(self.n)}
        acks, answers = {}, {}
        for j in alive:
            for i in sorted(pings.get(j, [])):
                if i in self.fans[j] or len(self.fans[j]) < 2 * self.alpha:
                    self.fans[j][i] = r
                self.hear(j, [i] + start_friends[i], r)
                acks.setdefault(i, []).append(j)
                self.sent[j][1] += 1
            for i in sorted(requests.get(j, []), key=lambda i: (rnd(self.seed, FCFS, r, j, i), i)):
                ok = i in self.fans[j] or len(self.fans[j]) < 2 * self.alpha
                if ok:
                    self.fans[j][i] = r
                answers.setdefault(i, []).append((j, ok))
                self.sent[j][3] += 1
        # finish
        for v in alive:
            before = set(self.friends[v])
            for j in sorted(acks.get(v, [])):
                self.hear(v, start_friends[j], r)
            self.seen["lost"] += len(self.friends[v] - set(acks.get(v, [])))
            self.friends[v] &= set(acks.get(v, []))
            for c, ok in sorted(answers.get(v, [])):
                self.hear(v, start_friends[c], r)
                self.seen["refused"] += not ok
                if ok:
                    self.friends[v].discard(asked[v][c])
                    if c not in self.friends[v] and len(self.friends[v]) < self.alpha:
                        self.friends[v].add(c)
            if self.friends[v] != before:
                for entry in self.votes[v].values():
                    entry[0], entry[1] = 0, False
            for j in self.friends[v]:
                self.votes[v].pop(j, None)
            self.fans[v] = {f: s for f, s in self.fans[v].items() if s >= r - 1}

    def covered(self, v):
        held = set()
        for j in self.friends[v]:
            held |= self.subs[j]
        return len(self.subs[v] & held)

    def state(self, v):
        book = self.votes[v]
        cand = sorted(book)
        fans = sorted(self.fans[v])
        return {
            "friends": sorted(self.friends[v]),
            "fans": fans,
            "fan_seen": [self.fans[v][f] for f in fans],
            "cand": cand,
            "cand_votes": [book[q][0] for q in cand],
            "cand_audited": [int(book[q][1]) for q in cand],
            "cand_heard": [book[q][2] for q in cand],
            "met": self.met[v],
        }
