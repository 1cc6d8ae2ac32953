"""Settings: YAML in `conf/` parsed into strict, typed, frozen models.

An unknown key or a value of the wrong type is a `ConfigError` that names the key, the file and
what is allowed. The model's defaults are the embedded default (local Spark, Delta tables under
`./lakehouse`); `conf/lab.yaml` spells the same values out and is what `--config` reads by
default. Command-line flags override the file (`apply_overrides`).
"""

from __future__ import annotations

import difflib
import re
from pathlib import Path
from typing import Any, Literal

import yaml
from pydantic import BaseModel, ConfigDict, Field, ValidationError

from overlay.errors import excerpt
from pipelines.resources import CONF_DIR

DEFAULT_CONFIG_FILE = CONF_DIR / "lab.yaml"  # the checkout's, or an installed wheel's copy


class ConfigError(ValueError):
    """A settings file or flag that cannot be used; the message says how to fix it."""


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True, strict=True)


class SparkSettings(_Strict):
    """How to build a local session. Ignored when a session is already active (Databricks)."""

    master: str = "local[*]"
    app_name: str = "overlay-lab"
    driver_memory: str = Field("6g", pattern=r"^\d+[kmgt]$")
    shuffle_partitions: int = Field(8, ge=1, le=2**31 - 1)  # a JVM int
    # JVM log lines on the console: errors only; -v raises it to WARN, -vv to INFO.
    log_level: Literal["ERROR", "WARN", "INFO", "DEBUG"] = "ERROR"
    checkpoint_dir: str | None = None
    # Lineage cuts of the iterative jobs (`overlay.lineage`): auto is local on an in-process master
    # (local, local[N]), reliable (in checkpoint_dir, surviving a lost executor) on any other.
    checkpoints: Literal["auto", "local", "reliable"] = "auto"
    ui_enabled: bool = False
    # Extra options of the lab's JVMs (the driver's, and executors' where they have their own),
    # e.g. "-XX:TieredStopAtLevel=1 -XX:ReservedCodeCacheSize=240m": JIT compilation that pays off
    # sooner, for short runs on small data (the tests use it; C1 alone needs the larger code cache,
    # or it fills and the JVM stops compiling). OVERLAY_LAB_JAVA_OPTIONS adds to these.
    java_options: str = ""
    conf: dict[str, str] = Field(default_factory=dict)


class IngestSettings(_Strict):
    """Defaults of the ingest job that are not worth a flag on every call."""

    bfs_seed_count: int = Field(3, ge=1)


class DesignSettings(_Strict):
    """Where the greedy designs run. `regime`: auto picks the memory regime (the whole greedy
    compiled in the driver process) when a bound on the candidate state fits `memory_budget`, else
    the batched Spark rounds; memory or rounds force one. The default budget holds every instance
    of the shipped and shared graphs (Slashdot's 41.6 million candidate pairs: about 0.7 GiB).
    `keep_round_rows`: in the rounds, each partition keeps its candidate rows in files on its
    executor's local disk between rounds (false: every round re-reads the table; for executors
    without local disk to spare)."""

    regime: Literal["auto", "memory", "rounds"] = "auto"
    memory_budget: str = Field("4g", pattern=r"^\d+[kmgt]$")
    keep_round_rows: bool = True  # rounds: partitions keep their rows on their executors' disks


class SimulateSettings(_Strict):
    """Where the gossip simulations (Feverfew, gossipsub) run their cycles. `regime`: auto runs
    them in the driver's memory when the master runs in this process and the instance has at
    most `memory_subscriptions` subscriptions, else on the executors (one Spark job a cycle);
    memory or spark force one. Both give the same rows. `memory_budget`: what a memory-regime
    simulation's growing state may take (Feverfew's BubbleSample copies): past it the run stops
    with an error at its last snapshot, before the machine runs out."""

    regime: Literal["auto", "memory", "spark"] = "auto"
    memory_subscriptions: int = Field(1_000_000, ge=0)
    memory_budget: str = Field("8g", pattern=r"^\d+[kmgt]$")


