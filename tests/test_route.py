"""The route job end to end: tables, reuse, a failed exactly-once check, a takeover, bad input;
on a module lakehouse holding the tiny workflow's small-world overlay (the same instance and
design as tests/workflows/tiny_refresh.yaml), so the default run covers them."""

from __future__ import annotations

import contextlib

import pytest
from pyspark.sql import functions as F

from overlay import schema as S
from overlay.errors import InputError
from overlay.instance.synthetic import SyntheticSpec
from pipelines import route
from pipelines.cli import main
from pipelines.design import DesignRequest, run_design
from pipelines.ledger import RunTakenOver
from pipelines.route import RouteRequest, run_route
from tests.helpers import run_cli, store_instance

NODES = 24
TINY = SyntheticSpec(dist="zipf", nodes=NODES, topics=10, min_subs=2, max_subs=4, seed=3)  # as tiny_refresh.yaml
SCRIBE_RUN = "tiny.swico.random-chord.s1.scribe.p12.s1"


@pytest.fixture(scope="module")
def lakehouse(module_lakehouse):
    return module_lakehouse


@pytest.fixture(scope="module")
def small_world(spark, lakehouse):
    """A RandomS + Chord overlay of instance `tiny`."""
    store_instance(spark, lakehouse, "tiny", TINY)
    request = DesignRequest("tiny", "swico", short="random", long="chord")
    return run_design(spark, lakehouse, request, diameters=False, progress=False)


@pytest.fixture(scope="module")
def scribed(lakehouse, small_world):
    """`route` through the CLI, as the workflow's route_scribe step runs it: (exit code, stdout)."""
    argv = ["--lakehouse", lakehouse.root, "route", "--run-id", small_world[S.RUN_ID], "--protocol", "scribe"]
    code, out, err = run_cli(*argv, "--publications", "12")
    assert code == 0, err[-3000:]
    return code, out


def rows_of(lakehouse, table, routing_run_id):
    return lakehouse.read(table).filter(F.col(S.ROUTING_RUN_ID) == routing_run_id).collect()


def test_a_routing_run_stores_consistent_tables(spark, lakehouse, small_world, scribed):
    out = scribed[1]
    assert f"Routing run {SCRIBE_RUN} (scribe on {small_world[S.RUN_ID]}): complete" in out
    (run,) = rows_of(lakehouse, S.ROUTING_RUNS, SCRIBE_RUN)
    (metrics,) = rows_of(lakehouse, S.ROUTING_METRICS, SCRIBE_RUN)
    pubs = rows_of(lakehouse, S.ROUTING_PUBLICATIONS, SCRIBE_RUN)
    deliveries = rows_of(lakehouse, S.ROUTING_DELIVERIES, SCRIBE_RUN)
    load = rows_of(lakehouse, S.ROUTING_LOAD, SCRIBE_RUN)
    assert run[S.STATUS] == S.COMPLETE and run[S.SUPERSTEPS] == metrics[S.SUPERSTEPS] > 0
    assert len(pubs) == 12 and len(load) == NODES
    assert (
        metrics[S.DELIVERIES]
        == len(deliveries)
        == sum(r[S.DELIVERED] for r in load)
        == sum(r[S.DELIVERIES] for r in pubs)
    )
    assert (
        metrics[S.MESSAGES] == run[S.MESSAGES] == sum(r[S.RECEIVED] for r in load) == sum(r[S.RECEIVED] for r in pubs)
    )
    assert metrics[S.ROUTING_OVERHEAD] == sum(r[S.PURE_FORWARDS] for r in load)
    assert metrics[S.DELIVERY_RATIO] == 1.0 and metrics[S.DUPLICATE_DELIVERIES] == 0
    assert metrics[S.MAX_PATH_LENGTH] == max(r[S.HOPS] for r in deliveries)
    subscribed = {
        (r[S.NODE_ID], r[S.TOPIC_ID]) for r in lakehouse.instance_rows(S.SUBSCRIPTIONS_TABLE, "tiny").collect()
    }
    assert all((r[S.PUBLISHER], r[S.TOPIC_ID]) in subscribed for r in pubs)
    again = run_route(spark, lakehouse, RouteRequest(small_world[S.RUN_ID], "scribe", 12, 1))
    assert again[S.STARTED_AT] == run[S.STARTED_AT]  # reused, not recomputed


ROUTE_COMMITS = 6  # claim, publications, deliveries, load, metrics, completion
ROUTE_JOBS = {"memory": 26, "compiled": 69, "supersteps": 94}


