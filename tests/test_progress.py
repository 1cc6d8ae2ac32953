"""Progress: the reporter (a bar on a terminal, log lines otherwise, nothing when quiet) and the
libraries' `on_step` callbacks, which must not cost a Spark job."""

from __future__ import annotations

import io
import logging

import pytest
from pyspark.sql import functions as F

from overlay import schema as S
from overlay.frames import local_frame
from overlay.progress import StepInfo
from pipelines.progress import Progress, describe
from routing.network import AT, FDIST, FLAT, LATENCY, SUBS, Network
from routing.outcome import summarise
from routing.simulate import simulate

LOGGER = "tests.progress"


class FakeTerminal(io.StringIO):
    def isatty(self) -> bool:
        return True


def stderr(monkeypatch, terminal: bool) -> io.StringIO:
    """Replace sys.stderr inside the test's body (pytest swaps it back in between phases)."""
    stream = FakeTerminal() if terminal else io.StringIO()  # not a terminal: a log file, a CI job
    monkeypatch.setattr("sys.stderr", stream)
    return stream


def lines(caplog, level=logging.INFO) -> list[str]:
    return [r.getMessage() for r in caplog.records if r.name == LOGGER and r.levelno == level]


def test_off_a_terminal_each_step_is_one_log_line(caplog, monkeypatch):
    pipe = stderr(monkeypatch, terminal=False)
    caplog.set_level(logging.INFO, logger=LOGGER)
    with Progress("run-1", total=3, unit="edge", logger=logging.getLogger(LOGGER)) as bar:
        bar.step("round 1 phase 0: +2 edges", advance=2, round=1)
        bar.on_step(StepInfo("superstep", 2, figures={"in flight": 1204, "sent": 3411}, seconds=0.5))
    assert lines(caplog) == [
        "run-1 round 1 phase 0: +2 edges (elapsed 0s)",
        "run-1 superstep 2: in flight 1,204, sent 3,411, 0.50s (elapsed 0s)",
    ]
    # No bar drawn: at most the log lines themselves (when a handler writes to the current stderr).
    assert "\r" not in pipe.getvalue() and "edge/s" not in pipe.getvalue() and "it/s" not in pipe.getvalue()


def test_on_a_terminal_a_bar_moves_instead(caplog, monkeypatch):
    terminal = stderr(monkeypatch, terminal=True)
    caplog.set_level(logging.DEBUG, logger=LOGGER)
    handlers = list(logging.getLogger().handlers)
    bar = Progress("run-2", total=5, unit="edge", logger=logging.getLogger(LOGGER))
    bar.step("round 1: +3 edges", advance=3, round=1)
    drawn = terminal.getvalue()
    bar.close()
    assert "run-2" in drawn and "3/5" in drawn and "round=1" in drawn
    assert lines(caplog) == []  # no INFO line next to the bar ...
    assert lines(caplog, logging.DEBUG) == ["run-2 round 1: +3 edges (elapsed 0s)"]  # ... -v shows it
    assert logging.getLogger().handlers == handlers  # the log redirection is undone


@pytest.mark.parametrize("how", ["disabled", "-q"])
def test_quiet_shows_nothing(caplog, monkeypatch, how):
    terminal = stderr(monkeypatch, terminal=True)
    caplog.set_level(logging.WARNING if how == "-q" else logging.DEBUG, logger=LOGGER)
    with Progress("run-3", total=2, enabled=how != "disabled", logger=logging.getLogger(LOGGER)) as bar:
        bar.step("one")
        bar.on_step(StepInfo("superstep", 1))
    assert terminal.getvalue() == "" and [r for r in caplog.records if r.name == LOGGER] == []


def test_a_step_is_described_with_its_figures():
    assert (
        describe(StepInfo("phase", 2, total=3, figures={"ring": "gswico", "rounds": 12}))
        == "phase 2/3: ring gswico, rounds 12"
    )
    assert describe(StepInfo("tree hop", 4)) == "tree hop 4"


def _jobs(spark, group: str, action):
    spark.sparkContext.setJobGroup(group, group)
    try:
        result = action()
    finally:
        spark.sparkContext.setLocalProperty("spark.jobGroup.id", None)
    return result, len(spark.sparkContext.statusTracker().getJobIdsForGroup(group))


def chord_network(spark, n: int, subscriptions: list[tuple[int, int]]) -> Network:
    """Routing tables of a Chord ring (node i at position i, fingers i + 2^p), built on the driver:
    no Spark job before the simulation."""
    phases = max(1, (n - 1).bit_length())
    topics: dict[int, list[int]] = {}
    for node, topic in subscriptions:
        topics.setdefault(topic, []).append(node)
    return Network(
        n=n,
        positions=local_frame(spark, [(i, i) for i in range(n)], f"{S.NODE_ID} long, {AT} long"),
        fingers=local_frame(
            spark,
            [(i, sorted({1 << p for p in range(phases)}), None) for i in range(n)],
            f"{AT} long, {FDIST} array<long>, {FLAT} array<double>",
        ),  # no latencies
        topics=local_frame(
            spark, [(t, sorted(s)) for t, s in topics.items()], f"{S.TOPIC_ID} long, {SUBS} array<long>"
        ),
        subscribed=local_frame(spark, [(t, a) for a, t in subscriptions], f"{S.TOPIC_ID} long, {AT} long"),
    )


