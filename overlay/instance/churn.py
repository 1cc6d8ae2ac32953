"""Subscription churn: the next day's version of an instance, seeded and reproducible.

A day applies, to the current version, in this order (our reading: docs/concepts/day-two.md):

1. node departures: `node_rate` x |V| nodes, drawn uniformly, leave with their subscriptions (on a
   social instance their own feed, the topic keyed by them, goes too);
2. subscription changes: `rate` x |I| events, in equal thirds (the remainder to swaps):
   unsubscribe (a random subscription goes, unless it is its node's last), swap (a random
   subscription moves to a topic drawn by the attachment rule), subscribe (a random node gains a
   topic drawn by the attachment rule);
3. node arrivals: as many nodes as left, each with as many subscriptions as a random node of the
   day before, the first topic drawn by popularity and the rest by the attachment rule.

Attachment: `popularity` draws the topic of a uniformly random subscription of the day before
(a topic in proportion to its subscribers); `triadic` draws, for node u, a random topic t of u, a
random other subscriber y of t and a random topic of y (on a social instance: a friend of a
friend), falling back to popularity when u has none. A draw that lands on a topic u already has
(or had yesterday, or, on a social instance, on u's own feed) is drawn again, up to `DRAWS` times; an event that
finds nothing is counted as skipped. Draws read the day before, so one day's events do not feed
each other.

Ids: the nodes and topics that stay keep their order (their ids close the gaps), newcomers come
after them, so the greedy's tie-break by id orders the same pairs the same way from day to day.
Newcomers' keys are `+D<day>.<i>` (a key already taken gets a further `+`).

Pure numpy on the driver: the generator holds one version's (node, topic) rows, 16 bytes each,
as the greedy engine does (`overlay.design.classes.MAX_DRIVER_SUBSCRIPTIONS`).
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, replace

import numpy as np

from overlay.errors import InputError

ATTACHMENTS = ("popularity", "triadic")
DRAWS = 8  # draws of a topic before an event is skipped


@dataclass(frozen=True)
class ChurnSpec:
    rate: float  # subscription changes a day, as a share of the day's subscriptions
    seed: int = 1
    node_rate: float = 0.0  # nodes leaving a day, as a share of the nodes; as many arrive
    attachment: str | None = None  # None: triadic on a social instance, else popularity

    def validate(self) -> None:
        for name in ("rate", "node_rate"):
            value = getattr(self, name)
            if not (0 <= value <= 1):  # NaN fails too
                flag = "--" + name.replace("_", "-")
                raise InputError(
                    f"{flag} is a share of a day's {'subscriptions' if name == 'rate' else 'nodes'} "
                    f"and must lie in [0, 1], got {value}"
                )
        if self.attachment is not None and self.attachment not in ATTACHMENTS:
            raise InputError(f"--attachment must be one of {', '.join(ATTACHMENTS)}, got '{self.attachment}'")
        if self.seed < 0:
            raise InputError(f"--seed must be a non-negative integer, got {self.seed}")


@dataclass(frozen=True)
class Version:
    """One day's instance by dense ids: node `i` is `node_keys[i]`, topic `j` is `topic_keys[j]`,
    `pairs` the (node, topic) subscriptions, distinct."""

    node_keys: np.ndarray  # str, one per node id
    topic_keys: np.ndarray  # str, one per topic id
    pairs: np.ndarray  # int64, (rows, 2)

    def key_pairs(self) -> set[tuple[str, str]]:
        """The subscriptions as (node key, topic key): what stays comparable across days."""
        return set(zip(self.node_keys[self.pairs[:, 0]].tolist(), self.topic_keys[self.pairs[:, 1]].tolist()))


@dataclass(frozen=True)
class ChurnTally:
    """The events a day applied (and those it drew but could not apply)."""

    departures: int
    arrivals: int
    unsubscribes: int
    swaps: int
    subscribes: int
    skipped: int

    def asdict(self) -> dict[str, int]:
        return asdict(self)


class _Day:
    """The mutable state of one day's churn over the day before (`before`)."""

    def __init__(self, before: Version, spec: ChurnSpec, day: int, social: bool) -> None:
        self.before, self.spec, self.social = before, spec, social
        self.rng = np.random.default_rng([spec.seed, day])
        nodes, topics = len(before.node_keys), len(before.topic_keys)
        pairs = before.pairs
        by_node = np.lexsort((pairs[:, 1], pairs[:, 0]))
        self.node_offsets = np.searchsorted(pairs[by_node, 0], np.arange(nodes + 1))
        self.node_topics = pairs[by_node, 1]
        by_topic = np.lexsort((pairs[:, 0], pairs[:, 1]))
        self.topic_offsets = np.searchsorted(pairs[by_topic, 1], np.arange(topics + 1))
        self.topic_nodes = pairs[by_topic, 0]
        self.own_topic = self._own_topics() if social else None
        # What changed, by node (a node's current topics: its day-before topics, less `removed`,
        # plus `added`); newcomers are nodes `nodes`, `nodes + 1`, ...
        self.removed: dict[int, set[int]] = {}
        self.added: dict[int, list[int]] = {}
        self.gone_nodes = np.zeros(nodes, dtype=bool)
        self.gone_topics = np.zeros(topics, dtype=bool)
        self.skipped = 0

    def _own_topics(self) -> np.ndarray:
        """Social: each node's own feed (the topic with its key), -1 when it has none."""
        topic_of = {key: i for i, key in enumerate(self.before.topic_keys.tolist())}
        return np.array([topic_of.get(key, -1) for key in self.before.node_keys.tolist()], dtype=np.int64)

    def topics_of(self, node: int) -> list[int]:
        if node < len(self.before.node_keys):
            kept = self.node_topics[self.node_offsets[node] : self.node_offsets[node + 1]].tolist()
            removed = self.removed.get(node, ())
            kept = [t for t in kept if t not in removed and not self.gone_topics[t]]
        else:
            kept = []
        return kept + self.added.get(node, [])

    def _had_or_has(self, node: int, topic: int) -> bool:
        """Whether `node` had `topic` yesterday or took it today: a draw never undoes an event."""
        if node < len(self.before.node_keys):
            lo, hi = self.node_offsets[node], self.node_offsets[node + 1]
            if topic in self.node_topics[lo:hi]:
                return True
        return topic in self.added.get(node, ())

    def _popular(self) -> int:
        pairs = self.before.pairs
        return int(pairs[self.rng.integers(len(pairs)), 1])

    def _triadic(self, node: int) -> int:
        mine = self.topics_of(node)
        if not mine:
            return self._popular()
        topic = mine[self.rng.integers(len(mine))]
        lo, hi = self.topic_offsets[topic], self.topic_offsets[topic + 1]
        other = int(self.topic_nodes[lo + self.rng.integers(hi - lo)]) if hi > lo else node
        if other == node:  # u alone on t yesterday (or t is new to it): no friend to follow
            return self._popular()
        lo, hi = self.node_offsets[other], self.node_offsets[other + 1]
        return int(self.node_topics[lo + self.rng.integers(hi - lo)])

    def draw(self, node: int, rule: str | None = None) -> int | None:
        """A topic for `node` by the attachment rule (or `rule`), one it has not; None: none found."""
        rule = rule or self.spec.attachment
        for _ in range(DRAWS):
            topic = self._popular() if rule == "popularity" else self._triadic(node)
            if self.gone_topics[topic] or self._had_or_has(node, topic):
                continue
            if self.own_topic is not None and node < len(self.own_topic) and self.own_topic[node] == topic:
                continue
            return topic
        self.skipped += 1
        return None

    def add(self, node: int, topic: int) -> None:
        self.added.setdefault(node, []).append(topic)

    def remove(self, node: int, topic: int) -> None:
        """Drop a subscription of the day before (events only ever pick those)."""
        self.removed.setdefault(node, set()).add(topic)


