"""The run ledger on each ledger table: claim, takeover, owner-checked completion, failure,
deletion, and a `routing_runs` table stored before the attempt column."""

from __future__ import annotations

from datetime import datetime

import pytest
from pyspark.sql.types import StructType

from overlay import schema as S
from overlay.errors import InputError
from pipelines import ledger
from pipelines.ledger import RunTakenOver
from pipelines.route import RouteRequest, claim_run

STARTED = datetime(2026, 1, 1)


@pytest.fixture(scope="module")
def lakehouse(module_lakehouse):
    return module_lakehouse


def record(kind: ledger.RunKind, run_id: str, params: str = "{}") -> dict:
    """A run row's claimed columns, as a job of `kind` fills them."""
    if kind is ledger.ROUTING:
        return {
            S.ROUTING_RUN_ID: run_id,
            S.RUN_ID: "on-some-overlay",
            S.INSTANCE: "i",
            S.PROTOCOL: "pie",
            S.PUBLICATIONS: 5,
            S.SEED: 1,
            S.PARAMS: params,
            S.STARTED_AT: STARTED,
        }
    return {
        S.RUN_ID: run_id,
        S.INSTANCE: "i",
        S.INGEST_ID: "v1",
        S.ALGORITHM: "gm",
        S.PARAMS: params,
        S.STARTED_AT: STARTED,
    }


def same_params(params: str):
    def check(row):
        if row[S.PARAMS] != params:
            raise InputError(f"run '{row[S.PARAMS]}' exists with other settings")

    return check


KINDS = [pytest.param(ledger.OVERLAY, id="overlay_runs"), pytest.param(ledger.ROUTING, id="routing_runs")]


@pytest.mark.parametrize("kind", KINDS)
def test_a_takeover_leaves_the_first_attempt_unable_to_complete_or_fail(spark, lakehouse, kind):
    run_id = f"taken.{kind.name}"
    first = ledger.claim(lakehouse, kind, record(kind, run_id))
    assert first.found is None and not first.done and not first.resumed
    row = ledger.check_owner(lakehouse, run_id, first.attempt, kind)
    assert (row[S.STATUS], row[S.ATTEMPT]) == (S.RUNNING, first.attempt)

    second = ledger.claim(lakehouse, kind, record(kind, run_id))  # the same command again: takes it over
    assert second.resumed and second.attempt != first.attempt and second.found[S.ATTEMPT] == first.attempt
    with pytest.raises(RunTakenOver, match=f"'{run_id}' was taken over by another process"):
        ledger.check_owner(lakehouse, run_id, first.attempt, kind)
    with pytest.raises(RunTakenOver):
        ledger.complete(lakehouse, first, **{S.SECONDS: 1.0})
    with pytest.raises(ValueError), ledger.failing(lakehouse, first, "test"):
        raise ValueError("the first attempt's error")
    row = ledger.run_row(lakehouse, kind, run_id)
    assert (row[S.STATUS], row[S.ATTEMPT], row[S.MESSAGE], row[S.SECONDS]) == (S.RUNNING, second.attempt, None, None)

    ledger.complete(lakehouse, second, **{S.SECONDS: 2.0})
    row = ledger.run_row(lakehouse, kind, run_id)
    assert (row[S.STATUS], row[S.SECONDS]) == (S.COMPLETE, 2.0)
    again = ledger.claim(lakehouse, kind, record(kind, run_id))
    assert again.done and again.found[S.ATTEMPT] == second.attempt  # reused, not taken over


@pytest.mark.parametrize("kind", KINDS)
def test_a_failed_run_is_resumed_and_another_request_refused(spark, lakehouse, kind):
    run_id = f"failed.{kind.name}"
    first = ledger.claim(lakehouse, kind, record(kind, run_id, '{"a": 1}'))
    with pytest.raises(ZeroDivisionError), ledger.failing(lakehouse, first, "test"):
        1 / 0  # noqa: B018
    row = ledger.run_row(lakehouse, kind, run_id)
    assert row[S.STATUS] == S.FAILED and row[S.MESSAGE].startswith("ZeroDivisionError")
    with pytest.raises(InputError, match="other settings"):
        ledger.claim(lakehouse, kind, record(kind, run_id, '{"a": 2}'), same_params('{"a": 2}'))
    assert ledger.run_row(lakehouse, kind, run_id)[S.ATTEMPT] == first.attempt  # a refusal writes nothing
    retried = ledger.claim(
        lakehouse, kind, record(kind, run_id, '{"a": 1}'), same_params('{"a": 1}'), reset={S.SECONDS: None}
    )
    assert retried.resumed and retried.found[S.STATUS] == S.FAILED
    row = ledger.run_row(lakehouse, kind, run_id)
    assert (row[S.STATUS], row[S.ATTEMPT], row[S.MESSAGE]) == (S.RUNNING, retried.attempt, None)


