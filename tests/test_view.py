"""`view`: an overlay run or a topic's subgraph as a self-contained page, opened in a headless
Chromium (Debian's; `./lab browser` installs it): it renders, with one marker per node shown."""

from __future__ import annotations

import os
import re
import shutil
import subprocess

import pytest
from pyspark.sql import functions as F

from overlay import schema as S
from overlay.errors import InputError
from overlay.instance.synthetic import SyntheticSpec
from pipelines.design import DesignRequest, run_design
from pipelines.view import ViewRequest, run_view
from tests.helpers import on_ci, store_instance

BROWSER = shutil.which("chromium") or shutil.which("chromium-browser")


def rendered(page) -> str:
    """The page's DOM after Chromium ran its scripts (plotly draws each marker as a path.point)."""
    if BROWSER is None:
        message = "no Chromium to open the page in: `./lab browser` installs Debian's"
        if on_ci():
            pytest.fail(message)
        pytest.skip(message)
    done = subprocess.run(
        [BROWSER, "--headless", "--no-sandbox", "--disable-gpu", "--virtual-time-budget=10000", "--dump-dom",
         f"file://{page}"],
        capture_output=True, text=True, timeout=120, env={**os.environ, "HOME": str(page.parent)},
    )  # fmt: skip
    assert done.returncode == 0, done.stderr[-2000:]
    return done.stdout


@pytest.fixture(scope="module")
def viewed(spark, module_lakehouse):
    store_instance(spark, module_lakehouse, "v", SyntheticSpec("zipf", 60, 8, 1, 3, seed=3))
    run = run_design(spark, module_lakehouse, DesignRequest("v", "gpm", max_degree=3), diameters=False, progress=False)
    return module_lakehouse, run


def test_a_run_renders_with_one_marker_per_node(spark, viewed, tmp_path):
    lakehouse, run = viewed
    page = tmp_path / "run.html"
    shown = run_view(spark, lakehouse, ViewRequest(run[S.RUN_ID], str(page)))
    linked = {r[0] for r in lakehouse.read(S.OVERLAY_EDGES).filter(F.col(S.RUN_ID) == run[S.RUN_ID]).select(S.U).union(
        lakehouse.read(S.OVERLAY_EDGES).filter(F.col(S.RUN_ID) == run[S.RUN_ID]).select(S.V)).collect()}  # fmt: skip
    assert set(shown.nodes) == linked and len(shown.links) == run[S.EDGES]
    html = page.read_text()
    assert "Plotly.newPlot" in html and not re.search(r"<script[^>]*src=", html)  # plotly inlined: opens offline
    dom = rendered(page)
    assert len(re.findall(r'class="point"', dom)) == len(linked)


@pytest.mark.slow  # a second page in Chromium (11 s)
def test_a_topic_sample_is_bounded_and_says_so(spark, viewed, tmp_path):
    lakehouse, run = viewed
    sizes = lakehouse.instance_rows(S.SUBSCRIPTIONS_TABLE, "v").groupBy(S.TOPIC_ID).count().orderBy(F.desc("count"))
    topic, members = sizes.first()
    key = lakehouse.instance_rows(S.TOPIC_KEYS, "v").filter(F.col(S.ID) == topic).first()[S.KEY]
    page = tmp_path / "topic.html"
    shown = run_view(spark, lakehouse, ViewRequest(run[S.RUN_ID], str(page), topic=key, max_nodes=members - 2))
    assert len(shown.nodes) == members - 2 and shown.total == members
    assert f"showing {members - 2:,} of {members:,} nodes" in shown.title and shown.title in page.read_text()
    subs = {r[S.NODE_ID] for r in lakehouse.instance_rows(S.SUBSCRIPTIONS_TABLE, "v").filter(F.col(S.TOPIC_ID) == topic).collect()}  # fmt: skip
    assert set(shown.nodes) <= subs and all(u in subs and v in subs for u, v in shown.links)
    assert len(re.findall(r'class="point"', rendered(page))) == members - 2


def test_bad_requests_are_refused(spark, viewed, tmp_path):
    lakehouse, run = viewed
    with pytest.raises(InputError, match="has no topic 'nope'"):
        run_view(spark, lakehouse, ViewRequest(run[S.RUN_ID], str(tmp_path / "x.html"), topic="nope"))
    with pytest.raises(InputError, match=r"a \.html file"):
        ViewRequest(run[S.RUN_ID], str(tmp_path / "x.png")).check()
    assert not (tmp_path / "x.html").exists()
