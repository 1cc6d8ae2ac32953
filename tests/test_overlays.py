"""import-overlay, evaluate and export, end to end through the lakehouse."""

import random

import pytest
from chispa import assert_df_equality
from pyspark.sql import functions as F

from overlay import schema as S
from overlay.errors import InputError
from overlay.instance.synthetic import SyntheticSpec, synthetic_instance
from pipelines import overlays
from pipelines.lakehouse import UnknownRunError
from tests.helpers import store_instance
from tests.oracles import tco_support_oracle, topic_diameters_oracle

SPEC = SyntheticSpec(dist="zipf", nodes=30, topics=20, min_subs=2, max_subs=5, seed=8)


@pytest.fixture(scope="module")
def lakehouse(module_lakehouse):
    return module_lakehouse


@pytest.fixture(scope="module")
def instance(spark, lakehouse):
    """A small Zipf instance named 'z' (node keys n0..n29), as (node_id, topic_id) pairs."""
    return store_instance(spark, lakehouse, "z", SPEC)


def overlay_file(write_text, pairs, name="overlay.csv"):
    return write_text(name, "u,v\n" + "".join(f"{a},{b}\n" for a, b in pairs))


@pytest.mark.slow  # about 13 s
def test_import_quarantines_and_counts(spark, lakehouse, instance, write_text):
    path = overlay_file(
        write_text, [("n1", "n2"), ("n2", "n1"), ("n3", "n3"), ("n4", "ghost"), ("n5", ""), ("n9", "n0")]
    )
    run = overlays.run_import(spark, lakehouse, "z", "imp", path)
    assert (run[S.STATUS], run[S.ROWS_READ], run[S.EDGES], run[S.REJECTED], run[S.DUPLICATES]) == (
        "complete",
        6,
        2,
        3,
        1,
    )
    edges = lakehouse.read(S.OVERLAY_EDGES).filter(F.col(S.RUN_ID) == "imp").select(S.U, S.V, S.ADDED_ORDER, S.ROUND)
    expected = spark.createDataFrame(
        [(1, 2, 0, 0), (0, 9, 1, 0)], f"{S.U} long, {S.V} long, {S.ADDED_ORDER} long, {S.ROUND} int"
    )
    assert_df_equality(edges, expected, ignore_row_order=True, ignore_nullable=True)
    rejected = lakehouse.read(S.REJECTED_OVERLAY_EDGES).filter(F.col(S.RUN_ID) == "imp")
    reasons = sorted((r[S.LINE], r[S.REASON]) for r in rejected.collect())
    assert reasons == [
        (3, "duplicate link (the same pair appears on an earlier row)"),
        (4, "self-loop on node 'n3'"),
        (5, "unknown node key 'ghost'"),
        (6, "missing v key"),
    ]
    with pytest.raises(InputError, match="run id 'imp' exists already"):
        overlays.run_import(spark, lakehouse, "z", "imp", path)


