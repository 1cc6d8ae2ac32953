"""Rappel's feed trees as explicit columns (overlay/rappel/tree_codec.py): every tree of a churned
run with proper leaves survives encode and decode, round after round, and a run carried through
them is the run itself; no field of `Member` or `FeedTree` is lost; the pickles stored before
layout 1 are read only when their classes match today's; and a stopped run stored with pickled
trees is migrated and resumed to the uninterrupted run."""

import copy
import dataclasses
import os
import pickle

import numpy as np
import pytest
from chispa import assert_df_equality
from pyspark.sql import functions as F
from pyspark.sql.types import BinaryType, IntegerType, LongType, StringType, StructField, StructType

from overlay import schema as S
from overlay.instance.synthetic import SyntheticSpec
from overlay.rappel import tree_codec
from overlay.rappel.coordinates import LatencyModel
from overlay.rappel.feeds import NONE, Feeds, FeedTree, Member
from overlay.rappel.friendship import Interests
from overlay.rappel.presence import Presence
from overlay.rappel.simulation import RappelSimulation
from overlay.rappel.tree_codec import decode, encode, from_pickle
from pipelines.lakehouse import Lakehouse
from pipelines.rappel import RappelRequest, run_rappel
from pipelines.spark import jobs_started
from tests.helpers import RAPPEL_RUN_TABLES, feed_instance, store_instance


def churned_rounds(rounds: int = 30):
    """The trees of 60 nodes and 8 feeds through `rounds` rounds of churn with proper leaves,
    friends drawn at random each round: yields (round, feeds, trees, friends) before each round."""
    nodes, feeds_count, seed = 60, 8, 9
    subs, publishers = feed_instance(nodes, feeds_count, seed)
    presence = Presence(seed=seed, spared=frozenset(publishers), mean_online=6, mean_offline=3, proper_leaves=0.7)
    coords = LatencyModel().coordinates(seed, np.arange(nodes))
    offsets = np.concatenate([[0], np.cumsum([len(subs[v]) for v in range(nodes)])]).astype(np.int64)
    topics = np.array([t for v in range(nodes) for t in sorted(subs[v])], dtype=np.int64)
    feeds = Feeds(Interests(offsets, topics, coords, "exact"), np.array(publishers), presence, seed, beta=2)
    trees = [feeds.start(f, [v for v in range(nodes) if f in subs[v]]) for f in range(feeds_count)]
    rng = np.random.default_rng(seed)
    for r in range(1, rounds + 1):
        friends = {v: sorted(rng.choice(nodes, size=4, replace=False).tolist()) for v in range(nodes)}
        yield r, feeds, trees, friends


def outputs(out) -> tuple:
    return (
        [dataclasses.astuple(d) for d in out.deliveries],
        sorted(out.traffic.items()),
        sorted((node, list(ids)) for node, ids in out.met.items()),
    )


def test_every_tree_of_a_churned_run_survives_encode_and_decode_and_runs_on_alike():
    """decode(encode(t)) == t for every feed after every round, and the decoded copy's next round
    is the original's (outputs and tree): what a resumed run relies on."""
    seen = {"orphans": 0, "skips": 0, "plans": 0, "cached": 0}
    for r, feeds, trees, friends in churned_rounds():
        for i, tree in enumerate(trees):
            copied = decode(tree.feed, encode(tree))
            assert copied == tree, f"round {r}, feed {tree.feed}"
            ours = {v: friends[v] for v in tree.members}
            assert outputs(feeds.round(copied, ours, r)) == outputs(feeds.round(tree, ours, r)), f"round {r}"
            assert copied == tree, f"round {r}, feed {tree.feed} after the round"
            trees[i] = copied  # the rest of the run goes on from decoded trees only
            for m in tree.members.values():
                seen["orphans"] += m.detect != NONE
                seen["skips"] += m.skip
                seen["plans"] += m.plan != NONE
                seen["cached"] += bool(m.got)
    assert min(seen.values()) > 0, seen  # every kind of pending state was carried across a round


