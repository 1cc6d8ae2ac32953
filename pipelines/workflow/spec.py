"""Workflow files (`conf/workflows/*.yaml`): a DAG of CLI commands, parsed into strict models.

A workflow is the one definition of a pipeline: `python -m pipelines workflow FILE` runs it here,
and `python -m pipelines bundle` renders it as the Databricks job of `databricks.yml`. Each step is
one CLI command (what a Databricks wheel task calls), so a step means the same thing in both.

```yaml
name: overlay_refresh
description: ...
schedule: {cron: "0 0 4 * * ?", timezone: UTC}      # the bundle job's trigger (optional)
parameters: {instance: fb-1k, ratio: "0.2"}          # ${name} in `run`; --param name=value overrides
steps:
  - name: design_${algorithm}                         # one step per matrix value
    matrix: {algorithm: [gpm, gpa]}
    after: [ingest]                                   # a step's name, or a matrix step's template
    run: [design, --instance, "${instance}", --algorithm, "${algorithm}", --budget-ratio, "${ratio}"]
```
"""

from __future__ import annotations

import itertools
import re
from dataclasses import dataclass
from pathlib import Path

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

from pipelines.config import ConfigError, read_yaml

PLACEHOLDER = re.compile(r"\$\{([A-Za-z_][A-Za-z0-9_]*)\}")
NAME = re.compile(r"^[A-Za-z0-9_-]{1,100}$")
# Commands a step may run: the jobs. `workflow` and `main` would nest workflows.
STEP_COMMANDS = (
    "ingest", "design", "simulate", "disseminate", "topic-structure", "friend-bound", "evaluate", "resilience", "route",
    "compare",
    "report", "import-overlay", "export", "instances",
    "register",
)
Scalar = str | int | float


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class Schedule(_Strict):
    """A Databricks (Quartz) cron trigger; the lab runs workflows in UTC."""

    cron: str = Field(pattern=r"^\S+( \S+){5,6}$")
    timezone: str = "UTC"
    paused: bool = False


class DatabricksSpec(_Strict):
    """How the bundle's job differs from a local run: parameter defaults on the cluster."""

    parameters: dict[str, str] = Field(default_factory=dict)


class StepSpec(_Strict):
    name: str
    run: list[Scalar] = Field(min_length=1)
    after: list[str] = Field(default_factory=list)  # may use the step's own matrix keys
    matrix: dict[str, list[Scalar]] = Field(default_factory=dict)
    description: str | None = None

    @field_validator("matrix")
    @classmethod
    def _non_empty(cls, matrix: dict[str, list[Scalar]]) -> dict[str, list[Scalar]]:
        for key, values in matrix.items():
            if not values:
                raise ValueError(f"matrix '{key}' has no values")
        return matrix


class WorkflowSpec(_Strict):
    name: str = Field(pattern=NAME.pattern)
    description: str
    schedule: Schedule | None = None
    parameters: dict[str, Scalar] = Field(default_factory=dict)
    databricks: DatabricksSpec = Field(default_factory=DatabricksSpec)
    steps: list[StepSpec] = Field(min_length=1)


@dataclass(frozen=True)
class Step:
    """One expanded step: its CLI arguments, with `${parameter}` placeholders still in them."""

    name: str
    argv: tuple[str, ...]
    after: tuple[str, ...]
    description: str | None = None

    @property
    def command(self) -> str:
        return self.argv[0]

    def resolved(self, parameters: dict[str, str]) -> tuple[str, ...]:
        """The arguments with every placeholder replaced (all are known: `load_workflow` checked)."""
        return tuple(PLACEHOLDER.sub(lambda m: parameters[m.group(1)], arg) for arg in self.argv)

    def placeholders(self) -> set[str]:
        return {m.group(1) for arg in self.argv for m in PLACEHOLDER.finditer(arg)}


@dataclass(frozen=True)
class Workflow:
    name: str
    description: str
    schedule: Schedule | None
    parameters: dict[str, str]
    steps: tuple[Step, ...]  # in an order that runs every step after its dependencies
    source: str
    job_defaults: dict[str, str]  # parameter defaults of the Databricks job

    def step(self, name: str) -> Step:
        return next(s for s in self.steps if s.name == name)

    def with_parameters(self, overrides: dict[str, str]) -> Workflow:
        unknown = sorted(set(overrides) - set(self.parameters))
        if unknown:
            raise ConfigError(
                f"{self.source}: unknown parameter(s) {', '.join(unknown)}; this workflow takes "
                f"{', '.join(sorted(self.parameters)) or 'none'}"
            )
        return Workflow(
            self.name, self.description, self.schedule, {**self.parameters, **overrides}, self.steps, self.source,
            self.job_defaults,
        )


