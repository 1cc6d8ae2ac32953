"""The resilience job: what failures do to a stored overlay, for every kind of run.

`resilience --run-id ID --fail-nodes 0.01,0.05 [--targeted] [--fail-links 0.05] --trials N
--seed S` reads a complete run and its instance, runs each failure model at its shares
(`overlay.resilience`), and stores one row per (model, share, trial) in `resilience`, replacing
that run's rows for the same model, seed and shares (other shares and seeds stay).
"""

from __future__ import annotations

import logging
import math
import statistics
import time
from dataclasses import dataclass

from pyspark.sql import SparkSession

from overlay import schema as S
from overlay.errors import InputError
from overlay.frames import local_frame
from overlay.resilience import FailurePlan, Outcome, resilience
from pipelines.lakehouse import Lakehouse
from pipelines.overlays import _now, check_run_id, complete_run, run_inputs

log = logging.getLogger(__name__)

SUMMARY_COLUMNS = (
    "model",
    "share",
    "trials",
    "failed",
    "survivors",
    "tco_support",
    "tco_support_sd",
    "connected_topic_share",
    "connected_min",
)


@dataclass(frozen=True)
class ResilienceRequest:
    run_id: str
    fail_nodes: tuple[float, ...] = ()
    fail_links: tuple[float, ...] = ()
    targeted: bool = False
    trials: int = 1
    seed: int = 1

    def check(self) -> None:
        """Every check that needs no Spark."""
        check_run_id(self.run_id)
        if not self.fail_nodes and not self.fail_links:
            raise InputError("give the shares to remove: --fail-nodes and/or --fail-links (for example 0.01,0.05,0.1)")
        for flag, shares in (("--fail-nodes", self.fail_nodes), ("--fail-links", self.fail_links)):
            bad = [share for share in shares if not (0 <= share <= 1) or math.isnan(share)]
            if bad:
                raise InputError(f"{flag} shares must lie in [0, 1], got {bad[0]}")
            if len(set(shares)) != len(shares):
                raise InputError(f"{flag} repeats a share")
        if self.targeted and not self.fail_nodes:
            raise InputError("--targeted removes the highest-degree nodes: give --fail-nodes")
        if self.trials < 1:
            raise InputError(f"--trials must be at least 1, got {self.trials}")

    def plans(self) -> list[FailurePlan]:
        plans = []
        if self.fail_nodes:
            model = "targeted-nodes" if self.targeted else "random-nodes"
            plans.append(FailurePlan(model, self.fail_nodes, self.trials, self.seed))
        if self.fail_links:
            plans.append(FailurePlan("random-links", self.fail_links, self.trials, self.seed))
        return plans


def _record(run_id: str, plan: FailurePlan, outcome: Outcome, now) -> tuple:
    scenario = outcome.scenario
    values = {
        S.RUN_ID: run_id,
        S.MODEL: plan.model,
        S.SHARE: float(scenario.share),
        S.TRIAL: scenario.trial,
        S.SEED: plan.seed,
        S.FAILED: scenario.failed,
        S.SURVIVORS: outcome.survivors,
        S.SUBSCRIPTIONS: outcome.subscriptions,
        S.TOPICS: outcome.topics,
        S.TCC: outcome.tcc,
        S.TCO_SUPPORT: outcome.tco_support,
        S.SHARED_TOPICS: outcome.shared_topics,
        S.CONNECTED_TOPICS: outcome.connected_topics,
        S.CONNECTED_TOPIC_SHARE: outcome.connected_topic_share,
        S.COMPUTED_AT: now,
    }
    return tuple(values[column] for column in S.RESILIENCE.columns)


def summary(plan: FailurePlan, outcomes: list[Outcome]) -> list[dict]:
    """Per share: the mean over trials (and spread) of what the console shows."""
    rows = []
    for share in plan.shares:
        trials = [o for o in outcomes if o.scenario.share == share]
        support = [o.tco_support for o in trials]
        connected = [o.connected_topic_share for o in trials]
        rows.append(
            {
                "model": plan.model,
                "share": share,
                "trials": len(trials),
                "failed": trials[0].scenario.failed,
                "survivors": trials[0].survivors,
                "tco_support": round(statistics.fmean(support), 4),
                "tco_support_sd": round(statistics.pstdev(support), 4),
                "connected_topic_share": round(statistics.fmean(connected), 4),
                "connected_min": round(min(connected), 4),
            }
        )
    return rows


def run_resilience(spark: SparkSession, lakehouse: Lakehouse, request: ResilienceRequest) -> list[dict]:
    """Run every failure model of the request on one complete run; store and summarise them."""
    request.check()
    run = complete_run(lakehouse, request.run_id)
    instance, subscriptions, edges = run_inputs(lakehouse, run)
    rows = []
    for plan in request.plans():
        clock = time.monotonic()
        outcomes = resilience(spark, subscriptions, edges, instance[S.NODES], plan)
        now = _now()
        frame = local_frame(spark, [_record(request.run_id, plan, o, now) for o in outcomes], S.RESILIENCE.schema)
        lakehouse.write_run_rows(
            S.RESILIENCE,
            request.run_id,
            frame,
            within={S.MODEL: plan.model, S.SEED: plan.seed, S.SHARE: tuple(float(s) for s in plan.shares)},
        )
        log.info(
            "resilience %s: %s at %d shares x %d trials in %.1fs",
            request.run_id,
            plan.model,
            len(plan.shares),
            plan.trials,
            time.monotonic() - clock,
        )
        rows += summary(plan, outcomes)
    return rows
