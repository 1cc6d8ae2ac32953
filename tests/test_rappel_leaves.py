"""Rappel's proper leaves (§4.4) in the per-feed trees (overlay.rappel.feeds), without Spark: one
leave worked by hand, and the trees of a churned run with proper leaves against the independent
oracle (tests/rappel_trees_oracle.py), round by round."""

import numpy as np
import pytest
from rappel_trees_oracle import coupled_run

from overlay.rappel.coordinates import LatencyModel
from overlay.rappel.feeds import DATA, JOIN, JOINS_IN, Feeds, FeedTree, Member
from overlay.rappel.friendship import Interests
from overlay.rappel.presence import Presence
from tests.helpers import feed_instance, tree_fields


class OneLeaver:
    """Everyone up, except `leaver` from round `at` on, who leaves properly then."""

    def __init__(self, leaver: int, at: int) -> None:
        self.leaver, self.at = leaver, at

    def up(self, node: int, round_: int) -> bool:
        return not (node == self.leaver and round_ >= self.at)

    def leaves_properly(self, node: int, round_: int) -> bool:
        return node == self.leaver and round_ == self.at


def test_a_proper_leave_hands_the_children_to_the_heir_under_the_leavers_parent():
    # Feed 0 published by node 0 at the origin; beta 3. Node 1 (10 ms from it) has children 2, 3, 4;
    # node 0 is full (1, 5, 6). Node 2 is nearest the publisher of 1's children: the heir.
    coordinates = np.array([(0, 0), (10, 0), (20, 0), (25, 5), (30, 0), (0, 40), (0, -40)], dtype=float)
    nodes = len(coordinates)
    interests = Interests(np.arange(nodes + 1, dtype=np.int64), np.zeros(nodes, dtype=np.int64), coordinates, "exact")
    feeds = Feeds(interests, np.array([0]), OneLeaver(1, at=2), seed=1, beta=3)
    far = 10**6  # no periodic rejoin in these rounds
    tree = FeedTree(
        0,
        0,
        {
            0: Member(online=True, children=[1, 5, 6], since=0),
            1: Member(online=True, parent=0, children=[2, 3, 4], since=0, rejoin=far),
            2: Member(online=True, parent=1, since=0, rejoin=far),
            3: Member(online=True, parent=1, since=0, rejoin=far),
            4: Member(online=True, parent=1, since=0, rejoin=far),
            5: Member(online=True, parent=0, since=0, rejoin=far),
            6: Member(online=True, parent=0, since=0, rejoin=far),
        },
    )
    first = feeds.round(tree, {}, 2)
    second = feeds.round(tree, {}, 3)  # twelve ticks: one publication at least

    # The parent adopted the heir (four children for a moment, three once 1 went); 3 and 4
    # joined at the heir, which had room.
    assert (tree.members[0].children, tree.members[2].parent, tree.members[2].children) == ([2, 5, 6], 0, [3, 4])
    assert not tree.members[1].online and tree.members[1].parent == -1
    # Join traffic of the leave: 1 asks its parent, tells 3 and 4, says it goes (4); 0 tells the
    # heir (1); 2 says it moved and answers the two walks (3); 3 and 4 each walk and say so (2).
    joins = {node: counts[JOIN] for node, counts in first.traffic.items() if counts[JOIN]}
    assert joins == {0: 1, 1: 4, 2: 3, 3: 2, 4: 2}
    assert {node: counts[JOINS_IN] for node, counts in first.traffic.items() if counts[JOINS_IN]} == {2: 2}
    # Every update of the two rounds reaches everyone but the leaver, 3 and 4 through the heir.
    deliveries = first.deliveries + second.deliveries
    updates = {d.update for d in deliveries}
    assert updates
    for u in updates:
        assert sorted(d.node for d in deliveries if d.update == u) == [2, 3, 4, 5, 6]
        at_heir = next(d.arrival for d in deliveries if d.update == u and d.node == 2)
        at_3 = next(d.arrival for d in deliveries if d.update == u and d.node == 3)
        assert at_3 == pytest.approx(at_heir + np.hypot(5, 5))
    assert second.traffic[2][DATA] == 2 * len({d.update for d in second.deliveries})