def _text(value: Scalar) -> str:
    return value if isinstance(value, str) else format(value, "g") if isinstance(value, float) else str(value)


def _substitute(text: str, values: dict[str, str]) -> str:
    """Replace the placeholders named in `values`; leave the others (job parameters) as they are."""
    return PLACEHOLDER.sub(lambda m: values.get(m.group(1), m.group(0)), text)


def _expand(spec: StepSpec, source: str) -> list[Step]:
    keys = list(spec.matrix)
    missing = [k for k in keys if f"${{{k}}}" not in spec.name]
    if missing:
        raise ConfigError(
            f"{source}: step '{spec.name}' has a matrix over {', '.join(missing)} but its name does not "
            f"use ${{{missing[0]}}}: every expanded step needs a distinct name"
        )
    steps = []
    for combination in itertools.product(*(spec.matrix[k] for k in keys)):
        values = {k: _text(v) for k, v in zip(keys, combination)}
        name = re.sub(r"[^A-Za-z0-9_-]", "_", _substitute(spec.name, values))
        argv = tuple(_substitute(_text(a), values) for a in spec.run)
        after = tuple(re.sub(r"[^A-Za-z0-9_${}-]", "_", _substitute(a, values)) for a in spec.after)
        steps.append(Step(name, argv, after, spec.description))
    return steps


def _order(steps: list[Step], groups: dict[str, list[str]], source: str) -> tuple[Step, ...]:
    """Resolve `after` (names or matrix templates) and sort topologically, keeping file order."""
    by_name = {s.name: s for s in steps}
    resolved: dict[str, tuple[str, ...]] = {}
    for step in steps:
        needs: list[str] = []
        for ref in step.after:
            if ref in groups:
                needs.extend(groups[ref])
            elif ref in by_name:
                needs.append(ref)
            else:
                raise ConfigError(f"{source}: step '{step.name}' runs after '{ref}', which is not a step")
        resolved[step.name] = tuple(dict.fromkeys(needs))
    ordered: list[Step] = []
    placed: set[str] = set()
    pending = list(steps)
    while pending:
        ready = [s for s in pending if set(resolved[s.name]) <= placed]
        if not ready:
            cycle = ", ".join(s.name for s in pending)
            raise ConfigError(f"{source}: the steps {cycle} depend on each other in a cycle")
        for step in ready:
            ordered.append(Step(step.name, step.argv, resolved[step.name], step.description))
            placed.add(step.name)
        pending = [s for s in pending if s.name not in placed]
    return tuple(ordered)


def parse_workflow(data: object, source: str) -> Workflow:
    if not isinstance(data, dict):
        raise ConfigError(f"{source}: expected a mapping with name, description and steps")
    try:
        spec = WorkflowSpec.model_validate(data)
    except ValidationError as error:
        problems = [f"'{'.'.join(str(p) for p in e['loc'])}': {e['msg']}" for e in error.errors()]
        raise ConfigError(f"invalid workflow {source}:\n  - " + "\n  - ".join(problems)) from None
    steps: list[Step] = []
    groups: dict[str, list[str]] = {}
    for step_spec in spec.steps:
        expanded = _expand(step_spec, source)
        if step_spec.matrix:
            groups[step_spec.name] = [s.name for s in expanded]
        steps.extend(expanded)
    seen: set[str] = set()
    for step in steps:
        if not NAME.match(step.name):
            raise ConfigError(f"{source}: step name '{step.name}' must be letters, digits, '_' or '-'")
        if step.name in seen:
            raise ConfigError(f"{source}: two steps are named '{step.name}'")
        seen.add(step.name)
        if step.command not in STEP_COMMANDS:
            raise ConfigError(
                f"{source}: step '{step.name}' runs '{step.command}'; a step runs one of {', '.join(STEP_COMMANDS)}"
            )
        unknown = sorted(step.placeholders() - set(spec.parameters))
        if unknown:
            raise ConfigError(f"{source}: step '{step.name}' uses ${{{unknown[0]}}}, which is not a parameter")
    parameters = {k: _text(v) for k, v in spec.parameters.items()}
    unknown = sorted(set(spec.databricks.parameters) - set(parameters))
    if unknown:
        raise ConfigError(f"{source}: databricks.parameters names {unknown[0]}, which is not a parameter")
    return Workflow(
        spec.name, spec.description, spec.schedule, parameters, _order(steps, groups, source), source,
        dict(spec.databricks.parameters),
    )


def load_workflow(path: str | Path) -> Workflow:
    return parse_workflow(read_yaml(Path(path), "workflow file"), str(path))
