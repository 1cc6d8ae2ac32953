"""The run ledger: one protocol for every run table (`overlay_runs`, `routing_runs`), so every job
claims, owns, completes and deletes its runs the same way.

* **claim**: a run row is inserted first, status `running`, with an `attempt` token naming this
  process (one MERGE: of two processes claiming a new id, one inserts it). A row that exists
  is the job's to judge (`check`: same request?); a complete one is handed back for reuse, a
  running or failed one is taken over (a new token), conditionally on the token it replaces, so
  of two processes taking over at once one wins and the other looks again;
* **ownership**: long jobs check the token between steps (`check_owner`) and stop early once
  another process took the run over, or a delete cleared it;
* **completion** (and failure marking) is one MERGE conditional on the token: a process that
  was taken over can neither complete nor fail its successor's run;
* **deletion**: the row is marked `deleted` (its token cleared, so an owner stops), the runs
  derived from it go, then its rows in every table it owns, then the row: running the same
  delete again finishes an interrupted one.
"""

from __future__ import annotations

import contextlib
import logging
import uuid
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime

from pyspark.sql import Row
from pyspark.sql import functions as F

from overlay import schema as S
from overlay.errors import InputError
from pipelines.lakehouse import Lakehouse, UnknownRunError, sql_literal

log = logging.getLogger(__name__)


class RunTakenOver(RuntimeError):
    """Another process took this run over (a new `attempt` token), or a delete cleared it; this
    process stops without writing the run's row. `deleted`: the run is being deleted (nobody
    will complete it)."""

    def __init__(self, message: str, deleted: bool = False):
        super().__init__(message)
        self.deleted = deleted


@dataclass(frozen=True)
class RunKind:
    """A kind of run: its ledger table and key, what made it (algorithm or protocol), the tables
    whose rows are its own, and what a message calls one."""

    name: str
    table: S.TableSpec
    key: str
    maker: str
    owned: tuple[S.TableSpec, ...]
    noun: str


OVERLAY = RunKind(
    "overlay",
    S.OVERLAY_RUNS,
    S.RUN_ID,
    S.ALGORITHM,
    (
        S.OVERLAY_EDGES,
        S.OVERLAY_ROUNDS,
        S.REJECTED_OVERLAY_EDGES,
        S.TOPIC_COMPONENTS,
        S.OVERLAY_METRICS,
        S.TOPIC_CONNECTIVITY,
        S.OVERLAY_KTCO,
        S.RESILIENCE,
        S.OVERLAY_CHANGES,
        S.RING,
        S.FINGERS,
        *S.GOSSIP_TABLES,
        *S.GOSSIPSUB_TABLES,
        *S.RAPPEL_RUN_TABLES,
    ),
    "run",
)
ROUTING = RunKind(
    "routing",
    S.ROUTING_RUNS,
    S.ROUTING_RUN_ID,
    S.PROTOCOL,
    (S.ROUTING_PUBLICATIONS, S.ROUTING_DELIVERIES, S.ROUTING_LOAD, S.ROUTING_METRICS, S.DISSEMINATION_COMPLETION),
    "routing run",
)
KINDS = {kind.name: kind for kind in (OVERLAY, ROUTING)}


def _now() -> datetime:
    return datetime.now(UTC).replace(tzinfo=None)


def run_row(lakehouse: Lakehouse, kind: RunKind, run_id: str) -> Row:
    """The run's row as stored now (UnknownRunError when there is none)."""
    return lakehouse.run_row(run_id, kind.table, kind.key)


# Claiming --------------------------------------------------------------------------------


@dataclass(frozen=True)
class Claim:
    """What a claim got: the run, this process's attempt token, and the row it found (None: the
    claim inserted a new run; a complete row: the run is done, the job returns it as is)."""

    kind: RunKind
    run_id: str
    attempt: str
    found: Row | None

    @property
    def done(self) -> bool:
        return self.found is not None and self.found[S.STATUS] == S.COMPLETE

    @property
    def resumed(self) -> bool:
        """Whether this attempt took over a run an earlier attempt left unfinished."""
        return self.found is not None and not self.done