# A value other than the default for every field of Member: a field added to Member and not to
# the codec (and here) fails below.
SAMPLE = {
    "online": True,
    "parent": 7,
    "children": [3, 11],
    "since": 12,
    "plan": 14,
    "direct": True,
    "rejoin": 40,
    "skip": True,
    "detect": 15,
    "ancestors": [7, 2, 0],
    "got": {4: 20012.5, 5: 25000.0},
}


def test_no_field_of_a_member_or_a_tree_is_lost():
    names = [f.name for f in dataclasses.fields(Member)]
    assert sorted(names) == sorted(SAMPLE), "a Member field the codec test does not know: add it to both"
    assert tuple(names) == tree_codec.MEMBER_FIELDS, "Member's fields and the stored member struct's differ"
    member_struct = [f.name for f in S.RAPPEL_TREE_MEMBER.fields]
    assert member_struct == [S.NODE_ID, *tree_codec.MEMBER_FIELDS]
    assert [f.name for f in dataclasses.fields(FeedTree)] == ["feed", "publisher", "members", "updates"]
    for name in names:  # each field alone, the others at their defaults
        tree = FeedTree(3, 0, {0: Member(online=True), 9: Member(**{name: SAMPLE[name]})})
        assert decode(3, encode(tree)) == tree, name
    whole = FeedTree(3, 0, {9: Member(**SAMPLE), 0: Member()}, [(4, 2), (5, 3)])
    back = decode(3, encode(whole))
    assert back == whole and list(back.members) == [9, 0]  # the members' order kept too


def test_only_pickles_of_todays_tree_layout_are_read():
    """Layout 0 (the pickles stored before layout 1): read when FeedTree's and Member's fields are
    the pickle's, else None; a pickle of anything but those classes runs nothing."""
    tree = FeedTree(feed=2, publisher=4, members={4: Member(online=True), 9: Member(online=True, parent=4)})
    assert from_pickle(pickle.dumps(tree, protocol=5)) == tree
    older = copy.deepcopy(tree)
    del vars(older.members[9])["got"]  # a Member written before `got` existed
    assert from_pickle(pickle.dumps(older)) is None
    newer = copy.deepcopy(tree)
    vars(newer)["epoch"] = 3  # a FeedTree with a field this code does not know
    assert from_pickle(pickle.dumps(newer)) is None
    assert from_pickle(pickle.dumps({"feed": 2})) is None and from_pickle(b"not a pickle") is None

    class Boom:
        def __reduce__(self):
            return os.system, ("exit 3",)

    assert from_pickle(pickle.dumps(Boom())) is None  # refused before anything is called


LEGACY_SCHEMA = StructType(  # rappel_tree_states before layout 1
    [
        StructField(S.RUN_ID, StringType(), False),
        StructField(S.ROUND, IntegerType(), False),
        StructField(S.TOPIC_ID, LongType(), False),
        StructField(S.LEGACY_TREE, BinaryType(), False),
    ]
)


def test_stored_pickled_trees_become_layout_1_rows(spark):
    _, _, trees, _ = next(r for r in churned_rounds(6) if r[0] == 6)
    legacy = [("a", 6, t.feed, pickle.dumps(t, protocol=5)) for t in trees]
    older = copy.deepcopy(trees[0])
    del vars(older)["updates"]
    legacy.append(("b", 6, 0, pickle.dumps(older)))
    frame = spark.createDataFrame(legacy, LEGACY_SCHEMA)
    assert tree_codec.outdated(frame)
    rows = tree_codec.current_rows(frame)
    assert rows.columns == [S.RUN_ID, S.ROUND, S.TOPIC_ID, S.LAYOUT_VERSION, *tree_codec.TREE_COLUMNS]
    got = {r[S.TOPIC_ID]: r.asDict(recursive=True) for r in rows.collect()}  # run b's tree is unreadable
    assert {(r[S.RUN_ID], r[S.ROUND], r[S.LAYOUT_VERSION]) for r in got.values()} == {("a", 6, 1)}
    assert {f: decode(f, r) for f, r in got.items()} == {t.feed: t for t in trees}
    jobs = jobs_started(spark)
    assert not tree_codec.outdated(rows)
    assert jobs_started(spark) == jobs  # current rows are told by their schema: a run's start runs no job


