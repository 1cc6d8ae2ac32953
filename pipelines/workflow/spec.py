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

An experiment's sweep can differ by where it runs: `grids` names sets of matrix values (the
first is the default; `workflow --grid NAME` picks another, `databricks.grid` the bundle's), and a
matrix key whose value is the word `grid` takes its values from the chosen one:

```yaml
grids:
  laptop: {nodes: [1000, 4000]}                       # what runs here in a sitting
  cluster: {nodes: [1000, 2000, 4000, 6000, 8000, 10000]}
steps:
  - name: ingest_${nodes}
    matrix: {nodes: grid}
```

A matrix value may also be a mapping, whose keys are placeholders set together:
`matrix: {subs: [{low: 10, high: 90}, {low: 50, high: 130}]}` gives two steps, each with its
`${low}` and `${high}` (the step's name uses at least one of them).
"""

from __future__ import annotations

import itertools
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

from pipelines.config import ConfigError, read_yaml

PLACEHOLDER = re.compile(r"\$\{([A-Za-z_][A-Za-z0-9_]*)\}")
NAME = re.compile(r"^[A-Za-z0-9_-]{1,100}$")
# Commands a step may run: the jobs. `workflow` and `main` would nest workflows.
STEP_COMMANDS = (
    "ingest",
    "design",
    "simulate",
    "disseminate",
    "topic-structure",
    "friend-bound",
    "evaluate",
    "resilience",
    "route",
    "compare",
    "compare-meshes",
    "churn-experiment",
    "report",
    "import-overlay",
    "export",
    "instances",
    "register",
    "maintain",
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
    """How the bundle's job differs from a local run: parameter defaults on the cluster, and the
    grid its matrix steps expand over."""

    parameters: dict[str, str] = Field(default_factory=dict)
    grid: str | None = None


class StepSpec(_Strict):
    name: str
    run: list[Scalar] = Field(min_length=1)
    after: list[str] = Field(default_factory=list)  # may use the step's own matrix keys
    # A key's values are scalars, or mappings whose keys are placeholders set together (a range's ends).
    matrix: dict[str, list[Scalar] | list[dict[str, Scalar]] | Literal["grid"]] = Field(default_factory=dict)
    description: str | None = None

    @field_validator("matrix")
    @classmethod
    def _non_empty(cls, matrix: dict[str, list[Scalar] | str]) -> dict[str, list[Scalar] | str]:
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
    grids: dict[str, dict[str, list[Scalar] | list[dict[str, Scalar]]]] = Field(default_factory=dict)
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
    grid: str | None = None  # the grid the matrix steps were expanded over
    grids: tuple[str, ...] = ()  # every grid the file defines, the default first

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
            self.name,
            self.description,
            self.schedule,
            {**self.parameters, **overrides},
            self.steps,
            self.source,
            self.job_defaults,
            self.grid,
            self.grids,
        )


def _text(value: Scalar) -> str:
    return value if isinstance(value, str) else format(value, "g") if isinstance(value, float) else str(value)


def _substitute(text: str, values: dict[str, str]) -> str:
    """Replace the placeholders named in `values`; leave the others (job parameters) as they are."""
    return PLACEHOLDER.sub(lambda m: values.get(m.group(1), m.group(0)), text)


def _grid(spec: WorkflowSpec, name: str | None, source: str) -> dict[str, list[Scalar]]:
    """The matrix values of the grid `name` (the first grid when None); every grid must give the
    same keys, so a grid changes how far a sweep goes, never which steps exist."""
    if not spec.grids:
        if name is not None:
            raise ConfigError(f"{source}: --grid {name}: this workflow defines no grids")
        return {}
    keys = [sorted(values) for values in spec.grids.values()]
    if any(k != keys[0] for k in keys):
        raise ConfigError(f"{source}: every grid must give the same matrix keys ({', '.join(keys[0])})")
    for grid, values in spec.grids.items():
        empty = [k for k, v in values.items() if not v]
        if empty:
            raise ConfigError(f"{source}: grid '{grid}' gives '{empty[0]}' no values")
    chosen = next(iter(spec.grids)) if name is None else name
    if chosen not in spec.grids:
        raise ConfigError(f"{source}: no grid '{chosen}'; this workflow has {', '.join(spec.grids)}")
    return spec.grids[chosen]


def _matrix(spec: StepSpec, grid: dict[str, list[Scalar]], source: str, parameters: set[str]) -> dict[str, list]:
    """The step's matrix with `grid` values filled in from the chosen grid; a key's mappings must
    all set the same placeholders, none of them another key's or a parameter."""
    matrix = {}
    for key, values in spec.matrix.items():
        if values == "grid":
            if key not in grid:
                raise ConfigError(
                    f"{source}: step '{spec.name}' takes '{key}' from the grid, which "
                    + ("this workflow does not define" if not grid else f"does not give (it gives {', '.join(grid)})")
                )
            values = grid[key]
        matrix[key] = values
    taken: dict[str, str] = {}
    for key, values in matrix.items():
        mappings = [v for v in values if isinstance(v, dict)]
        if mappings and (not mappings[0] or any(set(m) != set(mappings[0]) for m in mappings)):
            raise ConfigError(  # a list mixing mappings and scalars is refused by the model already
                f"{source}: step '{spec.name}': matrix '{key}' has mappings that do not all set the same placeholders"
            )
        for name in _names(key, values):
            clash = taken.get(name) or ("a parameter" if name in parameters else None)
            if clash:
                raise ConfigError(f"{source}: step '{spec.name}': matrix '{key}' sets ${{{name}}}, as {clash} does")
            taken[name] = f"matrix '{key}'"
    return matrix


def _names(key: str, values: list) -> list[str]:
    """The placeholders a matrix key sets: itself, or the keys of its mappings."""
    return sorted({k for v in values for k in v}) if isinstance(values[0], dict) else [key]


def _expand(spec: StepSpec, source: str, grid: dict[str, list[Scalar]], parameters: set[str]) -> list[Step]:
    matrix = _matrix(spec, grid, source, parameters)
    keys = list(matrix)
    missing = [k for k in keys if not any(f"${{{n}}}" in spec.name for n in _names(k, matrix[k]))]
    if missing:
        uses = " or ".join(f"${{{n}}}" for n in _names(missing[0], matrix[missing[0]]))
        raise ConfigError(
            f"{source}: step '{spec.name}' has a matrix over {', '.join(missing)} but its name does not "
            f"use {uses}: every expanded step needs a distinct name"
        )
    steps = []
    for combination in itertools.product(*(matrix[k] for k in keys)):
        values = {}
        for k, v in zip(keys, combination):
            values.update({n: _text(x) for n, x in v.items()} if isinstance(v, dict) else {k: _text(v)})
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


def parse_workflow(data: object, source: str, grid: str | None = None) -> Workflow:
    """The workflow in `data`, its matrix steps expanded over `grid` (None: the first grid). Every
    grid is expanded and checked, so an error in the cluster's grid shows here too."""
    if not isinstance(data, dict):
        raise ConfigError(f"{source}: expected a mapping with name, description and steps")
    try:
        spec = WorkflowSpec.model_validate(data)
    except ValidationError as error:
        problems = [f"'{'.'.join(str(p) for p in e['loc'])}': {e['msg']}" for e in error.errors()]
        raise ConfigError(f"invalid workflow {source}:\n  - " + "\n  - ".join(problems)) from None
    chosen = _grid(spec, grid, source)
    steps = _build(spec, chosen, source)
    for other in spec.grids:
        if other != (grid or next(iter(spec.grids))):
            _build(spec, _grid(spec, other, source), f"{source} (grid {other})")
    used = {k for step in spec.steps for k, v in step.matrix.items() if v == "grid"}
    unused = sorted(set(next(iter(spec.grids.values()), {})) - used)
    if unused:
        raise ConfigError(f"{source}: the grids give '{unused[0]}', which no step's matrix takes from the grid")
    parameters = {k: _text(v) for k, v in spec.parameters.items()}
    unknown = sorted(set(spec.databricks.parameters) - set(parameters))
    if unknown:
        raise ConfigError(f"{source}: databricks.parameters names {unknown[0]}, which is not a parameter")
    if spec.databricks.grid is not None and spec.databricks.grid not in spec.grids:
        raise ConfigError(f"{source}: databricks.grid names {spec.databricks.grid}, which is not a grid")
    names = tuple(spec.grids)
    return Workflow(
        spec.name,
        spec.description,
        spec.schedule,
        parameters,
        steps,
        source,
        dict(spec.databricks.parameters),
        (grid or names[0]) if names else None,
        names,
    )


def _build(spec: WorkflowSpec, chosen: dict, source: str) -> tuple[Step, ...]:
    """The steps of one grid, checked (names, commands, placeholders) and in dependency order
    (`source` names the file, and the grid when it is not the chosen one)."""
    steps: list[Step] = []
    groups: dict[str, list[str]] = {}
    for step_spec in spec.steps:
        expanded = _expand(step_spec, source, chosen, set(spec.parameters))
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
    return _order(steps, groups, source)


def load_workflow(path: str | Path, grid: str | None = None) -> Workflow:
    return parse_workflow(read_yaml(Path(path), "workflow file"), str(path), grid)


def bundle_grid(path: str | Path) -> str | None:
    """The grid a workflow's Databricks job expands over: `databricks.grid`, else the default."""
    data = read_yaml(Path(path), "workflow file")
    databricks = data.get("databricks") if isinstance(data, dict) else None
    return databricks.get("grid") if isinstance(databricks, dict) else None