def test_a_leaver_without_children_or_parent_fails_instead():
    coordinates = np.array([(0, 0), (10, 0), (20, 0)], dtype=float)
    interests = Interests(np.arange(4, dtype=np.int64), np.zeros(3, dtype=np.int64), coordinates, "exact")
    feeds = Feeds(interests, np.array([0]), OneLeaver(1, at=2), seed=1, beta=3)
    # 1 is an orphan (its parent gone): its child 2 finds out by its pings, as after a failure.
    tree = FeedTree(
        0,
        0,
        {
            0: Member(online=True, since=0),
            1: Member(online=True, children=[2], since=0, rejoin=10**6),
            2: Member(online=True, parent=1, since=0, rejoin=10**6),
        },
    )
    out = feeds.round(tree, {}, 2)
    assert not tree.members[1].online and tree.members[2].detect >= 6 + 3  # 15 s after a missed ping at the soonest
    assert out.traffic.get(1, [0] * 5)[JOIN] == 0  # a failed node says nothing
    feeds.round(tree, {}, 3)
    assert tree.members[2].parent == 0  # rejoined at the publisher once it noticed


def test_churned_trees_with_proper_leaves_match_the_oracle():
    # 60 nodes, 8 feeds, sessions of 3 min online / 1.5 min offline, 70% of session ends proper leaves:
    # 30 rounds of the production trees, driven by the friendship oracle's friends, against the oracle.
    nodes, feeds_count, seed, rounds = 60, 8, 9, 30
    subs, publishers = feed_instance(nodes, feeds_count, seed)
    presence = Presence(seed=seed, spared=frozenset(publishers), mean_online=6, mean_offline=3, proper_leaves=0.7)
    coords = LatencyModel().coordinates(seed, np.arange(nodes))
    offsets = np.concatenate([[0], np.cumsum([len(subs[v]) for v in range(nodes)])]).astype(np.int64)
    topics = np.array([t for v in range(nodes) for t in sorted(subs[v])], dtype=np.int64)
    interests = Interests(offsets, topics, coords, "exact")
    production = Feeds(interests, np.array(publishers), presence, seed, beta=2)
    trees = [production.start(f, [v for v in range(nodes) if f in subs[v]]) for f in range(feeds_count)]
    oracle = coupled_run(
        nodes,
        subs,
        [tuple(c) for c in coords.tolist()],
        publishers,
        rounds,
        seed=seed,
        alpha=3,
        mode="exact",
        presence_down=lambda r: presence.down(range(nodes), r),
        beta=2,
        proper=presence.leaves_properly,
    )
    leaves = 0
    for r, fo, expected in oracle:
        friends = {v: sorted(fo.friends[v]) for v in range(nodes)}
        deliveries, traffic, met = [], {}, {}
        for tree in trees:
            leaving = {
                x
                for x, m in tree.members.items()
                if m.online
                and m.children
                and m.parent != -1
                and not presence.up(x, r)
                and presence.leaves_properly(x, r)
            }
            leaves += len(leaving)
            out = production.round(tree, {v: friends[v] for v in tree.members}, r)
            assert tree_fields(tree) == expected.tree(tree.feed), f"round {r}, feed {tree.feed}"
            deliveries += [(tree.feed, d.node, d.update, d.published, d.arrival, d.hops) for d in out.deliveries]
            traffic.update({(tree.feed, node): counts for node, counts in out.traffic.items()})
            for node, ids in out.met.items():
                met.setdefault(node, []).extend(ids)
        assert sorted(deliveries) == sorted(expected.deliveries), f"round {r}: deliveries"
        assert traffic == expected.traffic, f"round {r}: traffic"
        assert {v: sorted(ids) for v, ids in met.items()} == expected.met, f"round {r}: met"
    assert leaves >= 5, leaves  # the hard path was taken
