"""Render a workflow as the Databricks job of the bundle (`resources/<name>.job.yml`).

Every step becomes a wheel task that calls the package's console script with the step's
arguments; `${parameter}` becomes `{{job.parameters.parameter}}`, and the lakehouse is a job
parameter too (the bundle variable `lakehouse`, set per target). The workflow file stays the one
definition: `python -m pipelines bundle --check` (and a test) fail when the rendered job and the
committed file differ.
"""

from __future__ import annotations

import yaml

from pipelines.jars import graphframes_coordinate
from pipelines.workflow.spec import PLACEHOLDER, Workflow

PACKAGE_NAME = "overlay_lab"  # the wheel's distribution name (pyproject `overlay-lab`, normalised)
ENTRY_POINT = "overlay-lab"  # the console script in [project.scripts]
MAVEN_REPO = "${var.maven_repo}"  # the repository the cluster fetches GraphFrames from
CLUSTER_KEY = "overlay_lab_cluster"
LAKEHOUSE = "lakehouse"
HEADER = (
    "# Generated from {source} by `python -m pipelines bundle`; do not edit by hand.\n"
    "# The bundle (databricks.yml) includes it; `python -m pipelines bundle --check` verifies it.\n"
)


def job_parameter(name: str) -> str:
    return "{{job.parameters." + name + "}}"


def task_parameters(argv: tuple[str, ...]) -> list[str]:
    """A step's arguments as wheel-task parameters: the lakehouse first, placeholders as job
    parameter references."""
    rendered = [PLACEHOLDER.sub(lambda m: job_parameter(m.group(1)), arg) for arg in argv]
    return ["--lakehouse", job_parameter(LAKEHOUSE), *rendered]


def job_resource(workflow: Workflow) -> dict:
    """The `resources.jobs` entry of one workflow. Parameter defaults are the workflow's, except
    where its `databricks.parameters` differ on the cluster (a run tag from the job's start date)."""
    defaults = {**workflow.parameters, **workflow.job_defaults}
    parameters = [{"name": LAKEHOUSE, "default": "${var.lakehouse}"}] + [
        {"name": name, "default": value} for name, value in sorted(defaults.items())
    ]
    tasks = []
    for step in workflow.steps:
        task: dict = {"task_key": step.name}
        if step.description:
            task["description"] = step.description
        if step.after:
            task["depends_on"] = [{"task_key": name} for name in step.after]
        task["job_cluster_key"] = CLUSTER_KEY
        task["python_wheel_task"] = {
            "package_name": PACKAGE_NAME,
            "entry_point": ENTRY_POINT,
            "parameters": task_parameters(step.argv),
        }
        # GraphFrames' JVM half, the version of the wheel's graphframes-py (they must match).
        graphframes = {"coordinates": graphframes_coordinate(), "repo": MAVEN_REPO}
        task["libraries"] = [{"whl": "../dist/*.whl"}, {"maven": graphframes}]
        tasks.append(task)
    job: dict = {"name": workflow.name, "description": workflow.description}
    if workflow.schedule is not None:
        job["schedule"] = {
            "quartz_cron_expression": workflow.schedule.cron,
            "timezone_id": workflow.schedule.timezone,
            "pause_status": "PAUSED" if workflow.schedule.paused else "UNPAUSED",
        }
    job["max_concurrent_runs"] = 1  # runs of one day write the same run ids
    job["parameters"] = parameters
    job["job_clusters"] = [
        {
            "job_cluster_key": CLUSTER_KEY,
            "new_cluster": {
                # Spark 4.1 (the stack's pin); classic single-user compute runs GraphFrames' JVM API.
                "spark_version": "${var.spark_version}",
                "node_type_id": "${var.node_type_id}",
                "num_workers": "${var.num_workers}",
                "data_security_mode": "SINGLE_USER",
                "spark_conf": {"spark.sql.shuffle.partitions": "auto"},
            },
        }
    ]
    job["tasks"] = tasks
    return {"resources": {"jobs": {workflow.name: job}}}


def render(workflow: Workflow, source: str) -> str:
    """The job resource file; `source` names the workflow file in its header."""
    body = yaml.safe_dump(job_resource(workflow), sort_keys=False, width=120)
    return HEADER.format(source=source) + body
