"""u1, u2, restSub and Alg. 3 (SelectLnCoveredNeighbors) on hand-worked buffers."""

import math

from overlay.gossip.select import rest_sub, select_ln_covered, u1, u2
from overlay.gossip.theory import need


def test_the_utilities_are_the_papers_jaccard_ratios():
    assert u1(frozenset({1, 2, 3}), frozenset({2, 3, 4})) == 2 / 4  # eq. 1
    assert u2(frozenset({1}), frozenset({1, 5, 6})) == 1 / 3  # eq. 2: restSub {1} against sub(q)
    assert u2(frozenset(), frozenset({1})) == 0.0 and u1(frozenset(), frozenset()) == 0.0


def test_rest_sub_counts_the_view_against_need():
    subs = {0: frozenset({"a", "b"}), 1: frozenset({"a"}), 2: frozenset({"a", "b"})}
    needs = {"a": 2, "b": 1}.get
    assert rest_sub(subs[0], [], subs, needs) == {"a", "b"}
    assert rest_sub(subs[0], [1], subs, needs) == {"a", "b"}  # a: 1 of 2, b: 0 of 1
    assert rest_sub(subs[0], [1, 2], subs, needs) == frozenset()


def test_alg3_takes_the_best_u2_first_and_stops_once_covered():
    """p = 0 subscribes a (needs 2) and b (needs 1). u2 against restSub {a, b}: node 1 {a, b} has
    1.0; node 2 {a, x, y} 1/4; node 3 {b} 1/2; node 4 {z} 0. After 1, restSub = {a} (a has 1 of
    2): node 2 has 1/3, node 3 0, so 2 comes next and p is covered; 3 and 4 are never taken."""
    subs = {0: frozenset("ab"), 1: frozenset("ab"), 2: frozenset("axy"), 3: frozenset("b"), 4: frozenset("z")}
    needs = {"a": 2, "b": 1}.get
    assert select_ln_covered(0, subs, [4, 3, 2, 1, 0], needs) == [1, 2]


def test_alg3_ties_go_to_more_coverage_then_the_smaller_id_and_zero_u2_stops():
    subs = {0: frozenset("abc"), 5: frozenset("a"), 6: frozenset("b"), 7: frozenset("abcdef"), 8: frozenset("q")}
    needs = lambda t: 1  # noqa: E731
    # u2 against {a, b, c}: 5 and 6 have 1/3 each, 7 has 3/6 = 1/2: 7 first, and it covers all.
    assert select_ln_covered(0, subs, [5, 6, 7, 8], needs) == [7]
    # Without 7: 5 and 6 tie at 1/3 with one topic each: the smaller id first; then 6 (1/2);
    # c stays uncovered and 8 shares nothing (u2 = 0): the rebuild stops there.
    assert select_ln_covered(0, subs, [8, 6, 5], needs) == [5, 6]
    # A tie on u2 goes to the one covering more: against {a, b}, 12 {a, b, x, y} has 2/4 and 10
    # {a} has 1/2; 12 covers both topics, so it comes first although its id is larger.
    subs.update({1: frozenset("ab"), 10: frozenset("a"), 12: frozenset("abxy")})
    assert select_ln_covered(1, subs, [10, 12], needs) == [12]


def test_alg3_with_the_papers_need_reaches_ln_n_neighbours():
    """A topic of 20 subscribers needs ceil(ln 20) = 3 of them: the rebuild takes exactly 3."""
    subs = {i: frozenset({"t"}) for i in range(20)}
    need_t = need(20)
    assert need_t == math.ceil(math.log(20)) == 3
    assert select_ln_covered(0, subs, range(1, 20), lambda t: need_t) == [1, 2, 3]


def _alg3_by_hand(member: list[list[bool]], sizes: list[int], need: list[int]) -> list[int]:
    """Alg. 3 written out in plain Python for the random cross-check: u2 as a Fraction-free
    float of the same integers, ties to more coverage, then the first row."""
    covered = [0] * len(need)
    left = set(range(len(member)))
    taken = []
    while True:
        rest = [j for j in range(len(need)) if covered[j] < need[j]]
        if not rest or not left:
            return taken
        scored = []
        for i in sorted(left):
            inter = sum(member[i][j] for j in rest)
            scored.append((inter / (len(rest) + sizes[i] - inter), inter, -i))
        score, _, minus_i = max(scored)
        if score <= 0.0:
            return taken
        taken.append(-minus_i)
        left.discard(-minus_i)
        covered = [c + member[-minus_i][j] for j, c in enumerate(covered)]


def test_the_compiled_alg3_is_the_plain_one_on_random_matrices_with_ties():
    """Small topic counts and sizes make equal u2 and equal coverage common (the tie rules)."""
    import random

    import numpy as np

    from overlay.gossip.select import ln_covered_choice

    rng = random.Random(5)
    for _ in range(400):
        rows, topics = rng.randrange(0, 12), rng.randrange(1, 6)
        member = [[rng.random() < 0.4 for _ in range(topics)] for _ in range(rows)]
        sizes = [sum(r) + rng.randrange(3) for r in member]
        need = [rng.randrange(0, 4) for _ in range(topics)]
        candidates = np.array(sorted(rng.sample(range(100), rows)), dtype=np.int64)
        expected = [int(candidates[i]) for i in _alg3_by_hand(member, sizes, need)]
        matrix = np.array(member, dtype=bool).reshape(rows, topics)
        got = ln_covered_choice(candidates, matrix, np.array(sizes, dtype=np.int64), np.array(need, dtype=np.int64))
        assert got == expected, (member, sizes, need)