@pytest.mark.parametrize(
    "engine", ["memory", *(pytest.param(e, marks=pytest.mark.slow) for e in ("compiled", "supersteps"))]
)
def test_a_routing_run_counts_its_spark_jobs_and_delta_commits(spark, lakehouse, small_world, scribed, engine):
    """The counts are stored on the routing run row and pinned here, so fixed costs cannot creep
    back (`scribed` has created the routing tables whichever test a worker runs first: no creation
    commits counted)."""
    request = RouteRequest(small_world[S.RUN_ID], "scribe", 12, 7, engine=engine)
    run = run_route(spark, lakehouse, request, f"counted-{engine}", progress=False)
    assert run[S.STATUS] == S.COMPLETE
    assert run[S.DELTA_COMMITS] == ROUTE_COMMITS
    # + 1: a Delta checkpoint job when one of this run's commits is a table's tenth, which depends
    # on how many routing runs the module lakehouse holds when a CI worker reaches this test.
    assert 0 < run[S.SPARK_JOBS] <= ROUTE_JOBS[engine] + 1, run[S.SPARK_JOBS]


def test_a_run_that_is_not_exactly_once_is_stored_failed(spark, lakehouse, small_world, monkeypatch, capsys):
    """The default engine (the memory regime) with one delivery lost before its outcome (the
    Spark regime's counter-example: tests/test_routing.py)."""
    import pyarrow.compute as pc

    real = route.summarise_in_memory

    def losing_one(routed, tables, placed):
        arrivals = routed.arrivals
        delivered = pc.and_(
            arrivals.column("target"), pc.not_equal(arrivals.column("at"), arrivals.column(S.PUBLISHER))
        )
        first = arrivals.filter(delivered).sort_by([(S.PUB_ID, "ascending"), ("at", "ascending")]).slice(0, 1)
        pub, at = first.column(S.PUB_ID)[0].as_py(), first.column("at")[0].as_py()
        lost = pc.and_(pc.and_(pc.equal(arrivals.column(S.PUB_ID), pub), pc.equal(arrivals.column("at"), at)), delivered)  # fmt: skip
        routed.arrivals = arrivals.filter(pc.invert(lost))
        return real(routed, tables, placed)

    monkeypatch.setattr(route, "summarise_in_memory", losing_one)
    argv = [
        "--lakehouse",
        lakehouse.root,
        "route",
        "--run-id",
        small_world[S.RUN_ID],
        "--protocol",
        "pa1",
        "--publications",
        "10",
        "--routing-run-id",
        "lossy",
    ]
    assert main(argv) == 1
    assert "not exactly once" in capsys.readouterr().err
    (run,) = rows_of(lakehouse, S.ROUTING_RUNS, "lossy")
    assert run[S.STATUS] == S.FAILED and "received it 0 times, not once" in run[S.COUNTER_EXAMPLE]
    assert rows_of(lakehouse, S.ROUTING_METRICS, "lossy")[0][S.MISSING_DELIVERIES] == 1


@pytest.mark.slow  # a takeover while routing (16 s)
def test_a_routing_run_taken_over_meanwhile_is_left_to_its_new_owner(spark, lakehouse, small_world, monkeypatch):
    """The same route started again while the first is simulating takes the routing run over (a
    new attempt token): the first one's completing write then fails, and it leaves the row to
    its successor instead of completing it or marking it failed."""
    real = route.summarise
    request = RouteRequest(small_world[S.RUN_ID], "scribe", 6, 3)
    successor = []

    def taken_over_meanwhile(simulation, network, placed):
        successor.append(route.claim_run(lakehouse, "taken", request, small_world[S.INSTANCE]))
        return real(simulation, network, placed)

    monkeypatch.setattr(route, "summarise", taken_over_meanwhile)
    with pytest.raises(RunTakenOver, match="routing run 'taken' was taken over by another process"):
        run_route(spark, lakehouse, request, "taken", progress=False)
    (run,) = rows_of(lakehouse, S.ROUTING_RUNS, "taken")
    assert (run[S.STATUS], run[S.ATTEMPT], run[S.MESSAGE]) == (S.RUNNING, successor[0].attempt, None)
    assert successor[0].resumed and run[S.FINISHED_AT] is None
    monkeypatch.undo()
    assert run_route(spark, lakehouse, request, "taken", progress=False)[S.STATUS] == S.COMPLETE  # taken over again


def test_routing_needs_a_small_world_run(spark, lakehouse, small_world, write_text):
    from pipelines.overlays import run_import

    run_import(spark, lakehouse, "tiny", "plain", write_text("plain.csv", "u,v\nn1,n2\n"))
    with pytest.raises(InputError, match="has no ring"):
        run_route(spark, lakehouse, RouteRequest("plain", "pie", 5))
    with pytest.raises(InputError, match="exists with other settings"):
        run_route(spark, lakehouse, RouteRequest(small_world[S.RUN_ID], "po", 7), "lossy")


