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