def claim(
    lakehouse: Lakehouse,
    kind: RunKind,
    record: dict,
    check: Callable[[Row], None] = lambda row: None,
    *,
    wait: Callable[[Row], Row] | None = None,
    reset: dict | None = None,
    redo: str = "",
) -> Claim:
    """Insert the run row `record` (status running, a new attempt token), or take the stored one.

    A stored row is first checked: one being deleted is refused (`redo`: how else to redo it),
    then `check(row)` raises when it is another request. A complete row is handed back; a
    running or failed one is taken over (its process crashed, or is superseded: it stops at its
    next `check_owner`), setting `reset` too. `wait(row)`, for a row another process is running:
    returns once that run is complete or presumed dead (the design's shared reference)."""
    run_id, attempt = record[kind.key], uuid.uuid4().hex
    if lakehouse.insert_run({**record, S.STATUS: S.RUNNING, S.ATTEMPT: attempt}, kind.table, kind.key):
        return Claim(kind, run_id, attempt, None)
    while True:
        found = run_row(lakehouse, kind, run_id)
        if found[S.STATUS] == S.DELETED:
            raise InputError(
                f"{kind.noun} '{run_id}' is being deleted: finish that with `python -m pipelines runs delete {run_id}`"
                + (f", {redo}" if redo else "")
            )
        check(found)
        if wait is not None and found[S.STATUS] == S.RUNNING:
            found = wait(found)
        if found[S.STATUS] == S.COMPLETE:
            return Claim(kind, run_id, attempt, found)
        taking = {S.STATUS: S.RUNNING, S.ATTEMPT: attempt, S.MESSAGE: None, **(reset or {})}
        if lakehouse.update_run_if_owned(run_id, found[S.ATTEMPT], kind.table, kind.key, **taking):
            log.info("resuming %s %s (was %s)", kind.noun, run_id, found[S.STATUS])
            return Claim(kind, run_id, attempt, found)
        log.info("%s %s changed hands while this process claimed it; looking again", kind.noun, run_id)


# Owning ----------------------------------------------------------------------------------


def taken_over(kind: RunKind, run_id: str, row: Row | None = None) -> RunTakenOver:
    if row is not None and row[S.STATUS] == S.DELETED:
        return RunTakenOver(f"{kind.noun} '{run_id}' is being deleted; this process stops", deleted=True)
    return RunTakenOver(f"{kind.noun} '{run_id}' was taken over by another process; this one stops")


def check_owner(lakehouse: Lakehouse, run_id: str, attempt: str, kind: RunKind = OVERLAY) -> Row:
    """Stop early when taken over (the final write checks ownership again, in the same commit);
    the run row as read."""
    row = run_row(lakehouse, kind, run_id)
    if row[S.ATTEMPT] != attempt:
        raise taken_over(kind, run_id, row)
    return row


def complete(lakehouse: Lakehouse, claimed: Claim, **values: object) -> None:
    """Flip the run to complete with `values` (which may say `failed` instead: a routing run
    that is not exactly once), in the one write that checks it is still this attempt's."""
    final = {S.STATUS: S.COMPLETE, S.MESSAGE: None, **values}
    kind = claimed.kind
    if not lakehouse.update_run_if_owned(claimed.run_id, claimed.attempt, kind.table, kind.key, **final):
        raise taken_over(kind, claimed.run_id)


@contextlib.contextmanager
def failing(lakehouse: Lakehouse, claimed: Claim, job: str):
    """The body owns the run: an error marks it failed with the error's text (unless another
    process took it over meanwhile: then its new owner decides) and goes on up."""
    try:
        yield
    except RunTakenOver:
        raise
    except BaseException as error:
        if not isinstance(error, KeyboardInterrupt):
            log.error("%s %s failed: %s", job, claimed.run_id, error)
        kind, message = claimed.kind, f"{type(error).__name__}: {error}"[:2000]
        try:
            failed = {S.STATUS: S.FAILED, S.MESSAGE: message}
            if not lakehouse.update_run_if_owned(claimed.run_id, claimed.attempt, kind.table, kind.key, **failed):
                log.warning("%s %s was taken over by another process: not marking it failed", kind.noun, claimed.run_id)
        except Exception:
            log.exception("could not mark %s %s failed", kind.noun, claimed.run_id)
        raise


# Finding and deleting --------------------------------------------------------------------


