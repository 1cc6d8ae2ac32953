import random
from collections import deque

import pytest
from chispa import assert_df_equality

from overlay import schema as S
from overlay.instance.bfs import NODE, bfs_sample
from overlay.instance.social import SocialSpec, social_instance
from tests.helpers import FACEBOOK, read_edges


def edge_frame(spark, edges):
    return spark.createDataFrame(edges, "a long, b long")


def levels_from(seeds, adjacency):
    """Plain multi-source BFS levels."""
    level = {s: 0 for s in seeds}
    queue = deque(seeds)
    while queue:
        node = queue.popleft()
        for other in adjacency.get(node, ()):
            if other not in level:
                level[other] = level[node] + 1
                queue.append(other)
    return level


def test_whole_graph_when_it_is_small_enough(spark):
    sample = bfs_sample(edge_frame(spark, [(1, 2), (2, 3)]), "a", "b", size=5, seed=1, seed_count=2)
    expected = spark.createDataFrame([(1, 0), (2, 0), (3, 0)], f"{NODE} long, {S.LEVEL} int")
    assert_df_equality(sample, expected, ignore_row_order=True, ignore_nullable=True)


def test_more_seeds_than_the_sample_size(spark):
    edges = [(1, 2), (2, 3), (3, 4), (4, 5), (5, 6)]
    sample = bfs_sample(edge_frame(spark, edges), "a", "b", size=2, seed=3, seed_count=5)
    assert [r[S.LEVEL] for r in sample.collect()] == [0, 0]


@pytest.mark.parametrize("trial", range(4))
def test_sample_is_a_bfs_ball_cut_in_its_last_level(spark, trial):
    rng = random.Random(trial)
    n = 60
    # Two components, so a sample larger than the first one must re-seed.
    edges = {(rng.randrange(30), rng.randrange(30)) for _ in range(70)} | {
        (30 + rng.randrange(30), 30 + rng.randrange(30)) for _ in range(70)
    }
    edges = [(a, b) for a, b in edges if a != b]
    adjacency = {}
    for a, b in edges:
        adjacency.setdefault(a, set()).add(b)
        adjacency.setdefault(b, set()).add(a)
    size = rng.choice([5, 17, 33, 45])
    got = {
        r[NODE]: r[S.LEVEL]
        for r in bfs_sample(edge_frame(spark, edges), "a", "b", size, seed=trial, seed_count=2).collect()
    }
    assert len(got) == min(size, len(adjacency))
    # Replay level by level: level L+1 is the unvisited neighbourhood of level L (cut when it is
    # the last one), or a single new seed when that neighbourhood is empty.
    top = max(got.values())
    visited = {v for v, level in got.items() if level == 0}
    assert 1 <= len(visited) <= 2
    for level in range(1, top + 1):
        frontier = {v for v, depth in got.items() if depth == level - 1}
        reachable = {w for v in frontier for w in adjacency[v]} - visited
        this_level = {v for v, depth in got.items() if depth == level}
        if not reachable:
            assert len(this_level) == 1 and not (this_level & visited)
        elif level < top:
            assert this_level == reachable
        else:
            assert this_level <= reachable and len(this_level) == size - len(visited)
        visited |= this_level
    assert n >= len(visited)


@pytest.mark.slow  # the real-graph check; BFS correctness is covered on synthetic graphs above
def test_facebook_sample_keeps_all_edges_among_visited_nodes(spark):
    edges = read_edges(FACEBOOK)
    frames = social_instance(spark, SocialSpec(path=str(FACEBOOK), directed=False, sample_bfs=1000, seed=1))
    keys = {r[S.KEY] for r in frames.node_keys.collect()}
    assert len(keys) == 1000
    sampled = {int(k) for k in keys}
    inside = {(min(a, b), max(a, b)) for a, b in edges if a in sampled and b in sampled}
    assert frames.tally.accepted == len(inside)
    assert frames.subscriptions.count() == 2 * len(inside)
    assert frames.tally.unsampled == len(edges) - len(inside)
    again = social_instance(spark, SocialSpec(path=str(FACEBOOK), directed=False, sample_bfs=1000, seed=1))
    assert_df_equality(frames.node_keys, again.node_keys, ignore_row_order=True)
