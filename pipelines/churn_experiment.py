"""`churn-experiment`: N days of churn on one instance, incremental against fresh, day by day.

One chain (docs/concepts/day-two.md#the-experiment): a copy of the base instance's current version
is day 0 (the instance `CHAIN`, a churn day with no events), and each day d = 1..N adds one churned
version; on each day the design is made twice on the same version, incrementally from day d-1's
incremental overlay and fresh with its changes recorded against that same overlay, so both rows of
`overlay_changes` compare with one previous overlay. Every piece is a run or a version of its own,
named by its day: running the same command again skips what is complete and finishes the rest.
"""

from __future__ import annotations

import json
import logging
from dataclasses import dataclass, replace

from pyspark.sql import Row, SparkSession
from pyspark.sql import functions as F

from overlay import schema as S
from overlay.design.warm import warm_up
from overlay.errors import InputError
from overlay.instance.churn import ChurnSpec
from pipelines.design import DesignRequest, EngineChoice, run_design
from pipelines.incremental import IncrementalChoice
from pipelines.ingest import check_instance_name
from pipelines.instance_churn import SOURCE, ChurnRequest, run_churn
from pipelines.lakehouse import Lakehouse, Retention
from pipelines.progress import Progress

log = logging.getLogger(__name__)
MAX_DAYS = 365


@dataclass(frozen=True)
class ExperimentRequest:
    """`days` days of `churn` on a chain copied from `base`, designing `design` (its instance is
    replaced by the chain's) both ways each day."""

    base: str
    days: int
    churn: ChurnSpec
    design: DesignRequest
    chain: str | None = None
    rebuild_below: float | None = None
    rebuild_every: int | None = None

    @property
    def chain_name(self) -> str:
        return self.chain or f"{self.base}.churn{self.churn.rate:g}.s{self.churn.seed}"

    def check(self) -> None:
        check_instance_name(self.base)
        check_instance_name(self.chain_name)
        if not (1 <= self.days <= MAX_DAYS):
            raise InputError(f"--days must lie in [1, {MAX_DAYS}], got {self.days}")
        self.churn.validate()
        replace(self.design, instance=self.chain_name).check()
        IncrementalChoice("latest", None, self.rebuild_below, self.rebuild_every).check()
        if self.design.algorithm not in ("gm", "gpa", "minmaxoda", "gpm", "gm2"):
            raise InputError(f"the experiment compares greedy designs; {self.design.algorithm} is not one")

    def run_id(self, kind: str, day: int) -> str:
        request = replace(self.design, instance=self.chain_name)
        return f"{request.default_run_id()}.{kind}.d{day:03d}"


def _chain_day(lakehouse: Lakehouse, chain: str) -> int | None:
    """The chain's current day (0: the copy), None before the copy."""
    if not lakehouse.exists(S.INSTANCES):
        return None
    row = lakehouse.read(S.INSTANCES).filter(F.col(S.INSTANCE) == chain).first()
    if row is None:
        return None
    if row[S.SOURCE] != SOURCE:
        raise InputError(f"instance '{chain}' exists and is not a churn chain; name the chain with --chain")
    return int(json.loads(row[S.PARAMS])["day"]) - 1


