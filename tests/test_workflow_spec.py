"""Workflow files: parsing, matrix expansion, ordering, and the runner's skip / stop behaviour
(no Spark: the runner is driven with fake step actions)."""

from pathlib import Path

import pytest

from overlay.errors import InputError
from pipelines.cli import StepArgumentError, parse_step, plan_workflow
from pipelines.config import ConfigError, LabSettings
from pipelines.workflow.runner import (
    FAILED,
    NOT_RUN,
    RAN,
    SKIPPED,
    StepActions,
    WorkflowFailed,
    run_workflow,
)
from pipelines.workflow.spec import bundle_grid, load_workflow, parse_workflow
from tests.helpers import WORKFLOWS

SHARED_DATASETS = Path("../shared/datasets")  # as the workflows name it, from the clone's root


def workflow(steps, parameters=None, **extra):
    return parse_workflow(
        {"name": "w", "description": "d", "parameters": parameters or {}, "steps": steps, **extra}, "w.yaml"
    )


def test_matrix_expands_names_arguments_and_dependencies():
    w = workflow(
        [
            {"name": "ingest", "run": ["ingest", "--instance", "${instance}"]},
            {
                "name": "design_${algorithm}_${ratio}",
                "matrix": {"algorithm": ["gpm", "gpa"], "ratio": [0.1, 0.5]},
                "after": ["ingest"],
                "run": ["design", "--algorithm", "${algorithm}", "--budget-ratio", "${ratio}"],
            },
            {
                "name": "evaluate_${algorithm}",
                "matrix": {"algorithm": ["gpm"]},
                "after": ["design_${algorithm}_0_1"],
                "run": ["evaluate", "--run-id", "r.${algorithm}"],
            },
            {
                "name": "report",
                "after": ["design_${algorithm}_${ratio}", "evaluate_gpm"],
                "run": ["report", "--out", "o"],
            },
        ],
        parameters={"instance": "fb-1k"},
    )
    names = [s.name for s in w.steps]
    assert names == [
        "ingest",
        "design_gpm_0_1",
        "design_gpm_0_5",
        "design_gpa_0_1",
        "design_gpa_0_5",
        "evaluate_gpm",
        "report",
    ]
    assert w.step("design_gpa_0_5").argv == ("design", "--algorithm", "gpa", "--budget-ratio", "0.5")
    assert w.step("evaluate_gpm").after == ("design_gpm_0_1",)
    assert w.step("report").after == (
        "design_gpm_0_1",
        "design_gpm_0_5",
        "design_gpa_0_1",
        "design_gpa_0_5",
        "evaluate_gpm",
    )
    assert w.step("ingest").resolved(w.parameters) == ("ingest", "--instance", "fb-1k")
    assert w.with_parameters({"instance": "tw-1k"}).step("ingest").resolved({"instance": "tw-1k"})[-1] == "tw-1k"


@pytest.mark.parametrize(
    "steps, fragment",
    [
        ([{"name": "a", "run": ["design", "${nope}"]}], "uses ${nope}, which is not a parameter"),
        ([{"name": "a", "after": ["b"], "run": ["report"]}, {"name": "b", "after": ["a"], "run": ["report"]}], "cycle"),
        ([{"name": "a", "after": ["zzz"], "run": ["report"]}], "runs after 'zzz', which is not a step"),
        ([{"name": "a", "run": ["report"]}, {"name": "a", "run": ["report"]}], "two steps are named 'a'"),
        ([{"name": "a", "run": ["workflow", "x.yaml"]}], "a step runs one of"),
        ([{"name": "d", "matrix": {"x": [1, 2]}, "run": ["report"]}], "its name does not use ${x}"),
        ([{"name": "a", "run": ["report"], "retries": 3}], "'steps.0.retries': Extra inputs are not permitted"),
    ],
    ids=["unknown-parameter", "cycle", "unknown-after", "duplicate", "nested-workflow", "matrix-name", "unknown-key"],
)
def test_bad_workflows_are_clear_errors(steps, fragment):
    with pytest.raises(ConfigError, match="w.yaml") as error:
        workflow(steps)
    assert fragment in str(error.value)