@pytest.mark.slow  # every engine on one workload (every protocol on each: tests/test_routing.py)
def test_both_engines_store_the_same_routing_run(spark, lakehouse, small_world):
    """`--engine memory`, `compiled` and `supersteps` store the same metrics, deliveries and load,
    and the same stored request (the engine is not part of it)."""
    stored = {}
    for engine in route.ENGINES:
        routing_run_id = f"engine-{engine}"
        row = run_route(
            spark, lakehouse, RouteRequest(small_world[S.RUN_ID], "iscribe", 9, 2, engine=engine), routing_run_id
        )
        assert row[S.STATUS] == S.COMPLETE
        (metrics,) = rows_of(lakehouse, S.ROUTING_METRICS, routing_run_id)
        skip = {S.ROUTING_RUN_ID, S.COMPUTED_AT}
        stored[engine] = (
            row[S.PARAMS],
            row[S.SUPERSTEPS],
            row[S.MESSAGES],
            {k: v for k, v in metrics.asDict().items() if k not in skip},
            sorted(
                (r[S.PUB_ID], r[S.NODE_ID], r[S.HOPS], r[S.LATENCY_MS])
                for r in rows_of(lakehouse, S.ROUTING_DELIVERIES, routing_run_id)
            ),
            sorted(tuple(r)[1:] for r in rows_of(lakehouse, S.ROUTING_LOAD, routing_run_id)),
        )
    assert stored["memory"] == stored["compiled"] == stored["supersteps"]
    assert stored["compiled"][3][S.DELIVERIES] > 0


@pytest.mark.parametrize(
    "argv,message",
    [
        (["--protocol", "flood", "--publications", "3"], "invalid choice: 'flood'"),
        (["--protocol", "pie", "--publications", "3", "--routing-run-id", "bad id"], "is not allowed"),
        (["--protocol", "pie", "--publications", "3", "--engine", "warp"], "invalid choice: 'warp'"),
    ],
)
def test_bad_route_requests_fail_before_spark(argv, message, capsys, tmp_path):
    with contextlib.suppress(SystemExit):  # the parser's own errors exit 2 before main returns
        assert main(["--lakehouse", str(tmp_path / "none"), "route", "--run-id", "x", *argv]) == 2
    assert message in capsys.readouterr().err


def test_the_comparison_lists_tables_3_to_5():
    from pipelines.compare import PAPER, SYSTEMS, system_name

    names = [system_name(*system) for system in SYSTEMS]
    assert len(names) == len(set(names)) == 14
    for column in PAPER.values():
        assert set(column) == set(names) and column["Scribe(-)"] == (1.0, 1.0)


def test_a_comparison_on_fewer_overlays_keeps_their_systems_and_names_them():
    from pipelines.compare import CompareRequest, system_name

    whole = CompareRequest("fb", publications=40)
    assert whole.comparison_id == "fb.p40.s1.chord" and len(whole.systems) == 14
    part = CompareRequest("fb", publications=40, overlays=("-", "SL"))
    assert part.chosen_overlays == ("SL", "-") and part.comparison_id == "fb.p40.s1.chord.SL_none"
    assert [system_name(*s) for s in part.systems] == [
        "BeaConvey(SL, Pie)",
        "BeaConvey(-, Pie)",
        "iScribe(SL)",
        "iScribe(-)",
        "Scribe(SL)",
        "Scribe(-)",
        "BeaConvey(SL, Po)",
        "BeaConvey(SL, Pa1)",
    ]
    for overlays, message in [
        (("SL",), "must include '-'"),
        (("-", "X"), "distinct overlay types"),
        (("-", "-"), "distinct overlay types"),
    ]:
        with pytest.raises(InputError, match=message):
            CompareRequest("fb", overlays=overlays).check()


def test_compare_overlays_flag_reaches_the_request():
    from pipelines.cli import parse_arguments, prepare

    args = parse_arguments(["compare", "--instance", "fb", "--overlays", "S, -"])
    assert prepare(args, None).overlays == ("S", "-")
    with pytest.raises(InputError, match="must include"):
        prepare(parse_arguments(["compare", "--instance", "fb", "--overlays", "S"]), None)


@pytest.mark.slow  # 4 designs and 14 routing runs (about 6 min)
def test_compare_runs_every_system_against_scribe(spark, lakehouse, small_world):
    from pipelines.compare import CompareRequest, markdown, run_compare

    rows = run_compare(spark, lakehouse, CompareRequest("tiny", publications=8, paper="TW1K")).collect()
    assert len(rows) == 14
    by_system = {r[S.SYSTEM]: r for r in rows}
    assert by_system["Scribe(-)"][S.OVERHEAD_RATIO] == 1.0 and by_system["Scribe(-)"][S.PATH_RATIO] == 1.0
    assert by_system["BeaConvey(SL, Pie)"][S.PAPER_OVERHEAD_RATIO] == 0.573
    table = markdown(rows)
    assert table.count("\n") == 15 and "| BeaConvey(SL, Po) |" in table
