"""The churn generator (`overlay.instance.churn`): what a day does, checked on the keys of the
two versions, independently of how the generator stores them."""

from __future__ import annotations

import math

import numpy as np
import pytest

from overlay.errors import InputError
from overlay.instance.churn import ChurnSpec, Version, churn_day


def random_version(nodes=120, topics=40, seed=0, social=False) -> Version:
    rng = np.random.default_rng(seed)
    pairs = set()
    for u in range(nodes):
        for t in rng.choice(topics, rng.integers(1, 6), replace=False):
            if not (social and int(t) == u):
                pairs.add((u, int(t)))
    pairs = np.array(sorted(pairs), dtype=np.int64)
    node_keys = np.array([f"u{i}" for i in range(nodes)], dtype=object)
    topic_keys = np.array([f"u{i}" if social else f"t{i}" for i in range(topics)], dtype=object)
    return Version(node_keys, topic_keys, pairs)


def by_node(version: Version) -> dict[str, set[str]]:
    out: dict[str, set[str]] = {}
    for node, topic in version.key_pairs():
        out.setdefault(node, set()).add(topic)
    return out


@pytest.mark.parametrize("attachment", ["popularity", "triadic"])
@pytest.mark.parametrize("seed", [1, 2, 3])
def test_a_day_changes_what_its_tally_says_and_nothing_else(attachment, seed):
    before = random_version(seed=seed)
    spec = ChurnSpec(rate=0.1, seed=seed, node_rate=0.05, attachment=attachment)
    after, tally = churn_day(before, spec, day=4)
    old, new = by_node(before), by_node(after)
    departed = set(old) - set(new)
    arrived = set(new) - set(old)
    assert len(departed) == tally.departures == round(0.05 * 120)
    assert len(arrived) == tally.arrivals
    assert all(key.startswith("+D4.") for key in arrived)
    staying = set(old) & set(new)
    lost = sum(len(old[n] - new[n]) for n in staying)
    gained = sum(len(new[n] - old[n]) for n in staying)
    assert lost == tally.unsubscribes + tally.swaps
    assert gained == tally.swaps + tally.subscribes
    events = round(0.1 * len(before.pairs))
    assert tally.unsubscribes + tally.swaps + tally.subscribes <= events
    assert all(new[n] for n in new)  # nobody is left without a subscription
    assert all(len(new[n]) >= 1 for n in staying)
    # ids: the staying nodes keep their order, newcomers come last; ids are dense and distinct
    order = [k for k in after.node_keys.tolist() if k in staying]
    assert order == [k for k in before.node_keys.tolist() if k in staying]
    assert after.node_keys.tolist()[len(staying) :] == sorted(arrived, key=lambda k: int(k.split(".")[1]))
    assert len(set(map(tuple, after.pairs.tolist()))) == len(after.pairs)
    assert after.pairs[:, 0].max() == len(after.node_keys) - 1


def test_the_same_seed_and_day_give_the_same_version_and_another_day_another():
    before = random_version()
    spec = ChurnSpec(rate=0.05, seed=7, node_rate=0.02, attachment="triadic")
    one, tally = churn_day(before, spec, day=2)
    shuffled = Version(before.node_keys, before.topic_keys, np.random.default_rng(5).permutation(before.pairs))
    again, tally_again = churn_day(shuffled, spec, day=2)  # rows read back from a table come in any order
    other, _ = churn_day(before, spec, day=3)
    assert tally == tally_again and np.array_equal(one.pairs, again.pairs)
    assert one.node_keys.tolist() == again.node_keys.tolist()
    assert one.key_pairs() != other.key_pairs()


def test_no_churn_is_the_same_version():
    before = random_version()
    after, tally = churn_day(before, ChurnSpec(rate=0.0, node_rate=0.0), day=1)
    assert after.key_pairs() == before.key_pairs() and tally.asdict() == dict.fromkeys(tally.asdict(), 0)


def test_a_social_departure_takes_its_feed_and_nobody_follows_themself():
    before = random_version(social=True)
    after, tally = churn_day(
        before, ChurnSpec(rate=0.2, node_rate=0.1, attachment="triadic", seed=5), day=1, social=True
    )
    old, new = by_node(before), by_node(after)
    gone = set(old) - set(new)
    assert gone and tally.departures == len(gone)
    assert not any(topic in gone for topics in new.values() for topic in topics)
    assert all(node not in topics for node, topics in new.items())
    arrived = set(new) - set(old)
    assert arrived <= set(after.topic_keys.tolist())  # a newcomer's feed exists, followed by nobody yet


def test_popularity_draws_follow_the_topic_sizes():
    """Subscribes by popularity land on a topic about in proportion to its subscribers: over many
    days the most popular fifth of the topics gets more than its share of the new subscriptions."""
    before = random_version(nodes=400, topics=50, seed=9)
    sizes = np.bincount(before.pairs[:, 1], minlength=50)
    top = {f"t{i}" for i in np.argsort(-sizes)[:10]}
    share_of_rows = sizes[np.argsort(-sizes)[:10]].sum() / sizes.sum()
    gained = 0
    on_top = 0
    for day in range(1, 21):
        after, _ = churn_day(before, ChurnSpec(rate=0.1, seed=1), day=day)
        old, new = by_node(before), by_node(after)
        for node in new:
            for topic in new[node] - old.get(node, set()):
                gained += 1
                on_top += topic in top
    assert gained > 500
    assert abs(on_top / gained - share_of_rows) < 0.08, (on_top / gained, share_of_rows)


@pytest.mark.parametrize(
    "spec,message",
    [
        (ChurnSpec(rate=1.5), "--rate is a share"),
        (ChurnSpec(rate=-0.1), "must lie in [0, 1]"),
        (ChurnSpec(rate=math.nan), "must lie in [0, 1]"),
        (ChurnSpec(rate=0.1, node_rate=2.0), "--node-rate is a share"),
        (ChurnSpec(rate=0.1, attachment="random"), "--attachment must be one of popularity, triadic"),
    ],
)
def test_bad_rates_are_refused(spec, message):
    with pytest.raises(InputError, match=message.replace("[", r"\[").replace("]", r"\]")):
        churn_day(random_version(), spec, day=1)
