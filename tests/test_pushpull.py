"""Push-pull on fixed graphs with fixed choices, worked by hand."""

import numpy as np

from overlay.gossip.pushpull import push_pull

# A path 0 - 1 - 2 in CSR (each link both ways, neighbours sorted).
PATH = (np.array([0, 1, 3, 4]), np.array([1, 0, 2, 1]))


def run(graph, alive, draws, age_limit, publisher=0):
    return push_pull(*graph, publisher, np.asarray(alive, bool), np.asarray(draws, np.uint64), age_limit)


def test_a_path_is_informed_one_hop_per_cycle():
    """Cycle 1: 0 pushes to 1 (its only neighbour); 1 picks 0 (draw 0 of [0, 2]) and pulls, the
    same exchange; 2 picks 1, uninformed. Cycle 2: 2 picks 1 and pulls it: all informed."""
    alive = np.ones((3, 3))
    draws = np.zeros((3, 3))
    assert run(PATH, alive, draws, age_limit=5).tolist() == [1 / 3, 2 / 3, 1.0]


def test_the_age_limit_stops_old_messages():
    """With A = 0 nothing spreads: at cycle 1 the publisher's message is already 1 cycle old. With
    A = 1, node 1 (informed at cycle 1) still passes it at cycle 2."""
    alive, draws = np.ones((4, 3)), np.zeros((4, 3))
    assert run(PATH, alive, draws, age_limit=0).tolist() == [1 / 3, 1 / 3, 1 / 3, 1 / 3]
    assert run(PATH, alive, draws, age_limit=1).tolist() == [1 / 3, 2 / 3, 1.0, 1.0]


def test_a_failed_node_returns_uninformed_and_neighbours_skip_it():
    """Node 1 is down at cycle 2: 2 has no alive neighbour, and 1 comes back at cycle 3 without
    the message, so it pulls it again from 0 (age 3 <= 5) and 2 gets it at cycle 4."""
    alive = np.ones((5, 3))
    alive[2, 1] = 0
    draws = np.zeros((5, 3))
    completion = run(PATH, alive, draws, age_limit=5)
    assert completion.tolist() == [1 / 3, 2 / 3, 1 / 2, 2 / 3, 1.0]


def test_the_draw_picks_among_alive_neighbours_in_index_order():
    """A star 0 - {1, 2, 3}, publisher 1: at cycle 1 node 0 picks neighbour draw % 3: 5 % 3 = 2,
    node 3; node 1 picks 0 (its only neighbour) and pushes. 0 ends informed, 3 not (it picked 0,
    which was uninformed at the start). With node 3 down, 5 % 2 = 1 picks node 2 instead."""
    star = (np.array([0, 3, 4, 5, 6]), np.array([1, 2, 3, 0, 0, 0]))
    draws = np.zeros((2, 4))
    draws[1, 0] = 5
    assert run(star, np.ones((2, 4)), draws, 9, publisher=1).tolist() == [1 / 4, 2 / 4]
    alive = np.ones((2, 4))
    alive[:, 3] = 0
    assert run(star, alive, draws, 9, publisher=1).tolist() == [1 / 3, 2 / 3]
    assert np.isnan(run(star, np.zeros((2, 4)), draws, 9, publisher=1)).all()