NODES = 40
# 6 rounds, snapshots at 2, 4 and 6; 40% of the nodes fail in round 4 and return in round 6.
REQUEST = RappelRequest("codec-40", hours=0.05, seed=2, alpha=3, beta=2, mode="exact", failure=(0.4, 0.02, 0.04))
TABLES = RAPPEL_RUN_TABLES


@pytest.mark.slow  # two small Rappel runs, one stopped and resumed: 2-6 min
def test_a_run_stopped_with_pickled_trees_is_migrated_and_resumes_to_the_uninterrupted_run(
    spark, lakehouse, tmp_path, monkeypatch, caplog
):
    spec = SyntheticSpec("zipf", NODES, 8, 1, 4, seed=5)
    straight = Lakehouse(spark, tmp_path / "straight")
    store_instance(spark, straight, REQUEST.instance, spec)
    assert REQUEST.rounds == 6
    run_rappel(spark, straight, REQUEST, snapshot_every=2, progress=False, diameters=False)

    store_instance(spark, lakehouse, REQUEST.instance, spec)
    run_id = REQUEST.default_run_id()
    real_append = lakehouse.append_run_rows
    tree_snapshots = []

    def crash_at_the_second_trees(table, rid, frame):
        if table == S.RAPPEL_TREE_STATES:
            tree_snapshots.append(rid)
            if len(tree_snapshots) == 2:  # round 4: its states stored, its trees not
                raise RuntimeError("power cut inside a snapshot")
        real_append(table, rid, frame)

    monkeypatch.setattr(lakehouse, "append_run_rows", crash_at_the_second_trees)
    with pytest.raises(RuntimeError, match="inside a snapshot"):
        run_rappel(spark, lakehouse, REQUEST, snapshot_every=2, progress=False, diameters=False)
    monkeypatch.setattr(lakehouse, "append_run_rows", real_append)

    # The stopped run as the code before layout 1 stored it: each tree pickled in `tree`, and a
    # run whose trees no class of today's layout reads.
    path = lakehouse.path(S.RAPPEL_TREE_STATES)
    stored = lakehouse.read(S.RAPPEL_TREE_STATES).collect()
    assert {r[S.ROUND] for r in stored} == {2}
    legacy = [
        (r[S.RUN_ID], r[S.ROUND], r[S.TOPIC_ID], pickle.dumps(decode(r[S.TOPIC_ID], r.asDict(True)), protocol=5))
        for r in stored
    ]
    older = decode(0, stored[0].asDict(True))
    del vars(older)["updates"]
    legacy.append(("another-run", 2, 0, pickle.dumps(older, protocol=5)))
    spark.createDataFrame(legacy, LEGACY_SCHEMA).write.format("delta").mode("overwrite").option(
        "overwriteSchema", "true"
    ).save(path)
    resumed_from = []
    real_run = RappelSimulation.run

    def recorded_run(self, state, trees, first, last, **kwargs):
        resumed_from.append(first)
        return real_run(self, state, trees, first, last, **kwargs)

    monkeypatch.setattr(RappelSimulation, "run", recorded_run)
    with caplog.at_level("WARNING", logger="pipelines.rappel"):
        run = run_rappel(spark, lakehouse, REQUEST, snapshot_every=2, progress=False, diameters=False)
    assert run[S.STATUS] == S.COMPLETE and resumed_from == [3]
    assert "another-run" in caplog.text  # its snapshot dropped, and said so
    table = lakehouse.read(S.RAPPEL_TREE_STATES)
    assert [(f.name, f.dataType.simpleString()) for f in table.schema.fields] == [
        (f.name, f.dataType.simpleString()) for f in S.RAPPEL_TREE_STATES.schema.fields
    ]  # the declared columns, no pickle left
    assert table.where(F.col(S.RUN_ID) != run_id).isEmpty()
    for spec_ in TABLES:
        got, want = (
            house.read(spec_).filter(F.col(S.RUN_ID) == run_id).drop(S.RUN_ID, S.SECONDS, S.COMPUTED_AT)
            for house in (lakehouse, straight)
        )
        assert got.count() == want.count() > 0, spec_.name
        assert_df_equality(got, want, ignore_row_order=True, ignore_nullable=True)
