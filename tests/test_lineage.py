"""Lineage on a cluster: reliable checkpoints (files in the checkpoint folder) where the master is
not in-process, local ones where it is; the iterative engines give the same results either way."""

from __future__ import annotations

from pathlib import Path

import pytest
from chispa import assert_df_equality

from overlay import schema as S
from overlay.design.baselines import random_m
from overlay.design.greedy import GreedyDesign, GreedyParams
from overlay.graph import connected_components
from overlay.instance.synthetic import SyntheticSpec, synthetic_instance
from overlay.lineage import LOCAL, RELIABLE, Lineage
from pipelines.config import apply_overrides, load_settings
from pipelines.lakehouse import Lakehouse
from pipelines.spark import in_process, lineage_for, loopback_master
from tests.helpers import frame
from tests.instances import random_instance
from tests.oracles import greedy_oracle


@pytest.mark.parametrize(
    "master,expected",
    [("local", True), ("local[*]", True), ("local[2]", True), ("local-cluster[2,1,1024]", False)]
    + [("spark://127.0.0.1:7077", False), ("yarn", False)],
)
def test_only_in_process_masters_keep_local_checkpoints(master, expected):
    assert in_process(master) is expected


@pytest.mark.parametrize(
    "master,expected",
    [("local[*]", True), ("spark://127.0.0.1:7077", True), ("spark://localhost:7077", True)]
    + [("spark://10.0.0.5:7077", False), ("yarn", False)],
)
def test_the_driver_binds_to_loopback_for_this_machines_masters_only(master, expected):
    assert loopback_master(master) is expected


def test_the_setting_chooses_the_lineage(spark, tmp_path):
    settings = apply_overrides(load_settings(), {"lakehouse": str(tmp_path / "lh")})
    assert lineage_for(spark, settings) == LOCAL  # the tests' session is local[...]
    reliable = apply_overrides(settings, {"spark.checkpoints": "reliable"})
    assert lineage_for(spark, reliable) == RELIABLE
    with pytest.raises(ValueError, match="checkpoint_interval"):
        Lineage(checkpoint_interval=0)


def test_a_reliable_cut_writes_the_checkpoint_folder_and_keeps_the_rows(spark):
    folder = Path(spark.sparkContext.getCheckpointDir().removeprefix("file:"))
    before = {p for p in folder.rglob("*") if p.is_file()}
    rows = spark.range(50).selectExpr("id", "id * id AS square")
    cut = RELIABLE.cut(rows)
    assert {p for p in folder.rglob("*") if p.is_file()} - before  # blocks written as files
    assert_df_equality(cut, rows, ignore_row_order=True)


def test_an_ingest_on_a_cluster_materialises_with_a_reliable_checkpoint(spark, tmp_path):
    """The lakehouse's lineage decides how an ingest materialises its subscriptions: reliable on
    a cluster (files in the checkpoint folder, which a lost executor does not take with it)."""
    folder = Path(spark.sparkContext.getCheckpointDir().removeprefix("file:"))
    before = {p for p in folder.rglob("*") if p.is_file()}
    lakehouse = Lakehouse(spark, tmp_path / "lh", RELIABLE)
    spec = SyntheticSpec(dist="zipf", nodes=20, topics=8, min_subs=1, max_subs=3, seed=2)
    row = lakehouse.replace_instance("c", synthetic_instance(spark, spec))
    assert {p for p in folder.rglob("*") if p.is_file()} - before
    assert row[S.SUBSCRIPTIONS] == lakehouse.instance_rows(S.SUBSCRIPTIONS_TABLE, "c").count() > 0


@pytest.mark.ci  # 12 s: the batched rounds
def test_the_greedy_rounds_and_components_agree_with_reliable_checkpoints(spark):
    subscriptions = random_instance("zipf", 30, 10, 1, 4, 3)
    params = GreedyParams("gpm", max_degree=3, regime="rounds", batch_size=2, per_node=1, lineage=RELIABLE)
    links = [edge for r in GreedyDesign(frame(spark, subscriptions), params).rounds() for edge in r.edges]
    assert links == greedy_oracle(subscriptions, "gpm", max_degree=3)
    vertices = spark.range(6)
    edges = spark.createDataFrame([(0, 1), (1, 2), (4, 5)], "src long, dst long")
    labels = {r["id"]: r["component"] for r in connected_components(vertices, edges, "dataframe", RELIABLE).collect()}
    assert labels == {0: 0, 1: 0, 2: 0, 3: 3, 4: 4, 5: 4}
    nodes = spark.range(12).withColumnRenamed("id", S.NODE_ID)  # RandomM's matching rounds, both ways
    local, reliable = (random_m(nodes, 3, 4, lineage=way).orderBy(S.ADDED_ORDER).collect() for way in (LOCAL, RELIABLE))
    assert local == reliable and len(local) > 0


@pytest.mark.ci  # about 60 s: ingests of every source kind, a small-world design in rounds, evaluate, import
def test_no_command_takes_a_local_checkpoint_on_a_cluster(spark, graphframes, tmp_path, monkeypatch):
    """With reliable checkpoints (a cluster's), no step of these commands keeps blocks that a lost
    executor would take with it: every DataFrame cut goes through the lakehouse's lineage."""
    from pyspark.sql import DataFrame

    from tests.helpers import run_cli

    def refused(self, eager=True):
        raise AssertionError("a local checkpoint on a cluster")

    settings = tmp_path / "lab.yaml"
    settings.write_text(
        Path("conf/lab.yaml")
        .read_text()
        .replace("checkpoints: auto", "checkpoints: reliable", 1)
        .replace("regime: auto", "regime: rounds", 1),  # the small-world greedy in Spark rounds
        encoding="utf-8",
    )
    edges = tmp_path / "g.txt"
    edges.write_text("".join(f"{a} {b}\n" for a in range(12) for b in (a + 1, a + 3) if b < 12), encoding="utf-8")
    subscriptions = tmp_path / "s.csv"
    subscriptions.write_text("node,topic\n" + "".join(f"n{i},t{i % 3}\nn{i},t{i % 5}\n" for i in range(9)))
    links = tmp_path / "links.csv"
    links.write_text("u,v\nn0,n1\nn1,n2\nn0,n1\n", encoding="utf-8")
    monkeypatch.setattr(DataFrame, "localCheckpoint", refused)
    base = ["--config", str(settings), "--lakehouse", str(tmp_path / "lh"), "-q"]
    for argv in (
        ["ingest", "--instance", "z", "--source", "synthetic", "--dist", "zipf", "--nodes", "24", "--topics", "8"]
        + ["--min-subs", "1", "--max-subs", "3", "--seed", "3"],
        ["ingest", "--instance", "g", "--source", "social", "--path", str(edges), "--sample-bfs", "8", "--seed", "2"],
        ["ingest", "--instance", "f", "--source", "social", "--path", str(edges), "--directed"]
        + ["--feed-seeds", "3", "--feed-publishers", "4", "--seed", "2"],
        ["ingest", "--instance", "s", "--source", "subscriptions", "--path", str(subscriptions)],
        ["design", "--instance", "z", "--algorithm", "swico", "--short", "gswico", "--long", "gswico"]
        + ["--skip-diameters"],
        ["evaluate", "--run-id", "z.swico.gswico-gswico.s1", "--backend", "graphframes"],
        ["import-overlay", "--instance", "s", "--run-id", "s.imported", "--path", str(links)],
        ["topic-structure", "--run-id", "z.swico.gswico-gswico.s1", "--topic-sizes", "3"],
    ):
        code, _, err = run_cli(*base, *argv)
        assert code == 0, (argv, err[-3000:])
