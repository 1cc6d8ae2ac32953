"""Workflows as CLI commands: every step parsed and checked before anything runs, then run in
one session; `report`, `workflow`, `main` and `bundle`."""

from __future__ import annotations

import argparse
import shlex
import sys
from dataclasses import dataclass
from pathlib import Path

from overlay.errors import InputError
from pipelines import report, resources
from pipelines.cli.command import Command, add_command
from pipelines.cli.flags import SETTINGS_FLAGS, StepArgumentError, StepParser, key_value, ratio
from pipelines.console import format_table
from pipelines.lakehouse import Lakehouse
from pipelines.ledger import RunTakenOver
from pipelines.workflow import bundle
from pipelines.workflow.complete import outputs_complete
from pipelines.workflow.runner import StepActions, WorkflowFailed, run_workflow
from pipelines.workflow.spec import Step, Workflow, bundle_grid, load_workflow

DEFAULT_WORKFLOW = resources.WORKFLOWS_DIR / "overlay_refresh.yaml"
BUNDLED_WORKFLOWS = ("overlay_refresh", "lakehouse_maintenance")  # the bundle's jobs, by workflow name


@dataclass(frozen=True)
class PlannedStep:
    args: argparse.Namespace
    request: object


@dataclass(frozen=True)
class WorkflowPlan:
    workflow: Workflow
    steps: dict[str, PlannedStep]


def parse_step(step: Step, workflow: Workflow) -> argparse.Namespace:
    """A step's arguments parsed as a CLI command; settings flags belong to the workflow."""
    from pipelines.cli.parser import parse_arguments  # the parser holds these commands too

    argv = list(step.resolved(workflow.parameters))
    flags = [a for a in argv if a.split("=", 1)[0] in SETTINGS_FLAGS]
    if flags:
        raise StepArgumentError(
            f"step '{step.name}' sets {flags[0]}: steps share the workflow's lakehouse and Spark; "
            "give settings flags to the workflow command instead"
        )
    try:
        return parse_arguments(argv, StepParser)
    except StepArgumentError as error:
        raise StepArgumentError(f"{workflow.source}: step '{step.name}' ({shlex.join(argv)}): {error}") from None


def plan_workflow(workflow: Workflow, settings) -> WorkflowPlan:
    """Parse and check every step before anything runs: a typo fails in a second, not an hour in."""
    planned = {}
    for step in workflow.steps:
        args = parse_step(step, workflow)
        try:
            planned[step.name] = PlannedStep(args, args.handler.prepare(args, settings))
        except InputError as error:
            raise InputError(f"{workflow.source}: step '{step.name}': {error}") from None
    return WorkflowPlan(workflow, planned)


def execute_workflow(plan: WorkflowPlan, spark, lakehouse: Lakehouse, force: bool = False) -> int:
    """Run a planned workflow in this process (one Spark session); print what each step did and,
    when it wrote a report, the results and where the report is."""

    def run(step: Step) -> int:
        planned = plan.steps[step.name]
        return planned.args.handler.execute(planned.args, planned.request, spark, lakehouse) or 0

    def complete(step: Step) -> str | None:
        planned = plan.steps[step.name]
        return outputs_complete(lakehouse, planned.args, planned.request)

    try:
        actions = StepActions(complete=complete, run=run, handed_over=_handed_over)
        outcomes = run_workflow(plan.workflow, actions, force=force)
        code = 0
    except WorkflowFailed as failure:
        outcomes, code = failure.outcomes, 1
        print(f"error: {failure}", file=sys.stderr)
    rows = [{"step": o.step, "status": o.status, "seconds": round(o.seconds, 1), "detail": o.detail} for o in outcomes]
    print(f"\nWorkflow {plan.workflow.name}:")
    print(format_table(rows, ["step", "status", "seconds", "detail"]))
    if code == 0:
        print_summary(plan)
    return code


def _handed_over(error: BaseException) -> bool:
    """A step's run taken over by another process, which will complete it (not a delete)."""
    return isinstance(error, RunTakenOver) and not error.deleted


def print_summary(plan: WorkflowPlan) -> None:
    """The results of a workflow that ends in a report: designs and routing runs, and where the
    report is."""
    reports = [p.args.out for p in plan.steps.values() if p.args.command == "report"]
    if not reports:
        return
    out = Path(reports[-1])
    data = report.read_back(out)
    print("\nOverlay designs:")
    print(format_table(data["designs"], report.markdown.CONSOLE_DESIGN_COLUMNS))
    if data["routing"]:
        print("\nRouting (ratios against Scribe(-) on the same workload):")
        print(format_table(data["routing"], report.markdown.ROUTING_COLUMNS))
    print(f"\nReport: {(out / report.SUMMARY).resolve()} (figures next to it)")