def test_routing_reports_increasing_steps_at_no_extra_spark_job(spark):
    """Scribe on a 12-node Chord ring: its tree hops, then its supersteps, each numbered from 1,
    with the messages the loop counts anyway; the same Spark jobs as without a callback."""
    subscriptions = [(node, topic) for node in range(12) for topic in (node % 3, node % 4 + 3)]
    network = chord_network(spark, 12, subscriptions)
    placed = local_frame(
        spark, [(0, 0, 3), (1, 4, 5), (2, 6, 11)], f"{S.PUB_ID} long, {S.TOPIC_ID} long, {S.PUBLISHER} long"
    )

    steps: list[StepInfo] = []
    heard, with_callback = _jobs(
        spark, "progress-on", lambda: simulate(network, placed, "scribe", on_step=steps.append)
    )
    silent, without = _jobs(spark, "progress-off", lambda: simulate(network, placed, "scribe"))
    assert with_callback == without > 0  # reporting adds no Spark job

    hops = [s.step for s in steps if s.stage == "tree hop"]
    supersteps = [s for s in steps if s.stage == "superstep"]
    assert hops == list(range(1, len(hops) + 1)) and hops
    assert [s.step for s in supersteps] == list(range(1, heard.supersteps + 1)) and supersteps
    assert steps[: len(hops)] == [s for s in steps if s.stage == "tree hop"]  # the trees come first
    assert supersteps[-1].figures["sent"] == heard.messages == silent.messages
    assert sum(s.figures["in flight"] for s in supersteps) == heard.messages
    # A network without coordinates has no latencies: null, never 0.
    outcome = summarise(heard, network, placed)
    assert heard.arrivals.filter(F.col(LATENCY).isNotNull()).isEmpty() and outcome.metrics[S.DELIVERIES] > 0
    assert (
        outcome.metrics[S.LATENCY_MEDIAN] is None
        and outcome.deliveries.filter(F.col(S.DIRECT_MS).isNotNull()).isEmpty()
    )


class _ComparisonLakehouse:
    """What `run_compare` reads and writes, without Delta: the routing metrics of the 14 runs."""

    def __init__(self, spark):
        self.spark = spark

    def read(self, table):
        if table is S.ROUTING_METRICS:
            rows = [(f"r{i}", 10 + i, 2.0, 3) for i in range(14)]
            schema = f"{S.ROUTING_RUN_ID} string, {S.ROUTING_OVERHEAD} long, {S.AVG_PATH_LENGTH} double, {S.MAX_PATH_LENGTH} long"
            return local_frame(self.spark, rows, schema)
        return local_frame(self.spark, [], f"{S.COMPARISON_ID} string")

    def write_run_rows(self, *args, **kwargs) -> None:
        """The comparison's rows are not what this test checks: nothing is stored."""


def test_compare_reports_every_overlay_and_system(spark, monkeypatch, caplog):
    from pyspark.sql import Row

    from pipelines import compare

    designs = iter(range(4))
    routes = iter(range(14))
    monkeypatch.setattr(
        compare, "run_design", lambda *a, **k: Row(**{S.RUN_ID: f"d{next(designs)}", S.EDGES: 30, S.TCO_SUPPORT: 0.5})
    )
    monkeypatch.setattr(
        compare,
        "run_route",
        lambda *a, **k: (
            lambda i: Row(
                **{
                    S.ROUTING_RUN_ID: f"r{i}",
                    S.STATUS: S.COMPLETE,
                    S.SUPERSTEPS: 4,
                    S.MESSAGES: 20 + i,
                    S.COUNTER_EXAMPLE: None,
                }
            )
        )(next(routes)),
    )
    caplog.set_level(logging.INFO, logger="pipelines.compare")
    compare.run_compare(spark, _ComparisonLakehouse(spark), compare.CompareRequest("tiny", publications=8))
    said = [r.getMessage() for r in caplog.records if r.name == "pipelines.compare"]
    assert len(said) == 18
    assert said[0].startswith("compare tiny.p8.s1.chord overlay 1/4 SL (d0): 30 links, TcoSuppR 0.5000")
    assert said[4].startswith("compare tiny.p8.s1.chord system 1/14 BeaConvey(SL, Pie): 4 supersteps, 20 messages")
    assert said[-1].startswith("compare tiny.p8.s1.chord system 14/14 BeaConvey(SL, Pa1): 4 supersteps, 33 messages")


def test_compare_replace_redoes_its_four_overlays(spark, monkeypatch):
    """`compare --replace` asks every overlay design to replace its stored run (and so the routing
    runs on it); without it the stored ones are reused."""
    from pyspark.sql import Row

    from pipelines import compare
    from pipelines.cli import build_parser, prepare, settings_from

    asked = []
    monkeypatch.setattr(
        compare,
        "run_design",
        lambda *a, **k: asked.append(k["replace"])
        or Row(**{S.RUN_ID: f"d{len(asked)}", S.EDGES: 30, S.TCO_SUPPORT: 0.5}),
    )
    routes = iter(range(28))
    monkeypatch.setattr(
        compare,
        "run_route",
        lambda *a, **k: Row(
            **{
                S.ROUTING_RUN_ID: f"r{next(routes) % 14}",
                S.STATUS: S.COMPLETE,
                S.SUPERSTEPS: 4,
                S.MESSAGES: 20,
                S.COUNTER_EXAMPLE: None,
            }
        ),
    )
    for argv, expected in (
        (["compare", "--instance", "tiny"], False),
        (["compare", "--instance", "tiny", "--replace"], True),
    ):
        args = build_parser().parse_args(argv)
        request = prepare(args, settings_from(args))
        asked.clear()
        compare.run_compare(spark, _ComparisonLakehouse(spark), request, progress=False)
        assert asked == [expected] * 4