@pytest.mark.parametrize("kind", KINDS)
def test_a_delete_stops_the_owner_refuses_claims_and_finishes_when_run_again(spark, lakehouse, kind):
    run_id = f"deleted.{kind.name}"
    owner = ledger.claim(lakehouse, kind, record(kind, run_id))
    ledger.mark_deleted(lakehouse, kind, run_id)  # a delete that stopped after its first commit
    with pytest.raises(RunTakenOver, match="is being deleted"):
        ledger.check_owner(lakehouse, run_id, owner.attempt, kind)
    with pytest.raises(RunTakenOver):
        ledger.complete(lakehouse, owner)
    with pytest.raises(InputError, match=f"being deleted: finish that with `python -m pipelines runs delete {run_id}`"):
        ledger.claim(lakehouse, kind, record(kind, run_id))
    (deleted,) = ledger.delete_run(lakehouse, run_id)
    assert (deleted.kind, deleted.rows) == (kind.name, {kind.table.name: 1})
    fresh = ledger.claim(lakehouse, kind, record(kind, run_id))  # the id is free again
    assert fresh.found is None


def test_a_routing_run_taken_over_cannot_be_completed_by_its_first_attempt(spark, lakehouse):
    """Routing runs had no attempt token: a rerun recomputed the run while the first process could
    still complete it. Now the first one's completing write fails."""
    request = RouteRequest("on-some-overlay", "scribe", 4)
    first = claim_run(lakehouse, "routed.twice", request, "i")
    second = claim_run(lakehouse, "routed.twice", request, "i")
    assert second.resumed
    with pytest.raises(RunTakenOver, match="routing run 'routed.twice' was taken over"):
        ledger.complete(lakehouse, first, **{S.STATUS: S.FAILED, S.COUNTER_EXAMPLE: "stale"})
    ledger.complete(lakehouse, second, **{S.SUPERSTEPS: 3})
    row = ledger.run_row(lakehouse, ledger.ROUTING, "routed.twice")
    assert (row[S.STATUS], row[S.SUPERSTEPS], row[S.COUNTER_EXAMPLE], row[S.ATTEMPT]) == (
        S.COMPLETE,
        3,
        None,
        second.attempt,
    )
    with pytest.raises(InputError, match="exists with other settings"):
        claim_run(lakehouse, "routed.twice", RouteRequest("on-some-overlay", "scribe", 5), "i")


def test_a_routing_runs_table_from_before_the_attempt_column_gains_it(spark, tmp_path):
    """An older lakehouse: its routing_runs has no `attempt`. Its unfinished run is taken over
    (a null token is an owner like any other), and its runs are completed and deleted."""
    from pipelines.lakehouse import Lakehouse

    lakehouse = Lakehouse(spark, tmp_path / "old")
    old = StructType([f for f in S.ROUTING_RUNS.schema.fields if f.name != S.ATTEMPT])
    stored = {**record(ledger.ROUTING, "old.running"), S.STATUS: S.RUNNING}
    done = {**record(ledger.ROUTING, "old.done"), S.STATUS: S.COMPLETE}
    rows = [tuple(r.get(f.name) for f in old.fields) for r in (stored, done)]
    spark.createDataFrame(rows, old).write.format("delta").save(lakehouse.path(S.ROUTING_RUNS))

    resumed = ledger.claim(lakehouse, ledger.ROUTING, record(ledger.ROUTING, "old.running"))
    assert resumed.resumed and resumed.found[S.ATTEMPT] is None
    assert lakehouse.read(S.ROUTING_RUNS).columns == S.ROUTING_RUNS.columns
    ledger.complete(lakehouse, resumed)
    assert ledger.run_row(lakehouse, ledger.ROUTING, "old.running")[S.STATUS] == S.COMPLETE
    assert ledger.claim(lakehouse, ledger.ROUTING, record(ledger.ROUTING, "old.done")).done

    other = Lakehouse(spark, tmp_path / "old-delete")  # a delete first, before any claim added the column
    spark.createDataFrame(rows, old).write.format("delta").save(other.path(S.ROUTING_RUNS))
    (deleted,) = ledger.delete_run(other, "old.done")
    assert deleted.rows == {S.ROUTING_RUNS.name: 1}