def run_experiment(
    spark: SparkSession,
    lakehouse: Lakehouse,
    request: ExperimentRequest,
    engine: EngineChoice = EngineChoice(),
    progress: bool = True,
) -> list[dict]:
    """Run (or finish) the chain; returns one row a day: the day's two `overlay_changes` rows side
    by side (day 0: the first design alone)."""
    request.check()
    chain = request.chain_name
    if lakehouse.instance_row(request.base)[S.SOURCE] == SOURCE:
        raise InputError(f"'{request.base}' is a churn chain itself: start the experiment from an ingested instance")
    kept = Retention(versions=None)  # the experiment reads back every day
    design = replace(request.design, instance=chain)
    rows: list[dict] = []
    warmed = False
    with Progress(f"churn-experiment {chain}", request.days + 1, enabled=progress, logger=log) as bar:
        for day in range(request.days + 1):
            current = _chain_day(lakehouse, chain)
            if current is None or current < day:
                if current is not None and current != day - 1:
                    raise InputError(f"chain '{chain}' is at day {current}, not {day - 1}: its days are out of order")
                spec = ChurnSpec(rate=0.0, seed=request.churn.seed) if day == 0 else request.churn
                origin = request.base if day == 0 else chain
                run_churn(spark, lakehouse, ChurnRequest(chain, origin, 1, spec), kept, progress=False)
            elif current > day:
                continue_at = request.run_id("inc", day)
                if not _complete(lakehouse, continue_at):
                    raise InputError(
                        f"chain '{chain}' is at day {current} but the design of day {day} ({continue_at}) is not "
                        "complete: a chain is designed day by day; start a new one with --chain"
                    )
                rows.append(_day_row(lakehouse, request, day))
                bar.step(f"day {day}: complete", day=day)
                continue
            inc = request.run_id("inc", day)
            if not warmed:  # neither design of the process's first day pays the kernels' load
                warm_up(spark, design.algorithm)
                warmed = True
            if day == 0:
                run_design(spark, lakehouse, design, inc, diameters=False, progress=False, engine=engine)
            else:
                choice = IncrementalChoice(
                    request.run_id("inc", day - 1), None, request.rebuild_below, request.rebuild_every
                )
                run_design(
                    spark, lakehouse, design, inc, diameters=False, progress=False, engine=engine, incremental=choice
                )
                run_design(
                    spark,
                    lakehouse,
                    design,
                    request.run_id("fresh", day),
                    diameters=False,
                    progress=False,
                    engine=engine,
                    changes_from=request.run_id("inc", day - 1),
                )
            rows.append(_day_row(lakehouse, request, day))
            last = rows[-1]
            bar.step(
                f"day {day}: incremental {last.get('inc_changed', '-')} links changed, TcoSuppR "
                f"{last['inc_tco']:.4f}; fresh {last.get('fresh_changed', '-')} changed, "
                f"TcoSuppR {last.get('fresh_tco') or float('nan'):.4f}",
                day=day,
            )
    return rows


def _complete(lakehouse: Lakehouse, run_id: str) -> bool:
    if not lakehouse.exists(S.OVERLAY_RUNS):
        return False
    row = lakehouse.read(S.OVERLAY_RUNS).filter(F.col(S.RUN_ID) == run_id).first()
    return row is not None and row[S.STATUS] == S.COMPLETE


def _day_row(lakehouse: Lakehouse, request: ExperimentRequest, day: int) -> dict:
    """The day's figures: each design's TcoSuppR, and against day-1's incremental overlay its link
    changes and engine seconds."""
    ids = {kind: request.run_id(kind, day) for kind in ("inc", "fresh")}
    runs = {
        r[S.RUN_ID]: r
        for r in lakehouse.read(S.OVERLAY_RUNS).filter(F.col(S.RUN_ID).isin(*ids.values())).collect()  # two rows
    }
    changes: dict[str, Row] = {}
    if lakehouse.exists(S.OVERLAY_CHANGES):
        changes = {
            r[S.RUN_ID]: r
            for r in lakehouse.read(S.OVERLAY_CHANGES).filter(F.col(S.RUN_ID).isin(*ids.values())).collect()
        }
    row: dict = {"day": day}
    for kind, run_id in ids.items():
        run = runs.get(run_id)
        if run is None:
            continue
        row[f"{kind}_tco"] = run[S.TCO_SUPPORT]
        row[f"{kind}_links"] = run[S.EDGES]
        change = changes.get(run_id)
        if change is not None:
            row[f"{kind}_changed"] = change[S.LINKS_ADDED] + change[S.LINKS_REMOVED]
            row[f"{kind}_engine_s"] = change[S.SECONDS_ENGINE]
            row[f"{kind}_kind"] = change[S.CHANGE_KIND]
            row["changed_subscriptions"] = change[S.CHANGED_SUBSCRIPTIONS]
    return row
