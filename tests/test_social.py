import pytest
from chispa import assert_df_equality

from overlay import schema as S
from overlay.errors import InputError
from overlay.instance.model import RowTally
from overlay.instance.social import SocialSpec, social_instance
from tests.helpers import FACEBOOK, keyed_subscriptions, pairs, read_edges

TINY = "# tiny\n1 2\n2 3\n1 3\n3 1\n2 3\n4 4\n5 x\n"


def test_directed_a_follows_b(spark, write_text):
    frames = social_instance(spark, SocialSpec(path=write_text("g.txt", TINY), directed=True))
    assert_df_equality(
        keyed_subscriptions(frames),
        pairs(spark, [("1", "2"), ("2", "3"), ("1", "3"), ("3", "1")]),
        ignore_row_order=True,
        ignore_nullable=True,
    )
    assert frames.tally == RowTally(read=7, accepted=4, rejected=2, duplicates=1)


def test_directed_reversed(spark, write_text):
    frames = social_instance(spark, SocialSpec(path=write_text("g.txt", TINY), directed=True, reverse=True))
    assert_df_equality(
        keyed_subscriptions(frames),
        pairs(spark, [("2", "1"), ("3", "2"), ("3", "1"), ("1", "3")]),
        ignore_row_order=True,
        ignore_nullable=True,
    )


def test_undirected_friends_subscribe_to_each_other(spark, write_text):
    frames = social_instance(spark, SocialSpec(path=write_text("g.txt.gz", TINY), directed=False))
    expected = [(a, b) for a, b in [("1", "2"), ("2", "3"), ("1", "3")]]
    assert_df_equality(
        keyed_subscriptions(frames),
        pairs(spark, expected + [(b, a) for a, b in expected]),
        ignore_row_order=True,
        ignore_nullable=True,
    )
    # "3 1" repeats "1 3" and the second "2 3" repeats the first: both duplicates.
    assert frames.tally == RowTally(read=7, accepted=3, rejected=2, duplicates=2)


def test_rejected_rows_keep_record_reason_and_line(spark, write_text):
    path = write_text("g.txt", TINY)
    frames = social_instance(spark, SocialSpec(path=path, directed=True))
    expected = spark.createDataFrame(
        [("4 4", "self-loop on node 4", path, 7), ("5 x", "non-numeric node id 'x'", path, 8)],
        S.REJECTED_FRAME_SCHEMA,
    )
    assert_df_equality(frames.rejected, expected, ignore_row_order=True, ignore_nullable=True)


def test_dense_ids_follow_numeric_key_order(spark, write_text):
    frames = social_instance(spark, SocialSpec(path=write_text("g.txt", "10 9\n100 9\n"), directed=True))
    assert_df_equality(
        frames.node_keys,
        spark.createDataFrame([("9", 0), ("10", 1), ("100", 2)], f"{S.KEY} string, {S.ID} long"),
        ignore_row_order=True,
        ignore_nullable=True,
    )


def test_a_topic_with_one_subscriber_is_kept(spark, write_text):
    frames = social_instance(spark, SocialSpec(path=write_text("g.txt", "1 2\n3 2\n1 3\n"), directed=True))
    counts = {r[S.TOPIC_ID]: r["count"] for r in frames.subscriptions.groupBy(S.TOPIC_ID).count().collect()}
    assert sorted(counts.values()) == [1, 2]


@pytest.mark.parametrize(
    "text, fragment",
    [
        ("", "no usable edge lines (0 rows"),
        ("# only comments\n\n", "no usable edge lines (0 rows"),
        ("a b\nc d\n", "no usable edge lines"),
        ("1 1\n2 x\n", "2 rejected"),
    ],
    ids=["empty", "comments-only", "header-only", "all-rejected"],
)
def test_files_with_no_usable_edge(spark, write_text, text, fragment):
    with pytest.raises(InputError, match=fragment.replace("(", r"\(")):
        social_instance(spark, SocialSpec(path=write_text("g.txt", text), directed=False))


def test_missing_file(spark, tmp_path):
    with pytest.raises(InputError, match="file not found: .*nope.txt"):
        social_instance(spark, SocialSpec(path=str(tmp_path / "nope.txt"), directed=False))


def test_reverse_needs_directed(spark, write_text):
    with pytest.raises(InputError, match="--reverse only applies to a --directed graph"):
        social_instance(spark, SocialSpec(path=write_text("g.txt", "1 2\n"), directed=False, reverse=True))


def test_facebook_whole_matches_a_plain_reading(spark):
    """Oracle: the whole shipped graph, read in plain Python."""
    edges = read_edges(FACEBOOK)
    unique = {(min(a, b), max(a, b)) for a, b in edges if a != b}
    frames = social_instance(spark, SocialSpec(path=str(FACEBOOK), directed=False))
    assert frames.tally == RowTally(
        read=len(edges), accepted=len(unique), rejected=0, duplicates=len(edges) - len(unique)
    )
    assert frames.subscriptions.count() == 2 * len(unique)
    assert frames.node_keys.count() == len({n for e in unique for n in e}) == 4039