def _prepare_run(args, settings) -> WorkflowPlan:
    path = resources.find_workflow(args.file) if args.command == "workflow" else DEFAULT_WORKFLOW
    grid = args.grid if args.command == "workflow" else None
    return plan_workflow(load_workflow(path, grid).with_parameters(dict(args.param)), settings)


def _run(args, plan, spark, lakehouse) -> int:
    return execute_workflow(plan, spark, lakehouse, force=args.force)


def _bundle(args, _request) -> int:
    """Write (or --check) the Databricks job resources rendered from workflow files: the one named,
    or every job of the bundle (`BUNDLED_WORKFLOWS`)."""
    if args.file:
        paths = [resources.find_workflow(args.file).resolve()]
    elif args.out:  # one file: the main workflow's job
        paths = [DEFAULT_WORKFLOW.resolve()]
    else:
        paths = [(resources.WORKFLOWS_DIR / f"{name}.yaml").resolve() for name in BUNDLED_WORKFLOWS]
    return max(_bundle_one(path, args.out, args.check) for path in paths)


def _bundle_one(path: Path, out: str | None, check: bool) -> int:
    workflow = load_workflow(path, bundle_grid(path))
    target = Path(out) if out else resources.bundle_root() / "resources" / f"{workflow.name}.job.yml"
    source = resources.source_name(path)
    text = bundle.render(workflow, source)
    if check:
        if not target.is_file() or target.read_text() != text:
            print(
                f"error: {target} is not the rendering of {source}; run `python -m pipelines bundle`", file=sys.stderr
            )
            return 1
        print(f"{target} matches {source}")
        return 0
    target.parent.mkdir(parents=True, exist_ok=True)
    target.write_text(text)
    print(f"wrote {target} from {source} ({len(workflow.steps)} tasks)")
    return 0


def _report(args, _request, spark, lakehouse) -> None:
    data = report.run_report(spark, lakehouse, args.out, args.degree_ratio)
    print(f"Report: {Path(args.out) / report.SUMMARY} ({len(data.files)} figures)")


def _workflow_file_help() -> str:
    return f"the workflow YAML, or a shipped one's name ({', '.join(resources.shipped_workflows())})"


def add_commands(commands: argparse._SubParsersAction, common: argparse.ArgumentParser) -> None:
    reporter = add_command(
        commands,
        "report",
        "write PNG figures and a markdown summary of the lakehouse's current runs",
        common,
        Command(_report),
    )
    reporter.add_argument("--out", required=True, help="folder for report.md, the figures and report.json")
    reporter.add_argument(
        "--degree-ratio",
        type=ratio,
        default=0.2,
        help="degree distributions show, per algorithm, the run with the budget ratio nearest this (default 0.2)",
    )
    for name, summary in (
        ("workflow", "run a workflow file (conf/workflows/*.yaml) here: steps in order, complete ones skipped"),
        ("main", f"the main job: the workflow {resources.source_name(DEFAULT_WORKFLOW)}, then its summary"),
    ):
        runner = add_command(commands, name, summary, common, Command(_run, prepare=_prepare_run))
        if name == "workflow":
            runner.add_argument("file", metavar="FILE", help=_workflow_file_help())
        runner.add_argument(
            "--param",
            type=key_value,
            action="append",
            default=[],
            metavar="NAME=VALUE",
            help="override a workflow parameter (repeatable)",
        )
        runner.add_argument("--force", action="store_true", help="run every step, complete or not")
        if name == "workflow":
            runner.add_argument(
                "--grid",
                help="the set of sweep values to run, of those the file's `grids` names (default: its first)",
            )
    bundler = add_command(
        commands,
        "bundle",
        "render the Databricks bundle's job from a workflow file (or --check it)",
        common,
        Command(_bundle, spark=False),
    )
    bundler.add_argument(
        "file",
        metavar="FILE",
        nargs="?",
        default=None,
        help=f"{_workflow_file_help()}; default: every job of the bundle ({', '.join(BUNDLED_WORKFLOWS)}), "
        "or with --out the main workflow",
    )
    bundler.add_argument(
        "--out",
        help="default: resources/<workflow name>.job.yml in the checkout (installed from a wheel: in the current folder)",
    )
    bundler.add_argument("--check", action="store_true", help="exit 1 when the file differs from the rendering")
