"""The Databricks bundle: it parses, it is scheduled in UTC with dev and prod targets, its job is
the rendering of its workflow file, and every task calls a real CLI command of the wheel."""

import json
import re
import tomllib
from datetime import date
from pathlib import Path

import pytest
import yaml

from pipelines.cli import StepParser, build_parser, main
from pipelines.workflow.bundle import job_resource
from pipelines.workflow.spec import load_workflow
from tests.helpers import WORKFLOWS

ROOT = Path(__file__).resolve().parent.parent
DYNAMIC = {"job.start_time.iso_date": date(2026, 11, 26).isoformat()}


def bundle() -> dict:
    """databricks.yml with the resources it includes merged in."""
    root = yaml.safe_load((ROOT / "databricks.yml").read_text())
    for pattern in root.get("include", []):
        for path in sorted(ROOT.glob(pattern)):
            for kind, items in yaml.safe_load(path.read_text())["resources"].items():
                root.setdefault("resources", {}).setdefault(kind, {}).update(items)
    return root


def defaults(config: dict) -> dict:
    """The bundle variables' defaults (a variable without one is set per deploy)."""
    return {name: spec["default"] for name, spec in config["variables"].items() if "default" in spec}


def resolve(text: str, job_parameters: dict, variables: dict) -> str:
    """What a task parameter becomes at run time: job parameters, bundle variables, dynamic values."""
    for _ in range(3):  # a job parameter's default may itself hold variables and dynamic values
        text = re.sub(r"\{\{job\.parameters\.(\w+)\}\}", lambda m: job_parameters[m.group(1)], text)
        text = re.sub(r"\$\{var\.(\w+)\}", lambda m: str(variables[m.group(1)]), text)
        text = re.sub(r"\{\{([\w.]+)\}\}", lambda m: DYNAMIC[m.group(1)], text)
    assert "{{" not in text and "${" not in text, text
    return text


def test_bundle_parses_with_daily_utc_schedule_and_targets():
    config = bundle()
    assert config["bundle"]["name"] == "overlay_lab"
    assert set(config["targets"]) == {"dev", "prod"}
    assert config["targets"]["dev"]["mode"] == "development" and config["targets"]["dev"]["default"] is True
    assert config["targets"]["prod"]["mode"] == "production"
    job = config["resources"]["jobs"]["overlay_refresh"]
    schedule = job["schedule"]
    assert schedule["timezone_id"] == "UTC"
    _seconds, _minutes, hours, day_of_month, month, day_of_week = schedule["quartz_cron_expression"].split()[:6]
    assert (day_of_month, month, day_of_week) == ("*", "*", "?") and hours.isdigit()  # once a day
    assert "pip wheel" in config["artifacts"]["overlay_lab"]["build"]


def test_job_runs_ingest_design_evaluate_route_report_in_order():
    job = bundle()["resources"]["jobs"]["overlay_refresh"]
    tasks = {t["task_key"]: t for t in job["tasks"]}
    commands = {key: t["python_wheel_task"]["parameters"][2] for key, t in tasks.items()}
    position = {key: i for i, key in enumerate(tasks)}
    for key, task in tasks.items():
        for needed in task.get("depends_on", []):
            assert needed["task_key"] in tasks and position[needed["task_key"]] < position[key]
    order = ["ingest", "design", "evaluate", "route", "register", "report"]
    for key, command in commands.items():
        for dependency in tasks[key].get("depends_on", []):  # a budgeted design follows its reference design
            assert order.index(commands[dependency["task_key"]]) <= order.index(command), (key, dependency)
    assert sorted(set(commands.values()), key=order.index) == order
    assert sum(c == "design" for c in commands.values()) >= 3  # several algorithms


def test_every_task_resolves_to_a_real_cli_command():
    config = bundle()
    scripts = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["scripts"]
    package = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["name"].replace("-", "_")
    variables = defaults(config)
    job = config["resources"]["jobs"]["overlay_refresh"]
    job_parameters = {p["name"]: p["default"] for p in job["parameters"]}
    cluster_keys = {c["job_cluster_key"] for c in job["job_clusters"]}
    commands = set(build_parser()._subparsers._group_actions[0].choices)
    for task in job["tasks"]:
        wheel = task["python_wheel_task"]
        assert wheel["package_name"] == package
        assert scripts[wheel["entry_point"]] == "pipelines.cli:main"
        assert task["job_cluster_key"] in cluster_keys
        argv = [resolve(p, job_parameters, variables) for p in wheel["parameters"]]
        args = build_parser(StepParser).parse_args(argv)  # raises on an unknown command or flag
        assert args.command in commands and args.command not in ("workflow", "main", "bundle")
        assert args.lakehouse == variables["lakehouse"]