class HistorySettings(_Strict):
    """How many versions of an instance ingest keeps (the current one included) and for how many
    days after they were replaced; runs built on a kept version stay readable. null: no limit."""

    keep_versions: int | None = Field(5, ge=1)
    keep_days: float | None = Field(None, ge=0)


class MaintenanceSettings(_Strict):
    """`maintain`: VACUUM keeps every file a table version of the last `retain_hours` needs;
    runs on dropped instance versions are deleted first; the Delta log keeps `log_retain_hours`
    (None: the table's own, Delta's 30 days)."""

    retain_hours: float = Field(168.0, ge=0)
    delete_dropped_runs: bool = True
    log_retain_hours: int | None = Field(None, ge=1)


class JarsSettings(_Strict):
    """Where setup looks for the JVM jars (Delta, GraphFrames) besides Maven Central."""

    # Maven-layout repositories tried after Maven Central, after those of the environment
    # variable OVERLAY_LAB_MAVEN_REPOS: a corporate mirror, an air-gapped share, file:// folders.
    maven_repositories: list[str] = Field(default_factory=list)


class LabSettings(_Strict):
    lakehouse: str = "lakehouse"
    spark: SparkSettings = Field(default_factory=SparkSettings)
    ingest: IngestSettings = Field(default_factory=IngestSettings)
    design: DesignSettings = Field(default_factory=DesignSettings)
    simulate: SimulateSettings = Field(default_factory=SimulateSettings)
    history: HistorySettings = Field(default_factory=HistorySettings)
    maintenance: MaintenanceSettings = Field(default_factory=MaintenanceSettings)
    jars: JarsSettings = Field(default_factory=JarsSettings)

    def lakehouse_path(self) -> Path:
        return Path(self.lakehouse).expanduser().resolve()

    def lakehouse_location(self) -> str:
        """Where the tables are: a URI as given (dbfs:/, s3://, abfss://...), else an absolute path."""
        if re.match(r"^[A-Za-z][A-Za-z0-9+.-]*:/", self.lakehouse):
            return self.lakehouse
        return str(self.lakehouse_path())

    def checkpoint_location(self) -> str:
        """The checkpoint folder as Spark takes it: beside the lakehouse (a URI there too), or set."""
        uri = r"^[A-Za-z][A-Za-z0-9+.-]*:/"
        if self.spark.checkpoint_dir and re.match(uri, self.spark.checkpoint_dir):
            return self.spark.checkpoint_dir
        if not self.spark.checkpoint_dir and re.match(uri, self.lakehouse):
            return self.lakehouse.rstrip("/") + "/_checkpoints"
        path = self.checkpoint_path()
        path.mkdir(parents=True, exist_ok=True)
        return str(path)

    def checkpoint_path(self) -> Path:
        if self.spark.checkpoint_dir:
            return Path(self.spark.checkpoint_dir).expanduser().resolve()
        return self.lakehouse_path() / "_checkpoints"


def _allowed_keys(model: type[BaseModel]) -> list[str]:
    return sorted(model.model_fields)


def _model_at(location: tuple[Any, ...]) -> type[BaseModel]:
    model: type[BaseModel] = LabSettings
    for part in location:
        annotation = model.model_fields[part].annotation if part in model.model_fields else None
        if isinstance(annotation, type) and issubclass(annotation, BaseModel):
            model = annotation
        else:
            break
    return model