def test_grids_set_how_far_a_sweep_goes():
    grids = {"laptop": {"nodes": [1000, 2000], "seed": [1]}, "cluster": {"nodes": [1000, 5000, 10000], "seed": [1, 2]}}
    steps = [
        {
            "name": "ingest_${nodes}_${seed}",
            "matrix": {"nodes": "grid", "seed": "grid"},
            "run": ["ingest", "--nodes", "${nodes}", "--seed", "${seed}"],
        },
        {
            "name": "design_${algorithm}_${nodes}",
            "matrix": {"algorithm": ["gpm"], "nodes": "grid"},
            "after": ["ingest_${nodes}_1"],
            "run": ["design", "--nodes", "${nodes}"],
        },
    ]
    laptop = workflow(steps, grids=grids)
    assert laptop.grid == "laptop" and laptop.grids == ("laptop", "cluster")
    assert [s.name for s in laptop.steps] == ["ingest_1000_1", "ingest_2000_1", "design_gpm_1000", "design_gpm_2000"]
    cluster = workflow(steps, grids=grids, databricks={"grid": "cluster"})
    assert cluster.grid == "laptop"  # the bundle's grid is chosen by whoever renders it
    cluster = parse_workflow({"name": "w", "description": "d", "grids": grids, "steps": steps}, "w.yaml", "cluster")
    assert [s.name for s in cluster.steps][:6] == [
        "ingest_1000_1",
        "ingest_1000_2",
        "ingest_5000_1",
        "ingest_5000_2",
        "ingest_10000_1",
        "ingest_10000_2",
    ]
    assert cluster.step("design_gpm_10000").after == ("ingest_10000_1",)
    assert cluster.with_parameters({}).grid == "cluster"


@pytest.mark.parametrize(
    "extra, grid, fragment",
    [
        ({}, "cluster", "--grid cluster: this workflow defines no grids"),
        ({"grids": {"laptop": {"nodes": [1]}}}, "cluster", "no grid 'cluster'; this workflow has laptop"),
        ({"grids": {"a": {"nodes": [1]}, "b": {"seed": [1]}}}, None, "every grid must give the same matrix keys"),
        ({"grids": {"a": {"seed": [1]}}}, None, "takes 'nodes' from the grid, which does not give (it gives seed)"),
        ({"grids": {"a": {"nodes": []}}}, None, "grid 'a' gives 'nodes' no values"),
        ({"grids": {"a": {"nodes": [1]}}, "databricks": {"grid": "b"}}, None, "databricks.grid names b"),
        (
            {"grids": {"a": {"nodes": [1], "seed": [1]}, "b": {"nodes": [1], "seed": [2]}}},
            None,
            "the grids give 'seed', which no step's matrix takes from the grid",
        ),
        ({"grids": {"a": {"nodes": [1]}, "b": {"nodes": [1, 1]}}}, None, "w.yaml (grid b): two steps are named 'i_1'"),
    ],
    ids=[
        "no-grids",
        "unknown-grid",
        "different-keys",
        "missing-key",
        "empty",
        "bundle-grid",
        "unused-key",
        "other-grid",
    ],
)
def test_bad_grids_are_clear_errors(extra, grid, fragment):
    steps = [{"name": "i_${nodes}", "matrix": {"nodes": "grid"}, "run": ["report", "--out", "${nodes}"]}]
    with pytest.raises(ConfigError, match="w.yaml") as error:
        parse_workflow({"name": "w", "description": "d", "steps": steps, **extra}, "w.yaml", grid)
    assert fragment in str(error.value)


def test_unknown_parameter_override_and_missing_file(tmp_path):
    with pytest.raises(ConfigError, match="unknown parameter"):
        workflow([{"name": "a", "run": ["report", "--out", "x"]}], {"out": "x"}).with_parameters({"oot": "y"})
    with pytest.raises(ConfigError, match="does not exist"):
        load_workflow(tmp_path / "none.yaml")


def test_steps_are_checked_as_cli_commands_before_anything_runs():
    settings = LabSettings()
    bad_flag = workflow([{"name": "a", "run": ["design", "--instance", "x", "--algorithm", "gpm", "--max-degre", "3"]}])
    with pytest.raises(StepArgumentError, match="step 'a'.*unrecognized arguments: --max-degre"):
        plan_workflow(bad_flag, settings)
    bad_request = workflow([{"name": "b", "run": ["design", "--instance", "x", "--algorithm", "gpm"]}])
    with pytest.raises(InputError, match="step .b.: gpm needs a budget"):
        plan_workflow(bad_request, settings)
    own_lakehouse = workflow([{"name": "c", "run": ["report", "--out", "o", "--lakehouse", "elsewhere"]}])
    with pytest.raises(StepArgumentError, match="step 'c' sets --lakehouse"):
        parse_step(own_lakehouse.steps[0], own_lakehouse)


