"""A Rappel node's candidate set on hand-worked sequences: votes, LRU eviction, the audit order
and the reset after a change of friends."""

from overlay.rappel.candidates import Candidate, capacity, hear, next_audit, reopen


def test_capacity_is_friends_of_friends_and_of_fans_and_the_fans():
    assert capacity(6) == 120 and capacity(1) == 5


def test_hearing_votes_and_refreshes_and_skips_self_and_friends():
    c: dict = {}
    hear(c, [5, 7, 1, 9], me=1, friends=[9], now=0, limit=10)
    assert c == {5: Candidate(1, False, 0), 7: Candidate(1, False, 0)}
    hear(c, [7, 8], me=1, friends=[9], now=3, limit=10)
    assert c[7] == Candidate(2, False, 3) and c[8] == Candidate(1, False, 3) and c[5].heard == 0


def test_the_least_recently_heard_leave_first_beyond_the_limit():
    c: dict = {}
    hear(c, [4, 2], me=0, friends=[], now=0, limit=3)
    hear(c, [6], me=0, friends=[], now=1, limit=3)
    hear(c, [3, 2], me=0, friends=[], now=2, limit=3)
    # 4 and 2 were heard at 0, 6 at 1, 3 and 2 again at 2: 4 (the oldest) leaves.
    assert sorted(c) == [2, 3, 6]
    hear(c, [9], me=0, friends=[], now=2, limit=3)
    assert sorted(c) == [2, 3, 9]  # 6 (heard at 1) leaves; a tie would take the smaller id


def test_an_audit_takes_most_votes_then_latest_heard_then_smaller_id():
    c = {3: Candidate(2, False, 1), 4: Candidate(2, False, 5), 5: Candidate(2, False, 5), 6: Candidate(9, True, 9)}
    assert next_audit(c) == 4 and c[4].audited
    assert next_audit(c) == 5 and next_audit(c) == 3 and next_audit(c) is None
    reopen(c)
    assert all(x.votes == 0 and not x.audited for x in c.values())
    assert next_audit(c) == 6  # now the most recently heard of