def flag(parameters: list[str], name: str) -> str | None:
    return parameters[parameters.index(name) + 1] if name in parameters else None


@pytest.mark.parametrize("path", WORKFLOWS, ids=[p.stem for p in WORKFLOWS])
def test_every_budgeted_design_runs_after_a_minmaxoda_design_of_its_instance(path):
    """Tasks with no dependency path between them run in parallel on Databricks: two budgeted
    designs started together would both compute (and fight over) the MinMaxODA reference."""
    job = next(iter(job_resource(load_workflow(path))["resources"]["jobs"].values()))
    parameters = {t["task_key"]: t["python_wheel_task"]["parameters"] for t in job["tasks"]}
    needs = {t["task_key"]: [d["task_key"] for d in t.get("depends_on", [])] for t in job["tasks"]}

    def upstream(key: str) -> set[str]:
        found, todo = set(), list(needs[key])
        while todo:
            task = todo.pop()
            if task not in found:
                found.add(task)
                todo.extend(needs[task])
        return found

    budgeted = [key for key, argv in parameters.items() if "--budget-ratio" in argv]
    for key in budgeted:
        instance = flag(parameters[key], "--instance")
        references = [
            task
            for task in upstream(key)
            if flag(parameters[task], "--algorithm") == "minmaxoda" and flag(parameters[task], "--instance") == instance
        ]
        assert references, (
            f"{path.name}: task {key} (--budget-ratio on {instance}) runs after no minmaxoda design of {instance}"
        )


def test_bundle_job_is_the_rendering_of_its_workflow(capsys):
    assert main(["bundle", "--check"]) == 0, capsys.readouterr().err
    assert "matches conf/workflows/overlay_refresh.yaml" in capsys.readouterr().out


def test_bundle_check_fails_on_a_hand_edit(tmp_path, capsys):
    edited = tmp_path / "job.yml"
    edited.write_text((ROOT / "resources" / "overlay_refresh.job.yml").read_text().replace("pie", "po"))
    assert main(["bundle", "--check", "--out", str(edited)]) == 1
    assert "is not the rendering of conf/workflows/overlay_refresh.yaml" in capsys.readouterr().err


def test_cluster_library_is_the_graphframes_of_the_wheel_from_the_bundle_repository():
    """The JVM half the cluster installs has the installed graphframes-py's version (they must
    match), from the repository of the bundle variable `maven_repo` (a mirror where Central
    serves no io.graphframes)."""
    from importlib.metadata import version

    config = bundle()
    for job in config["resources"]["jobs"].values():
        for task in job["tasks"]:
            (maven,) = [library["maven"] for library in task["libraries"] if "maven" in library]
            assert maven["coordinates"] == f"io.graphframes:graphframes-spark4_2.13:{version('graphframes-py')}"
            assert resolve(maven["repo"], {}, defaults(config)).startswith("https://")


def test_dashboard_reads_the_schema_the_job_registers_on_the_warehouse_variable():
    """The dashboard's queries name tables without a schema: its dataset catalog and schema are the
    ones the job's `register` task registers the lakehouse's tables in."""
    config = bundle()
    variables = defaults(config)
    assert "warehouse_id" in config["variables"] and "warehouse_id" not in variables  # set per deploy
    dashboard = config["resources"]["dashboards"]["overlay_lab"]
    assert dashboard["warehouse_id"] == "${var.warehouse_id}"
    definition = json.loads((ROOT / "resources" / dashboard["file_path"]).read_text())
    assert definition["datasets"] and definition["pages"]
    job = config["resources"]["jobs"]["overlay_refresh"]
    job_parameters = {p["name"]: p["default"] for p in job["parameters"]}
    (register,) = [t for t in job["tasks"] if t["python_wheel_task"]["parameters"][2] == "register"]
    argv = [resolve(p, job_parameters, variables) for p in register["python_wheel_task"]["parameters"]]
    args = build_parser(StepParser).parse_args(argv)
    assert (args.catalog, args.schema, args.create_missing) == (
        resolve(dashboard["dataset_catalog"], {}, variables),
        resolve(dashboard["dataset_schema"], {}, variables),
        True,
    )
    dev = {**variables, **config["targets"]["dev"]["variables"]}
    assert resolve(dashboard["dataset_schema"], {}, dev) == "overlay_lab_dev"
    assert "databricks_cli_version" in config["bundle"]  # dataset_catalog and dataset_schema need 0.281.0
