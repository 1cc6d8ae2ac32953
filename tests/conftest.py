"""One Spark session for the whole run, tuned for tiny data; a fresh lakehouse per test."""

from __future__ import annotations

import gzip

import pytest

from pipelines.config import LabSettings, apply_overrides
from pipelines.lakehouse import Lakehouse
from pipelines.spark import build_local_session
from tests.helpers import SMALL_DATA_CONF, SMALL_DATA_PARTITIONS, TINY_WORKFLOW, on_ci, run_cli


@pytest.fixture(scope="session")
def settings(tmp_path_factory) -> LabSettings:
    root = tmp_path_factory.mktemp("lab")
    return apply_overrides(
        LabSettings(),
        {
            "lakehouse": str(root / "lakehouse"),
            "spark.master": "local[2]",
            "spark.shuffle_partitions": SMALL_DATA_PARTITIONS,
            "spark.driver_memory": "2g",
            "spark.log_level": "ERROR",
            "spark.conf": dict(SMALL_DATA_CONF),
        },
    )


@pytest.fixture(scope="session")
def spark(settings):
    session = build_local_session(settings)
    yield session
    session.stop()


@pytest.fixture(scope="session")
def graphframes(spark) -> bool:
    """Tests of the GraphFrames backend ask for this: they skip where setup found no repository
    serving the jar (a developer without OVERLAY_LAB_MAVEN_REPOS), and fail on CI, which has one."""
    from overlay.graph import GRAPHFRAMES_CLASS, jvm_class_available

    if not jvm_class_available(spark, GRAPHFRAMES_CLASS):
        message = (
            "the GraphFrames jar is not loaded: set OVERLAY_LAB_MAVEN_REPOS to a repository serving "
            "it and run ./lab setup (README, GraphFrames)"
        )
        if on_ci():
            pytest.fail(message)
        pytest.skip(message)
    return True


@pytest.fixture
def lakehouse(spark, tmp_path) -> Lakehouse:
    return Lakehouse(spark, tmp_path / "lakehouse")


@pytest.fixture
def write_text(tmp_path):
    """Write a text file (gzipped when the name ends in .gz) and return its path as a string."""

    def write(name: str, text: str, newline: str = "\n") -> str:
        path = tmp_path / name
        data = text.replace("\n", newline).encode()
        path.write_bytes(gzip.compress(data) if name.endswith(".gz") else data)
        return str(path)

    return write


@pytest.fixture(scope="module")
def module_lakehouse(spark, tmp_path_factory, request) -> Lakehouse:
    """One lakehouse for a whole test module (its tests use distinct run ids): an ingest costs ~10 s."""
    return Lakehouse(spark, tmp_path_factory.mktemp(request.module.__name__.rsplit(".", 1)[-1]) / "lakehouse")


@pytest.fixture(scope="session")
def refreshed(spark, tmp_path_factory) -> dict:
    """A small lakehouse made by running `tests/workflows/tiny_refresh.yaml` (every kind of step),
    then the same command again at once (everything complete). Shared by the modules that need
    stored designs and routing runs: building one costs about two minutes."""
    root = tmp_path_factory.mktemp("refreshed")
    lakehouse = root / "lakehouse"
    argv = ["--lakehouse", str(lakehouse), "workflow", str(TINY_WORKFLOW), "--param", f"report_dir={root / 'report'}"]
    first = run_cli(*argv)
    assert first[0] == 0, first[2][-3000:]
    return {
        "root": root,
        "argv": argv,
        "first": first,
        "rerun": run_cli(*argv),
        "lakehouse": Lakehouse(spark, lakehouse),
        "report": root / "report",
    }


# The CI pass's longest groups, started first so that neither worker is left with one at the end
# (seconds in the `.ci/run` of 2026-12-06 at 3646910): the `refreshed` group ~430 (its fixture
# ~230), the workflows at once ~380, the wheel ~300, the compare kill ~300, each fault check
# ~220-245 (spread over both workers).
LONGEST_FIRST = (
    "tests/test_cluster_path.py::test_the_small_workflow_on_a_standalone_cluster",
    "tests/test_concurrent_workflows.py::",
    "tests/test_wheel.py::",
    "tests/test_driver_kills.py::test_a_killed_job_run_again_ends_with_the_undisturbed_tables[compare]",
    "tests/test_faults.py::",
)


def _longest_first(item) -> int:
    return next((i for i, prefix in enumerate(LONGEST_FIRST) if item.nodeid.startswith(prefix)), len(LONGEST_FIRST))


def pytest_collection_modifyitems(config, items) -> None:
    """Under `--dist loadgroup` (`.ci/run`'s CI pass): the longest groups start first
    (`LONGEST_FIRST`), one pytest-xdist worker runs all the checks that share the `refreshed`
    lakehouse (built once, about 3 min), and each other module's checks stay together (their module
    fixtures built once). pytest-xdist reads a test's group from the suffix after `@` of the node id
    its worker reports (a module with `XDIST_SPREAD = True`: one group per test, for long
    independent checks whose module fixture is cheap next to them); its own `xdist_group` marks set
    that suffix in `_nodeid`, which pytest 9.2 no longer reads (the id is a structured `_id`), so
    it is set here."""
    if not getattr(config.option, "loadgroup", False):
        return
    items.sort(key=_longest_first)
    for item in items:
        group = "refreshed" if "refreshed" in getattr(item, "fixturenames", ()) else item.nodeid.split("::")[0]
        if group != "refreshed" and getattr(getattr(item, "module", None), "XDIST_SPREAD", False):
            group = item.nodeid  # long independent checks: spread over the workers, fixtures built per worker
        grouped = f"{item.nodeid}@{group}"
        if hasattr(item, "_id"):
            from _pytest.nodeid import NodeId

            item._id = NodeId.parse(grouped)
        else:
            item._nodeid = grouped