def find_run(lakehouse: Lakehouse, run_id: str, kind: str | None = None) -> tuple[RunKind, Row]:
    """The kind and row of the run with this id, looked up in every kind's table (or in `kind`'s)."""
    kinds = [KINDS[kind]] if kind is not None else list(KINDS.values())
    found = []
    for candidate in kinds:
        if lakehouse.exists(candidate.table):
            row = lakehouse.read(candidate.table).filter(F.col(candidate.key) == run_id).first()
            if row is not None:
                found.append((candidate, row))
    if not found:
        raise UnknownRunError(
            f"no {kind or 'overlay or routing'} run '{run_id}'; list them with `python -m pipelines runs`"
        )
    if len(found) > 1:
        raise InputError(f"'{run_id}' names runs of several kinds ({', '.join(k.name for k, _ in found)}): add --kind")
    return found[0]


@dataclass(frozen=True)
class DeletedRuns:
    """Runs of one kind deleted together, with the rows that went per table (their own rows in
    the ledger table included)."""

    kind: str
    run_ids: tuple[str, ...]
    rows: dict[str, int]


def delete_run(lakehouse: Lakehouse, run_id: str, kind: str | None = None) -> list[DeletedRuns]:
    """Delete a run and every run and row derived from it (see the module doc); what went,
    dependents first."""
    found, _row = find_run(lakehouse, run_id, kind)
    return delete_runs(lakehouse, found, [run_id])


def delete_runs(lakehouse: Lakehouse, kind: RunKind, run_ids: Sequence[str]) -> list[DeletedRuns]:
    """Delete runs of one kind and everything derived from them, in as many commits as for one
    run: the mark, the dependents' own batch, one delete per table (all at once), the rows last. Running it
    again finishes an interrupted delete."""
    ids = sorted(set(run_ids))
    if not ids:
        return []
    mark_deleted(lakehouse, kind, *ids)
    deleted: list[DeletedRuns] = []
    if kind is OVERLAY and lakehouse.exists(S.ROUTING_RUNS):
        routed = lakehouse.read(S.ROUTING_RUNS).filter(F.col(S.RUN_ID).isin(ids)).select(S.ROUTING_RUN_ID)
        dependents = [r[S.ROUTING_RUN_ID] for r in routed.collect()]  # the routing runs on these overlays
        deleted += delete_runs(lakehouse, ROUTING, dependents)
    within = f"{kind.key} IN ({', '.join(map(sql_literal, ids))})"
    counts: dict[str, int] = {}
    if kind is ROUTING and lakehouse.exists(S.ROUTING_COMPARISON):
        counts[S.ROUTING_COMPARISON.name] = _delete_comparisons_with(lakehouse, within)
    counts.update(lakehouse.delete_rows_from([table for table in kind.owned if lakehouse.exists(table)], within))
    counts[kind.table.name] = lakehouse.delete_rows(kind.table, within)
    log.info("deleted %d %s run(s) from %s: %s", len(ids), kind.name, ids[0], counts)
    return [*deleted, DeletedRuns(kind.name, tuple(ids), {t: n for t, n in counts.items() if n})]


def mark_deleted(lakehouse: Lakehouse, kind: RunKind, *run_ids: str) -> None:
    """The delete's first commit: readers of complete runs no longer see the runs, and their
    attempt tokens are cleared, so a process still running one stops at its next ownership check."""
    lakehouse.ensure(kind.table)  # a ledger from before the attempt column gains it
    values = {S.STATUS: S.DELETED, S.MESSAGE: f"deleted at {_now():%Y-%m-%d %H:%M:%S} UTC", S.ATTEMPT: None}
    lakehouse.update_runs(run_ids, table=kind.table, key=kind.key, **values)


def _delete_comparisons_with(lakehouse: Lakehouse, routing_runs: str) -> int:
    """Every comparison that includes one of the routing runs (a SQL condition) goes whole (a
    comparison is all its systems)."""
    ids = [
        r[S.COMPARISON_ID]
        for r in lakehouse.read(S.ROUTING_COMPARISON).filter(routing_runs).select(S.COMPARISON_ID).distinct().collect()
    ]  # the comparisons these routing runs are part of: a handful each
    if not ids:
        return 0
    return lakehouse.delete_rows(S.ROUTING_COMPARISON, f"{S.COMPARISON_ID} IN ({', '.join(map(sql_literal, ids))})")