@pytest.mark.slow  # about 40 s
def test_evaluate_matches_the_oracle_and_export_round_trips(spark, lakehouse, instance, write_text, tmp_path):
    rng = random.Random(4)
    pairs = sorted({tuple(sorted(rng.sample(range(30), 2))) for _ in range(25)})
    overlays.run_import(spark, lakehouse, "z", "r", overlay_file(write_text, [(f"n{a}", f"n{b}") for a, b in pairs]))
    metrics = overlays.run_evaluate(spark, lakehouse, "r", backend="dataframe")
    empty, tcc, complete, support = tco_support_oracle(instance, pairs)
    assert (metrics[S.TCC_EMPTY], metrics[S.TCC], metrics[S.TCC_COMPLETE]) == (empty, tcc, complete)
    assert metrics[S.TCO_SUPPORT] == pytest.approx(support)
    assert metrics[S.EDGES] == len(pairs) and metrics[S.AVG_DEGREE] == pytest.approx(2 * len(pairs) / 30)
    diameters = topic_diameters_oracle(instance, pairs)
    assert metrics[S.DIAMETER_MAX] == max(diameters.values())
    assert metrics[S.DIAMETER_AVG] == pytest.approx(sum(diameters.values()) / len(diameters))
    assert metrics[S.DIAMETER_METHOD].startswith(f"exact (all-source BFS) for {len(diameters)} topics")
    stored = lakehouse.read(S.OVERLAY_METRICS).filter(F.col(S.RUN_ID) == "r").first()
    assert stored[S.TCO_SUPPORT] == pytest.approx(support)
    assert lakehouse.run_row("r")[S.TCO_SUPPORT] == pytest.approx(support)
    assert lakehouse.read(S.TOPIC_COMPONENTS).filter(F.col(S.RUN_ID) == "r").count() == len(instance)
    # Again (cheap diameters this time): the rows are replaced, not added.
    overlays.run_evaluate(spark, lakehouse, "r", backend="dataframe", diameter_exact_limit=1, diameter_samples=1)
    assert lakehouse.read(S.OVERLAY_METRICS).filter(F.col(S.RUN_ID) == "r").count() == 1
    assert lakehouse.read(S.TOPIC_COMPONENTS).filter(F.col(S.RUN_ID) == "r").count() == len(instance)

    for name in ("links.csv", "links.parquet"):
        out = tmp_path / name
        assert overlays.run_export(spark, lakehouse, "r", str(out)) == len(pairs)
        reader = spark.read.option("header", True).csv if name.endswith(".csv") else spark.read.parquet
        exported = reader(str(out)).select(S.U, S.V, F.col(S.ADDED_ORDER).cast("long").alias(S.ADDED_ORDER))
        expected = spark.createDataFrame(
            [(f"n{a}", f"n{b}", i) for i, (a, b) in enumerate(pairs)],
            f"{S.U} string, {S.V} string, {S.ADDED_ORDER} long",
        )
        assert_df_equality(exported, expected, ignore_row_order=True, ignore_nullable=True)


@pytest.mark.slow  # the same metrics are checked on the library in test_quality
def test_empty_overlay_scores_zero(spark, lakehouse, instance, write_text):
    overlays.run_import(spark, lakehouse, "z", "none", overlay_file(write_text, []))
    metrics = overlays.run_evaluate(spark, lakehouse, "none")
    assert metrics[S.EDGES] == 0 and metrics[S.TCO_SUPPORT] == 0.0 and metrics[S.TCC] == metrics[S.TCC_EMPTY]


def test_errors(spark, lakehouse, instance, write_text, tmp_path):
    with pytest.raises(UnknownRunError, match="unknown run 'nope'"):
        overlays.run_evaluate(spark, lakehouse, "nope")
    lakehouse.insert_run(
        {
            S.RUN_ID: "busy",
            S.INSTANCE: "z",
            S.INGEST_ID: lakehouse.instance_row("z")[S.INGEST_ID],
            S.ALGORITHM: "gm",
            S.PARAMS: "{}",
            S.STATUS: S.RUNNING,
            S.STARTED_AT: overlays._now(),
        }
    )
    with pytest.raises(InputError, match="run 'busy' is running, not complete"):
        overlays.run_evaluate(spark, lakehouse, "busy")
    overlays.run_import(spark, lakehouse, "z", "ok", overlay_file(write_text, [("n1", "n2")]))
    with pytest.raises(InputError, match="must end in .csv or .parquet"):
        overlays.run_export(spark, lakehouse, "ok", str(tmp_path / "links.txt"))
    with pytest.raises(InputError, match="cannot write .*: folder .* does not exist"):
        overlays.run_export(spark, lakehouse, "ok", str(tmp_path / "missing" / "links.csv"))
    with pytest.raises(InputError, match="run id 'a b' is not allowed"):
        overlays.run_import(spark, lakehouse, "z", "a b", "x.csv")