def plain_feed_cut(spark, follows, seeds: int, publishers: int, seed: int):
    """The paper's cut read plainly from (follower, journal) pairs: seed journals by the
    documented rank, the universe of their followers, the most followed journals from inside it;
    returns the chosen journals and the kept follows."""
    journals = sorted({b for _, b in follows})
    rank = {
        r["u"]: r["rank"]
        for r in spark.sql(
            f"SELECT u, xxhash64({seed}, 'feed-seed', CAST(u AS BIGINT)) AS rank "
            f"FROM VALUES {', '.join(f'({j})' for j in journals)} AS t(u)"
        ).collect()
    }
    seed_journals = set(sorted(journals, key=lambda j: (rank[j], j))[:seeds])
    universe = {a for a, b in follows if b in seed_journals}
    followers = {}
    for a, b in follows:
        if a in universe:
            followers[b] = followers.get(b, 0) + 1
    chosen = set(sorted(followers, key=lambda j: (-followers[j], j))[:publishers])
    return chosen, [(a, b) for a, b in follows if a in universe and b in chosen]


def test_a_feed_sample_is_the_papers_livejournal_cut(spark, write_text):
    """ComNet'09's workload from a directed graph (overlay.instance.feeds), against a plain
    reading: seed journals by the documented rank, the universe of their followers, the most
    followed journals from inside it, and only the edges between the two kept."""
    import random

    rng = random.Random(7)
    edges = sorted({(rng.randrange(40), rng.randrange(40)) for _ in range(260)})
    edges = [(a, b) for a, b in edges if a != b]
    path = write_text("follows.txt", "".join(f"{a} {b}\n" for a, b in edges) + f"{edges[0][0]} {edges[0][1]}\n")
    seeds, publishers, seed = 4, 5, 3
    frames = social_instance(
        spark, SocialSpec(path=path, directed=True, seed=seed, feed_seeds=seeds, feed_publishers=publishers)
    )

    chosen, kept = plain_feed_cut(spark, edges, seeds, publishers, seed)

    assert_df_equality(
        keyed_subscriptions(frames),
        pairs(spark, [(str(a), str(b)) for a, b in kept]),
        ignore_row_order=True,
        ignore_nullable=True,
    )
    assert [r[S.KEY] for r in frames.topic_keys.orderBy(S.ID).collect()] == [str(b) for b in sorted(chosen)]
    assert frames.node_keys.count() == len({u for e in kept for u in e})
    assert frames.tally == RowTally(
        read=len(edges) + 1, accepted=len(kept), rejected=0, duplicates=1, unsampled=len(edges) - len(kept)
    )


@pytest.mark.slow  # the directed cut's test runs by default; this one adds about 15 s
def test_a_feed_sample_of_an_undirected_graph_takes_each_friendship_as_two_follows(spark, write_text):
    """Friendships as follows both ways, cut the same way (plain reading); a line is kept when
    either of its follows is, and the instance has the kept follows only."""
    import random

    rng = random.Random(11)
    lines = [(a, b) for a, b in {(rng.randrange(30), rng.randrange(30)) for _ in range(90)} if a != b]
    path = write_text("friends.txt", "".join(f"{a} {b}\n" for a, b in lines))
    seeds, publishers, seed = 3, 4, 5
    frames = social_instance(
        spark, SocialSpec(path=path, directed=False, seed=seed, feed_seeds=seeds, feed_publishers=publishers)
    )

    friendships = {(min(a, b), max(a, b)) for a, b in lines}
    follows = sorted({(a, b) for a, b in friendships} | {(b, a) for a, b in friendships})
    chosen, kept = plain_feed_cut(spark, follows, seeds, publishers, seed)

    assert_df_equality(
        keyed_subscriptions(frames),
        pairs(spark, [(str(a), str(b)) for a, b in kept]),
        ignore_row_order=True,
        ignore_nullable=True,
    )
    assert [r[S.KEY] for r in frames.topic_keys.orderBy(S.ID).collect()] == [str(b) for b in sorted(chosen)]
    kept_lines = {(min(a, b), max(a, b)) for a, b in kept}
    duplicates = len(lines) - len(friendships)  # "a b" after "b a"
    assert frames.tally == RowTally(
        read=len(lines),
        accepted=len(kept_lines),
        rejected=0,
        duplicates=duplicates,
        unsampled=len(friendships) - len(kept_lines),
    )
    assert any((b, a) not in kept for a, b in kept)  # some friendships kept one way only


@pytest.mark.parametrize(
    "options, message",
    [
        ({"directed": True, "feed_seeds": 2}, "needs both --feed-seeds and --feed-publishers"),
        ({"directed": True, "feed_seeds": 2, "feed_publishers": 3, "sample_bfs": 10}, "choose one sample"),
    ],
)
def test_bad_feed_samples_are_refused(spark, write_text, options, message):
    with pytest.raises(InputError, match=message):
        social_instance(spark, SocialSpec(path=write_text("g.txt", "1 2\n"), **options))