@pytest.mark.parametrize("path", WORKFLOWS, ids=[p.stem for p in WORKFLOWS])
def test_shipped_workflows_plan(path):
    """Every shipped workflow plans. Those over the real graphs read `../shared/datasets` (beside
    the clone, as on the lab's machines); a clone without it must stop at that input, naming it."""
    try:
        plan = plan_workflow(load_workflow(path), LabSettings())
    except InputError as error:
        assert not SHARED_DATASETS.is_dir(), error
        assert "shared/datasets/" in str(error) and "no such file or folder" in str(error), error
        return
    assert plan.steps and all(p.args.command for p in plan.steps.values())


def test_runner_skips_complete_steps_and_stops_at_a_failure():
    w = workflow(
        [
            {"name": "one", "run": ["report", "--out", "a"]},
            {"name": "two", "after": ["one"], "run": ["report", "--out", "b"]},
            {"name": "three", "after": ["two"], "run": ["report", "--out", "c"]},
            {"name": "four", "after": ["three"], "run": ["report", "--out", "d"]},
        ]
    )
    ran, said = [], []

    def run(step):
        ran.append(step.name)
        if step.name == "three":
            raise RuntimeError("disk full")
        return 0

    actions = StepActions(complete=lambda s: "done before" if s.name == "one" else None, run=run)
    with pytest.raises(WorkflowFailed) as failure:
        run_workflow(w, actions, say=said.append)
    assert ran == ["two", "three"]
    message = str(failure.value)
    assert "step 'three' failed (RuntimeError: disk full)" in message and "Not run: four" in message
    assert [(o.step, o.status) for o in failure.value.outcomes] == [
        ("one", SKIPPED),
        ("two", RAN),
        ("three", FAILED),
        ("four", NOT_RUN),
    ]
    assert said[1] == "[1/4] one: skipped, done before" and said[2] == "[2/4] two: report --out b"
    assert any(line.startswith("[3/4] three: FAILED") for line in said)
    # A non-zero exit code is a failure too; --force runs complete steps again.
    ran.clear()
    with pytest.raises(WorkflowFailed, match="step 'one' failed \\(exit code 1\\)"):
        run_workflow(
            w,
            StepActions(complete=lambda s: "done", run=lambda s: ran.append(s.name) or 1),
            force=True,
            say=said.append,
        )
    assert ran == ["one"]


class JvmFailure(RuntimeError):
    """Stands in for py4j's error: its own text names only the call, its Java exception the cause."""

    class java_exception:  # the attribute py4j's error carries
        @staticmethod
        def toString() -> str:  # the Java method's name
            return "java.lang.StackOverflowError: deep plan\n\tat org.apache.spark.Example"


def test_a_step_failed_in_the_jvm_is_named_by_its_java_exception():
    w = workflow([{"name": "one", "run": ["report", "--out", "a"]}])

    def run(step):
        raise JvmFailure("An error occurred while calling o97.save.")

    with pytest.raises(WorkflowFailed, match=r"step 'one' failed \(java.lang.StackOverflowError: deep plan\)"):
        run_workflow(w, StepActions(complete=lambda s: None, run=run), say=lambda line: None)


class TakenOver(RuntimeError):
    """Stands in for `RunTakenOver`: the runner knows it only through `handed_over`."""