@pytest.mark.slow  # evaluate and export after a re-ingest, about 19 s; test_runs checks the reads by default
def test_a_run_of_a_replaced_instance_reads_the_version_it_was_built_on(
    spark, lakehouse, instance, write_text, tmp_path
):
    """History: re-ingesting keeps the old version, so yesterday's overlay is still evaluated and
    exported on yesterday's subscriptions and node keys."""
    lakehouse.replace_instance("z2", synthetic_instance(spark, SPEC))
    overlays.run_import(spark, lakehouse, "z2", "old", overlay_file(write_text, [("n1", "n2")]))
    smaller = SyntheticSpec(dist="zipf", nodes=12, topics=5, min_subs=1, max_subs=2, seed=9)
    lakehouse.replace_instance("z2", synthetic_instance(spark, smaller))
    metrics = overlays.run_evaluate(spark, lakehouse, "old")
    assert (metrics[S.NODES], metrics[S.EDGES]) == (30, 1)  # the old version's 30 nodes, not 12
    out = tmp_path / "old.csv"
    overlays.run_export(spark, lakehouse, "old", str(out))
    (link,) = out.read_text().splitlines()[1:]
    assert sorted(link.split(",")[:2]) == ["n1", "n2"]


def test_an_import_under_an_existing_run_id_leaves_its_links_untouched(spark, lakehouse, instance, write_text):
    """A second import under the same id is refused when it claims the id, before it writes a
    link (it used to write its links first and find the id taken only at the end)."""
    overlays.run_import(
        spark, lakehouse, "z", "twice", overlay_file(write_text, [("n1", "n2"), ("n3", "n4")], "first.csv")
    )
    first = lakehouse.read(S.OVERLAY_EDGES).filter(F.col(S.RUN_ID) == "twice").collect()
    second = overlay_file(write_text, [("n5", "n6")], "second.csv")
    with pytest.raises(InputError, match="run id 'twice' exists already: choose another --run-id, or delete it"):
        overlays.run_import(spark, lakehouse, "z", "twice", second)
    assert sorted(lakehouse.read(S.OVERLAY_EDGES).filter(F.col(S.RUN_ID) == "twice").collect()) == sorted(first)
    run = lakehouse.run_row("twice")
    assert (run[S.STATUS], run[S.EDGES]) == (S.COMPLETE, 2) and "first.csv" in run[S.PARAMS]


@pytest.mark.slow  # about 11 s
def test_a_failed_import_is_redone_under_its_run_id(spark, lakehouse, instance, write_text, tmp_path):
    """The run id is claimed before the file is read: a failed import keeps its row (failed, with
    the error), and the same command with a file that exists takes that row over."""
    with pytest.raises(InputError, match="file not found"):
        overlays.run_import(spark, lakehouse, "z", "retry", str(tmp_path / "missing.csv"))
    failed = lakehouse.run_row("retry")
    assert failed[S.STATUS] == S.FAILED and "file not found" in failed[S.MESSAGE]
    path = overlay_file(write_text, [("n1", "n2")], "found.csv")
    run = overlays.run_import(spark, lakehouse, "z", "retry", path)
    assert (run[S.STATUS], run[S.EDGES], run[S.MESSAGE]) == (S.COMPLETE, 1, None)
    assert path in run[S.PARAMS]


