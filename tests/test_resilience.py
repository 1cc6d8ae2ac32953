"""Failures on any overlay (`overlay.resilience`) against the oracle's scenario by definition."""

from __future__ import annotations

import random

import pytest

from overlay import schema as S
from overlay.resilience import FailurePlan, resilience
from tests import ktco_oracle as oracle
from tests.helpers import frame
from tests.instances import random_instance


@pytest.mark.parametrize("model", ["random-nodes", "targeted-nodes", "random-links"])
def test_every_scenario_matches_the_oracle(spark, model):
    subscriptions = random_instance("zipf", 30, 12, 1, 5, seed=4)
    nodes = 32  # nodes 30 and 31 subscribe to nothing; they can still fail
    rng = random.Random(1)
    links = sorted(oracle.harary_pt(subscriptions, 2) | {tuple(sorted(rng.sample(range(nodes), 2))) for _ in range(15)})
    edges = spark.createDataFrame(links, f"{S.U} long, {S.V} long").repartition(3)
    plan = FailurePlan(model, (0.0, 0.1, 0.3, 0.75, 1.0), trials=3, seed=9)
    outcomes = resilience(spark, frame(spark, subscriptions), edges, nodes, plan)
    trials = 1 if model == "targeted-nodes" else 3
    assert [(o.scenario.share, o.scenario.trial) for o in outcomes] == [
        (share, trial) for share in plan.shares for trial in range(trials)
    ]
    for outcome in outcomes:
        expected = oracle.resilience(
            subscriptions, links, nodes, model, outcome.scenario.share, outcome.scenario.trial, 9
        )
        got = {name: getattr(outcome, name) for name in expected}
        assert got == expected, outcome.scenario
    intact = outcomes[0]
    assert intact.tco_support == 1.0 and intact.connected_topic_share == 1.0  # a 2TCO and more
    assert outcomes[-1].subscriptions == (0 if model != "random-links" else len(subscriptions))
    if model != "targeted-nodes":  # trials draw different failures
        assert len({(o.subscriptions, o.tcc, o.connected_topics) for o in outcomes if o.scenario.share == 0.3}) > 1