def _explain(error: ValidationError, source: str) -> ConfigError:
    problems = []
    for item in error.errors():
        where = ".".join(str(p) for p in item["loc"])
        if item["type"] == "extra_forbidden":
            parent = _model_at(item["loc"][:-1])
            allowed = _allowed_keys(parent)
            hint = difflib.get_close_matches(str(item["loc"][-1]), allowed, n=1)
            did_you_mean = f" Did you mean '{hint[0]}'?" if hint else ""
            problems.append(f"unknown key '{where}'. Allowed here: {', '.join(allowed)}.{did_you_mean}")
        else:
            problems.append(f"'{where}': {item['msg']} (got {item.get('input')!r})")
    return ConfigError(f"invalid settings in {source}:\n  - " + "\n  - ".join(problems))


def parse_settings(data: Any, source: str = "settings") -> LabSettings:
    if data is None:
        data = {}
    if not isinstance(data, dict):
        raise ConfigError(f"{source}: expected a mapping of keys to values at the top level")
    try:
        return LabSettings.model_validate(data)
    except ValidationError as error:
        raise _explain(error, source) from None


class _UniqueKeyLoader(yaml.SafeLoader):
    """PyYAML's safe loader, refusing a key given twice in one mapping (it would keep the last)."""

    def construct_mapping(self, node: yaml.MappingNode, deep: bool = False) -> dict:
        seen = []  # a list: a key may be unhashable (the base class refuses it, with its own message)
        for key_node, _ in node.value:
            if key_node.tag == "tag:yaml.org,2002:merge":  # `<<: *anchor` merges; a key of its own overrides
                continue
            key = self.construct_object(key_node, deep=deep)
            if key in seen:
                raise yaml.constructor.ConstructorError(
                    "while reading a mapping", node.start_mark, f"found the key {key!r} twice", key_node.start_mark
                )
            seen.append(key)
        return super().construct_mapping(node, deep)


def _yaml_problem(error: yaml.YAMLError) -> str:
    """PyYAML's complaint on one line: where and what (its own message quotes the file's lines)."""
    if isinstance(error, yaml.MarkedYAMLError):
        mark = error.problem_mark or error.context_mark
        where = f"line {mark.line + 1}, column {mark.column + 1}: " if mark else ""
        return where + excerpt(" ".join(filter(None, (error.problem, error.context))), 120)
    return excerpt(str(error).splitlines()[0] if str(error) else type(error).__name__, 120)


def read_yaml(path: Path, what: str) -> Any:
    """A YAML file's content; a missing file, a folder, text that is not UTF-8, bad YAML or a key
    given twice is a one-line `ConfigError` naming it."""
    if path.is_dir():
        raise ConfigError(f"{what} {path} is a folder; give a YAML file")
    if not path.is_file():
        raise ConfigError(f"{what} {path} does not exist")
    data = path.read_bytes()
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as error:
        line = data[: error.start].count(b"\n") + 1
        raise ConfigError(f"{path} is not UTF-8 text (an undecodable byte on line {line}); save it as UTF-8") from None
    try:
        return yaml.load(text, Loader=_UniqueKeyLoader)  # a safe loader
    except yaml.YAMLError as error:
        raise ConfigError(f"{path} is not valid YAML: {_yaml_problem(error)}") from None


def load_settings(path: Path | None = None) -> LabSettings:
    """Read a settings file; without one, `conf/lab.yaml` when present, else the defaults."""
    if path is None:
        path = DEFAULT_CONFIG_FILE if DEFAULT_CONFIG_FILE.exists() else None
        if path is None:
            return LabSettings()
    return parse_settings(read_yaml(path, "settings file"), str(path))


def apply_overrides(settings: LabSettings, overrides: dict[str, Any]) -> LabSettings:
    """Apply dotted-key overrides (`{"spark.master": "local[2]"}`), validated like the file."""
    data = settings.model_dump()
    for dotted, value in overrides.items():
        if value is None:
            continue
        node = data
        *parents, leaf = dotted.split(".")
        for part in parents:
            node = node.setdefault(part, {})
        if isinstance(node.get(leaf), dict) and isinstance(value, dict):
            node[leaf] = {**node[leaf], **value}
        else:
            node[leaf] = value
    return parse_settings(data, "command-line flags")