def test_a_step_taken_over_by_another_process_is_awaited_not_failed():
    """The same workflow twice at once: the process whose run was taken over waits for the
    other's outputs (polling `complete`), records the step as done elsewhere and goes on; when
    they never come, the step fails after the wait, naming why."""
    w = workflow(
        [
            {"name": "one", "run": ["report", "--out", "a"]},
            {"name": "two", "after": ["one"], "run": ["report", "--out", "b"]},
        ]
    )
    polls, ran, said = [], [], []

    def complete(step):
        if step.name != "one" or not ran:
            return None  # before it runs here, and then twice while the other process works
        polls.append(step.name)
        return "done" if len(polls) > 2 else None

    def run(step):
        ran.append(step.name)
        if step.name == "one":
            raise TakenOver("taken over")
        return 0

    handed = lambda error: isinstance(error, TakenOver)  # noqa: E731
    outcomes = run_workflow(w, StepActions(complete, run, handed, wait=5, poll=0.01), say=said.append)
    assert [(o.step, o.status) for o in outcomes] == [("one", SKIPPED), ("two", RAN)]
    assert outcomes[0].detail == "completed by another process that took it over" and len(polls) == 3
    assert ran == ["one", "two"]
    # Never completed: a failure after the wait, not a hang; an error not handed over fails at once.
    with pytest.raises(WorkflowFailed, match="did not complete it in 0 s"):
        run_workflow(w, StepActions(lambda s: None, run, handed, wait=0.05, poll=0.01), say=said.append)
    with pytest.raises(WorkflowFailed, match="TakenOver: taken over"):
        run_workflow(w, StepActions(lambda s: None, run), say=said.append)


def test_a_matrix_of_mappings_sets_placeholders_together():
    w = workflow(
        [
            {
                "name": "ingest_${low}_${seed}",
                "matrix": {"subs": [{"low": 10, "high": 90}, {"low": 50, "high": 130}], "seed": [1]},
                "run": ["ingest", "--min-subs", "${low}", "--max-subs", "${high}"],
            }
        ]
    )
    assert [(s.name, s.argv[2], s.argv[4]) for s in w.steps] == [
        ("ingest_10_1", "10", "90"),
        ("ingest_50_1", "50", "130"),
    ]
    with pytest.raises(ConfigError, match=r"its name does not use \$\{high\} or \$\{low\}"):
        workflow([{"name": "i", "matrix": {"subs": [{"low": 1, "high": 2}]}, "run": ["report"]}])
    for matrix, parameters, fragment in (
        ({"subs": [{"low": 1, "high": 2}, {"low": 3}]}, {}, "mappings that do not all set the same placeholders"),
        ({"subs": [{}]}, {}, "mappings that do not all set the same placeholders"),
        ({"subs": [{"low": 1}, 5]}, {}, "Input should be a valid dictionary"),
        ({"subs": [{"low": 1, "seed": 2}], "seed": [1]}, {}, "matrix 'seed' sets ${seed}, as matrix 'subs' does"),
        ({"subs": [{"low": 1}]}, {"low": 3}, "matrix 'subs' sets ${low}, as a parameter does"),
    ):
        with pytest.raises(ConfigError, match="w.yaml") as error:
            workflow([{"name": "i_${low}", "matrix": matrix, "run": ["report"]}], parameters)
        assert fragment in str(error.value)


def test_shipped_sweeps_run_a_laptop_grid_here_and_a_cluster_grid_in_the_bundle():
    path = next(p for p in WORKFLOWS if p.stem == "icdcs16_fig6")
    assert bundle_grid(path) == "cluster"
    laptop, cluster = load_workflow(path), load_workflow(path, bundle_grid(path))
    designs = [s for s in cluster.steps if s.command == "design"]
    assert (laptop.grid, len([s for s in laptop.steps if s.command == "design"])) == ("laptop", 4 * 3 * 3 * 3)
    assert len(designs) == 4 * 3 * 6 * 5 and "10000" in designs[-1].argv[2]


def test_a_shipped_graph_is_the_same_source_from_another_checkout(tmp_path):
    """A rerun from another checkout (or an installed wheel) skips the ingests of the shipped
    graphs: their absolute path differs, the graph does not. Any other file is its path."""
    from pipelines.workflow.complete import _same_source

    def spec(path):
        return {"path": path, "directed": False, "sample_bfs": 1000, "seed": 1, "feed_seeds": None}

    here, there = (
        "/work/a/pipelines/datasets/facebook_combined.txt.gz",
        "/opt/b/pipelines/datasets/facebook_combined.txt.gz",
    )
    assert _same_source(spec(here)) == _same_source(spec(there))
    assert _same_source(spec(here)) != _same_source({**spec(there), "seed": 2})
    assert _same_source(spec("/data/facebook_combined.txt.gz")) != _same_source(spec(there))
    assert _same_source(spec("/x/pipelines/datasets/other.gz")) != _same_source(spec("/y/pipelines/datasets/other.gz"))