def churn_day(before: Version, spec: ChurnSpec, day: int, social: bool = False) -> tuple[Version, ChurnTally]:
    """The version after one day of churn (see the module doc); `day` seeds it with `spec.seed`
    and names the newcomers."""
    spec.validate()
    if spec.attachment is None:
        spec = replace(spec, attachment="triadic" if social else "popularity")
    pairs = np.asarray(before.pairs, dtype=np.int64).reshape(-1, 2)
    before = replace(before, pairs=pairs[np.lexsort((pairs[:, 1], pairs[:, 0]))])  # draws index rows: one order
    state = _Day(before, spec, day, social)
    rng = state.rng
    nodes, rows = len(before.node_keys), len(before.pairs)

    leaving = rng.choice(nodes, size=round(spec.node_rate * nodes), replace=False) if nodes else np.zeros(0, int)
    state.gone_nodes[leaving] = True
    if social:
        feeds = state.own_topic[leaving]
        state.gone_topics[feeds[feeds >= 0]] = True
    staying = np.flatnonzero(~state.gone_nodes & (np.diff(state.node_offsets) > 0))

    events = round(spec.rate * rows)
    unsubscribes = swaps = subscribes = 0
    candidates = np.flatnonzero(~state.gone_nodes[before.pairs[:, 0]] & ~state.gone_topics[before.pairs[:, 1]])
    order = rng.permutation(candidates)
    picked = iter(order.tolist())
    for _ in range(events // 3):  # unsubscribe, never a node's last subscription
        row = next(picked, None)
        if row is None:
            break
        node, topic = (int(x) for x in before.pairs[row])
        if len(state.topics_of(node)) < 2:
            state.skipped += 1
            continue
        state.remove(node, topic)
        unsubscribes += 1
    for _ in range(events - 2 * (events // 3)):  # swap
        row = next(picked, None)
        if row is None:
            break
        node, topic = (int(x) for x in before.pairs[row])
        new = state.draw(node)
        if new is None:
            continue
        state.remove(node, topic)
        state.add(node, new)
        swaps += 1
    for _ in range(events // 3):  # subscribe
        if not len(staying):
            break
        node = int(staying[rng.integers(len(staying))])
        new = state.draw(node)
        if new is not None:
            state.add(node, new)
            subscribes += 1

    sizes = np.diff(state.node_offsets)
    taken = set(before.node_keys.tolist())
    newcomer_keys = []
    for i in range(len(leaving)):
        node = nodes + i
        key = f"+D{day}.{i}"
        while key in taken:
            key += "+"
        taken.add(key)
        newcomer_keys.append(key)
        wanted = int(sizes[rng.integers(nodes)]) if nodes else 1
        for j in range(max(wanted, 1)):
            new = state.draw(node, "popularity" if j == 0 else None)
            if new is not None:
                state.add(node, new)
    after = _assemble(state, newcomer_keys)
    arrived = sum(1 for i in range(len(leaving)) if state.added.get(nodes + i))  # one drawing nothing stays out
    departed = nodes - (len(after.node_keys) - arrived)  # social: with those whose every feed left
    tally = ChurnTally(departed, arrived, unsubscribes, swaps, subscribes, state.skipped)
    return after, tally


def _assemble(state: _Day, newcomer_keys: list[str]) -> Version:
    """The new version: staying nodes and topics in their order, newcomers after them."""
    before = state.before
    topics = len(before.topic_keys)
    newcomers = np.array(newcomer_keys, dtype=object)
    node_keys = np.concatenate([before.node_keys.astype(object), newcomers])
    topic_keys = before.topic_keys.astype(object)
    if state.social and newcomer_keys:  # a newcomer's own feed, followed by nobody yet
        topic_keys = np.concatenate([topic_keys, newcomers])
    gone_topics = np.concatenate([state.gone_topics, np.zeros(len(topic_keys) - topics, dtype=bool)])

    pairs = before.pairs
    keep = ~state.gone_nodes[pairs[:, 0]] & ~gone_topics[pairs[:, 1]]
    if state.removed:
        codes = pairs[:, 0] * max(len(topic_keys), 1) + pairs[:, 1]
        dropped = np.array(
            [node * max(len(topic_keys), 1) + t for node, ts in state.removed.items() for t in ts], dtype=np.int64
        )
        keep &= ~np.isin(codes, dropped)
    added = np.array([(node, t) for node, ts in state.added.items() for t in ts], dtype=np.int64).reshape(-1, 2)
    rows = np.concatenate([pairs[keep], added])

    node_alive = np.zeros(len(node_keys), dtype=bool)
    node_alive[rows[:, 0]] = True  # the departed have no rows left
    topic_alive = ~gone_topics
    node_id = np.cumsum(node_alive) - 1
    topic_id = np.cumsum(topic_alive) - 1
    out = np.column_stack([node_id[rows[:, 0]], topic_id[rows[:, 1]]]).astype(np.int64)
    out = out[np.lexsort((out[:, 1], out[:, 0]))]
    return Version(node_keys[node_alive], topic_keys[topic_alive], out)