@pytest.mark.slow  # about 25 s
def test_ktco_validity_is_stored_per_k_and_kept_across_k(spark, lakehouse, instance, write_text):
    """`evaluate --k`: a HararyPT overlay for k = 2 is a 2TCO and, for k = 3, exactly the topics
    the oracle finds fine; evaluating k = 3 keeps k = 2's rows, re-evaluating k = 2 replaces them."""
    from tests import ktco_oracle as K

    links = sorted(K.harary_pt(instance, 2))
    overlays.run_import(spark, lakehouse, "z", "h2", overlay_file(write_text, [(f"n{a}", f"n{b}") for a, b in links]))
    two = overlays.run_ktco(spark, lakehouse, "h2", 2)
    topics = K.subscribers(instance)
    assert (two.topics, two.k_connected_topics, two.is_ktco) == (len(topics), len(topics), True)
    three = overlays.run_ktco(spark, lakehouse, "h2", 3)
    fine = sum(K.ktco_ok(nodes, links, 3) for nodes in topics.values())
    assert (three.k_connected_topics, three.is_ktco) == (fine, fine == len(topics)) and fine < len(topics)
    overlays.run_ktco(spark, lakehouse, "h2", 2)
    stored = lakehouse.read(S.OVERLAY_KTCO).filter(F.col(S.RUN_ID) == "h2").select(S.K, S.K_CONNECTED_TOPICS, S.IS_KTCO)
    expected = spark.createDataFrame(
        [(2, len(topics), True), (3, fine, False)], f"{S.K} int, {S.K_CONNECTED_TOPICS} long, {S.IS_KTCO} boolean"
    )
    assert_df_equality(stored, expected, ignore_row_order=True, ignore_nullable=True)
    per_topic = lakehouse.read(S.TOPIC_CONNECTIVITY).filter(F.col(S.RUN_ID) == "h2")
    assert per_topic.filter(F.col(S.K) == 2).count() == per_topic.filter(F.col(S.K) == 3).count() == len(topics)


@pytest.mark.slow  # about 25 s
def test_resilience_stores_each_trial_and_replaces_only_the_shares_rerun(spark, lakehouse, instance, write_text):
    """`resilience` on an imported overlay: every stored (share, trial) row is the oracle's
    scenario; a rerun at overlapping shares replaces those and keeps the others."""
    from pipelines.failures import ResilienceRequest, run_resilience
    from tests import ktco_oracle as K

    links = sorted(K.harary_pt(instance, 2))
    overlays.run_import(spark, lakehouse, "z", "fail", overlay_file(write_text, [(f"n{a}", f"n{b}") for a, b in links]))
    nodes = lakehouse.instance_row("z")[S.NODES]
    run_resilience(spark, lakehouse, ResilienceRequest("fail", fail_nodes=(0.1, 0.5), trials=2, seed=3))
    first = lakehouse.read(S.RESILIENCE).filter(F.col(S.SHARE) == 0.1).select(S.COMPUTED_AT).first()[0]
    summary = run_resilience(
        spark,
        lakehouse,
        ResilienceRequest("fail", fail_nodes=(0.5, 0.9), fail_links=(0.2,), trials=2, seed=3),
    )
    assert [(r["model"], r["share"], r["trials"]) for r in summary] == [
        ("random-nodes", 0.5, 2),
        ("random-nodes", 0.9, 2),
        ("random-links", 0.2, 2),
    ]
    stored = lakehouse.read(S.RESILIENCE).filter(F.col(S.RUN_ID) == "fail").collect()
    assert sorted((r[S.MODEL], r[S.SHARE], r[S.TRIAL]) for r in stored) == sorted(
        [("random-nodes", s, t) for s in (0.1, 0.5, 0.9) for t in (0, 1)] + [("random-links", 0.2, t) for t in (0, 1)]
    )
    for r in stored:
        expected = K.resilience(instance, links, nodes, r[S.MODEL], r[S.SHARE], r[S.TRIAL], 3)
        assert {name: r[name] for name in expected} == expected
        assert (r[S.COMPUTED_AT] == first) == (r[S.SHARE] == 0.1)  # only 0.1 kept from the first run
    # A workflow skips the step once its rows are stored, and not for another seed or share.
    from argparse import Namespace

    from pipelines.workflow.complete import outputs_complete

    def complete(**request):
        return outputs_complete(
            lakehouse, Namespace(command="resilience"), ResilienceRequest("fail", trials=2, **request)
        )

    assert "has its failure trials" in complete(fail_nodes=(0.1, 0.9), fail_links=(0.2,), seed=3)
    assert complete(fail_nodes=(0.1, 0.2), seed=3) is None and complete(fail_nodes=(0.1,), seed=4) is None
