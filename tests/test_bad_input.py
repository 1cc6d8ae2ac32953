"""Bad input, systematically: every reader of the lab fed a corpus of broken inputs through the
CLI (subscriptions CSV and Parquet, edge lists, Matrix Market, overlay imports, workflow and
settings YAML). Each input is either refused with one short, printable error line and nothing
stored, or read with its bad rows quarantined and counts that reconcile. The corpus is built
here into tmp_path (no fixture files); docs/operations/bad-input.md is its table.

The default run takes one refusal per ingest reader and every YAML case (they stop before
Spark); the slow pass (`-m slow`) takes the rest: each quarantine case stores an instance or a run, and the
imports share an instance whose Delta writes cost a cold JVM half a minute. Missing files of
ingest and import-overlay are checked in test_cli.py, a workflow name that is neither a file nor
shipped in test_resources.py.
"""

from __future__ import annotations

import difflib
import gzip
import io
import random
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from pyspark.sql import functions as F

from overlay import schema as S
from overlay.instance.social import SocialSpec, social_instance
from pipelines.lakehouse import Lakehouse
from tests.helpers import run_cli

BINARY = random.Random(7).randbytes(3000)  # starts with 0xa5: neither text nor gzip nor Parquet
LONGEST_QUOTE = 40  # characters of the input an error line may repeat
LONGEST_LINE = 300  # characters of an error line, besides the paths it names


@dataclass(frozen=True)
class Refused:
    """The command exits 2 with one error line that says `says`, and stores nothing."""

    says: str
    jvm_logs: bool = False  # Spark's task failure is logged above the line (only reading finds it)


@dataclass(frozen=True)
class Quarantined:
    """The command stores the usable rows: of `read` rows, `accepted` stored, `rejected` and
    `duplicates` quarantined (the corpus's own count, written by hand); `key`, when given, is
    stored as a node key exactly as written (no id narrowed or rounded)."""

    read: int
    accepted: int
    rejected: int = 0
    duplicates: int = 0
    key: str | None = None

    def __post_init__(self) -> None:
        assert self.read == self.accepted + self.rejected + self.duplicates, self


@dataclass(frozen=True)
class Defaults:
    """The command runs on the default settings (an empty settings file sets nothing)."""


Outcome = Refused | Quarantined | Defaults


@dataclass(frozen=True)
class Case:
    """One input of the corpus for one reader, and what the reader must do with it."""

    reader: str
    name: str
    build: Callable[[Path], Path]  # writes the input into a folder; its path
    outcome: Outcome
    default: bool = False  # in the default run, else in the slow pass

    def param(self):
        marks = () if self.default else (pytest.mark.slow,)
        return pytest.param(self, id=f"{self.reader}-{self.name}", marks=marks)


# Builders -----------------------------------------------------------------------------------


def file(name: str, data: bytes) -> Callable[[Path], Path]:
    def build(folder: Path) -> Path:
        path = folder / name
        path.write_bytes(data)
        return path

    return build


def folder(name: str) -> Callable[[Path], Path]:
    """An empty folder where a file is expected."""

    def build(parent: Path) -> Path:
        path = parent / name
        path.mkdir()
        return path

    return build


def missing(name: str) -> Callable[[Path], Path]:
    return lambda parent: parent / name


def parquet_bytes(columns: dict[str, pa.Array]) -> bytes:
    buffer = io.BytesIO()
    pq.write_table(pa.Table.from_arrays(list(columns.values()), names=list(columns)), buffer)
    return buffer.getvalue()


def parquet_with_names(names: list[str], values: list[pa.Array]) -> bytes:
    """A Parquet file whose columns may share a name (a dict cannot say that)."""
    buffer = io.BytesIO()
    pq.write_table(pa.Table.from_arrays(values, names=names), buffer)
    return buffer.getvalue()


def text(values: list[str]) -> pa.Array:
    return pa.array(values, pa.string())


SUBSCRIPTIONS_PARQUET = parquet_bytes({"node": text(["alice", "bob"]), "topic": text(["news", "news"])})
EDGES_GZIP = gzip.compress(b"".join(b"%d %d\n" % (i, i + 1) for i in range(1, 400)), mtime=0)
MATRIX_MARKET = b"%%MatrixMarket matrix coordinate pattern general\n4 4 3\n1 2\n2 3\n3 4\n"
LINKS_PARQUET = parquet_bytes({"u": pa.array([1, 2], pa.int64()), "v": pa.array([2, 3], pa.int64())})
HUGE = "99999999999999999999999"  # beyond 64 bits


def workflow(body: str) -> Callable[[Path], Path]:
    """A workflow file whose report step (were it ever run) writes into the test's folder."""

    def build(parent: Path) -> Path:
        path = parent / "flow.yaml"
        path.write_text(body.replace("OUT", str(parent / "report")))
        return path

    return build


WORKFLOW = "name: w\ndescription: d\nsteps:\n  - name: a\n    run: [report, --out, OUT]\n"

# The corpus ---------------------------------------------------------------------------------

SUBSCRIPTIONS_CSV = [
    Case(
        "subscriptions-csv",
        "truncated",
        file("s.csv", b"node,topic\nalice,news\nbob,news\ncarol"),
        Quarantined(3, 2, 1),
    ),
    Case(
        "subscriptions-csv",
        "huge-ids",
        file("s.csv", f"node,topic\n{HUGE},news\nalice,news\n".encode()),
        Quarantined(2, 2, key=HUGE),
    ),
    Case(
        "subscriptions-csv",
        "duplicate-keys",
        file("s.csv", b"node,topic,node\nalice,news,bob\n"),
        Refused("the header names column 'node' 2 times"),
    ),
    Case(
        "subscriptions-csv",
        "duplicate-rows",
        file("s.csv", b"node,topic\nalice,news\nalice,news\nbob,news\n"),
        Quarantined(3, 2, duplicates=1),
    ),
    Case(  # two undecodable keys used to be read as the same U+FFFD key, and merged
        "subscriptions-csv",
        "non-utf8",
        file("s.csv", b"node,topic\n\xff\xfe,news\n\xfe\xff,news\nalice,news\n"),
        Quarantined(3, 1, 2),
    ),
    Case("subscriptions-csv", "empty", file("s.csv", b""), Refused("the file is empty")),
    Case("subscriptions-csv", "directory", folder("s.csv"), Refused("the file is empty")),
    Case(
        "subscriptions-csv",
        "binary",
        file("s.csv", BINARY),
        Refused("missing column(s) node, topic; the file has columns"),
        default=True,
    ),
]

SUBSCRIPTIONS_PARQUET_CASES = [
    Case(
        "subscriptions-parquet",
        "truncated",
        file("s.parquet", SUBSCRIPTIONS_PARQUET[:-10]),
        Refused("not a Parquet file: its footer is missing"),
        default=True,
    ),
    Case(
        "subscriptions-parquet",
        "wrong-types",
        file("s.parquet", parquet_bytes({"node": pa.array([[1, 2], [3]]), "topic": text(["news", "news"])})),
        Refused("column 'node' holds array<bigint> values"),
    ),
    Case(
        "subscriptions-parquet",
        "huge-ids",
        file(
            "s.parquet", parquet_bytes({"node": pa.array([10**30, 5], pa.decimal128(38, 0)), "topic": text(["t", "t"])})
        ),
        Quarantined(2, 2, key=str(10**30)),
    ),
    Case(
        "subscriptions-parquet",
        "duplicate-keys",
        file("s.parquet", parquet_with_names(["node", "topic", "node"], [text(["a"]), text(["t"]), text(["b"])])),
        Refused("the file has two columns named 'node'"),
    ),
    Case(
        "subscriptions-parquet",
        "duplicate-rows",
        file("s.parquet", parquet_bytes({"node": text(["a", "a", "b"]), "topic": text(["t", "t", "t"])})),
        Quarantined(3, 2, duplicates=1),
    ),
    Case(
        "subscriptions-parquet",
        "non-utf8",
        file(
            "s.parquet", parquet_bytes({"node": pa.array([b"\xff\xfe", b"a"], pa.binary()), "topic": text(["t", "t"])})
        ),
        Quarantined(2, 1, 1),
    ),
    Case(
        "subscriptions-parquet", "empty", file("s.parquet", b""), Refused("not a Parquet file: it is empty (0 bytes)")
    ),
    Case("subscriptions-parquet", "directory", folder("s.parquet"), Refused("no Parquet files in this folder")),
    Case(
        "subscriptions-parquet",
        "binary",
        file("s.parquet", BINARY),
        Refused("not a Parquet file: it does not start with the PAR1 marker"),
    ),
]

EDGE_LIST = [
    Case("edge-list", "truncated", file("g.txt", b"1 2\n2 3\n3"), Quarantined(3, 2, 1)),
    Case(
        "edge-list",
        "truncated-gzip",
        file("g.txt.gz", EDGES_GZIP[: len(EDGES_GZIP) // 2]),
        Refused("cannot be read (EOFException: Unexpected end of input stream)", jvm_logs=True),
    ),
    Case("edge-list", "wrong-types", file("g.txt", b"1 2\nalice 3\n"), Quarantined(2, 1, 1)),
    Case(
        "edge-list",
        "huge-ids",
        file("g.txt", f"1 2\n9223372036854775807 1\n2 {HUGE}\n".encode()),
        Quarantined(3, 2, 1, key="9223372036854775807"),
    ),
    Case("edge-list", "duplicate-rows", file("g.txt", b"1 2\n2 1\n1 2\n"), Quarantined(3, 1, duplicates=2)),
    Case("edge-list", "non-utf8", file("g.txt", b"1 2\n\xff\xfe 3\n"), Quarantined(2, 1, 1)),
    Case("edge-list", "empty", file("g.txt", b""), Refused("no usable edge lines (0 rows")),
    Case("edge-list", "directory", folder("g.txt"), Refused("no usable edge lines (0 rows")),
    Case("edge-list", "binary", file("g.txt", BINARY), Refused("no usable edge lines")),
    Case(
        "edge-list",
        "binary-gzip",
        file("g.txt.gz", BINARY),
        Refused("not a gzip file, though its name ends in .gz"),
        default=True,
    ),
]

MATRIX_MARKET_CASES = [
    Case("matrix-market", "truncated", file("g.mtx", MATRIX_MARKET[:-2]), Quarantined(3, 2, 1)),
    Case(
        "matrix-market",
        "truncated-after-size-line",
        file("g.mtx", MATRIX_MARKET.split(b"4 4 3\n")[0] + b"4 4 3\n"),
        Refused("no usable edge lines (0 rows"),
    ),
    Case(
        "matrix-market", "wrong-types", file("g.mtx", MATRIX_MARKET.replace(b"2 3\n", b"2 x\n")), Quarantined(3, 2, 1)
    ),
    Case(
        "matrix-market",
        "huge-ids",
        file("g.mtx", MATRIX_MARKET.replace(b"2 3\n", f"2 {HUGE}\n".encode())),
        Quarantined(3, 2, 1),
    ),
    Case(
        "matrix-market",
        "duplicate-rows",
        file("g.mtx", MATRIX_MARKET.replace(b"4 4 3\n", b"4 4 4\n") + b"2 1\n"),
        Quarantined(4, 3, duplicates=1),
    ),
    Case(
        "matrix-market",
        "cut-at-a-line-end",
        file("g.mtx", MATRIX_MARKET.removesuffix(b"3 4\n")),
        Refused("declares 3 entries but it holds 2 entry lines: the file is truncated"),
        default=True,
    ),
    Case(
        "matrix-market",
        "more-entries-than-declared",
        file("g.mtx", MATRIX_MARKET + b"1 4\n"),
        Refused("declares 3 entries but it holds 4 entry lines: the file is damaged"),
    ),
    Case(
        "matrix-market", "non-utf8", file("g.mtx", MATRIX_MARKET.replace(b"2 3\n", b"2 \xff\n")), Quarantined(3, 2, 1)
    ),
    Case("matrix-market", "empty", file("g.mtx", b""), Refused("no usable edge lines (0 rows")),
    Case("matrix-market", "directory", folder("g.mtx"), Refused("no usable edge lines (0 rows")),
    Case("matrix-market", "binary", file("g.mtx", BINARY), Refused("no usable edge lines"), default=True),
]

# Links in the node keys of the instance `imported_into` stores: 1..5.
OVERLAY_IMPORT = [
    Case("overlay-import", "truncated", file("o.csv", b"u,v\n1,2\n2,3\n3"), Quarantined(3, 2, 1)),
    Case(
        "overlay-import",
        "truncated-parquet",
        file("o.parquet", LINKS_PARQUET[:-10]),
        Refused("not a Parquet file: its footer is missing"),
    ),
    Case("overlay-import", "wrong-types", file("o.csv", b"u,v\n1,2\nalice,3\n"), Quarantined(2, 1, 1)),
    Case("overlay-import", "huge-ids", file("o.csv", f"u,v\n1,2\n{HUGE},3\n".encode()), Quarantined(2, 1, 1)),
    Case(
        "overlay-import",
        "duplicate-keys",
        file("o.csv", b"u,v,u\n1,2,3\n"),
        Refused("the header names column 'u' 2 times"),
    ),
    Case("overlay-import", "duplicate-rows", file("o.csv", b"u,v\n1,2\n2,1\n"), Quarantined(2, 1, duplicates=1)),
    Case("overlay-import", "non-utf8", file("o.csv", b"u,v\n1,2\n\xff,3\n\xfe,3\n"), Quarantined(3, 1, 2)),
    Case("overlay-import", "empty", file("o.csv", b""), Refused("the file is empty")),
    Case("overlay-import", "directory", folder("o.parquet"), Refused("no Parquet files in this folder")),
    Case("overlay-import", "binary", file("o.csv", BINARY), Refused("missing column(s) u, v; the file has columns")),
]

WORKFLOW_YAML = [
    Case(
        "workflow-yaml",
        "truncated",
        workflow(WORKFLOW[:-8]),
        Refused("is not valid YAML: line 5, column"),
        default=True,
    ),
    Case(
        "workflow-yaml",
        "wrong-types",
        workflow("name: w\ndescription: d\nsteps:\n  - name: a\n    run: 5\n    after: x\n"),
        Refused("'steps.0.run': Input should be a valid list; 'steps.0.after': Input should be a valid list"),
        default=True,
    ),
    Case(
        "workflow-yaml",
        "huge-ids",
        workflow(
            "name: w\ndescription: d\nsteps:\n  - name: a\n    run: [ingest, --instance, x, --source, synthetic, "
            f"--dist, unif, --nodes, {HUGE}, --topics, 3, --min-subs, 1, --max-subs, 2, --seed, 1]\n"
        ),
        Refused("argument --nodes: must be a positive integer of 64 bits at most"),
        default=True,
    ),
    Case(
        "workflow-yaml",
        "duplicate-keys",
        workflow(WORKFLOW + "steps:\n  - name: b\n    run: [report, --out, OUT]\n"),
        Refused("found the key 'steps' twice"),
        default=True,
    ),
    Case(
        "workflow-yaml",
        "non-utf8",
        file("flow.yaml", WORKFLOW.encode().replace(b"description: d", b"description: \xff\xfe")),
        Refused("is not UTF-8 text (an undecodable byte on line 2)"),
        default=True,
    ),
    Case("workflow-yaml", "empty", file("flow.yaml", b""), Refused("expected a mapping with name"), default=True),
    Case(
        "workflow-yaml",
        "directory",
        folder("flow.yaml"),
        Refused("is a folder; give a workflow YAML file"),
        default=True,
    ),
    Case("workflow-yaml", "binary", file("flow.yaml", BINARY), Refused("is not UTF-8 text"), default=True),
]

SETTINGS_YAML = [
    Case(
        "settings-yaml",
        "truncated",
        file("lab.yaml", b'spark:\n  master: "local[2'),
        Refused("is not valid YAML: line 2, column 19: found unexpected end of stream"),
        default=True,
    ),
    Case(
        "settings-yaml",
        "wrong-types",
        file("lab.yaml", b"spark:\n  shuffle_partitions: many\n"),
        Refused("'spark.shuffle_partitions': Input should be a valid integer (got 'many')"),
        default=True,
    ),
    Case(  # Spark keeps its partition count in a JVM int
        "settings-yaml",
        "huge-ids",
        file("lab.yaml", b"spark:\n  shuffle_partitions: 2147483648\n"),
        Refused("Input should be less than or equal to 2147483647"),
        default=True,
    ),
    Case(
        "settings-yaml",
        "duplicate-keys",
        file("lab.yaml", b"lakehouse: a\nlakehouse: b\n"),
        Refused("found the key 'lakehouse' twice"),
        default=True,
    ),
    Case(
        "settings-yaml",
        "non-utf8",
        file("lab.yaml", b"lakehouse: \xff\xfe\n"),
        Refused("is not UTF-8 text (an undecodable byte on line 1)"),
        default=True,
    ),
    Case("settings-yaml", "empty", file("lab.yaml", b""), Defaults(), default=True),
    Case("settings-yaml", "directory", folder("lab.yaml"), Refused("is a folder; give a YAML file"), default=True),
    Case("settings-yaml", "binary", file("lab.yaml", BINARY), Refused("is not UTF-8 text"), default=True),
    Case("settings-yaml", "missing", missing("lab.yaml"), Refused("does not exist"), default=True),
]

SOURCES = {
    "subscriptions-csv": "subscriptions",
    "subscriptions-parquet": "subscriptions",
    "edge-list": "social",
    "matrix-market": "social",
}
INGEST_CASES = SUBSCRIPTIONS_CSV + SUBSCRIPTIONS_PARQUET_CASES + EDGE_LIST + MATRIX_MARKET_CASES

# Checks -------------------------------------------------------------------------------------


def contents(path: Path) -> bytes:
    return path.read_bytes() if path.is_file() else b""


def assert_one_error_line(err: str, path: Path, outcome: Refused) -> None:
    """The refusal on stderr: one line `error: ...`, printable, short, quoting at most a short
    excerpt of the input; no other line (a traceback, JVM log lines), unless the outcome expects
    Spark's task failure logged above it."""
    lines = [line for line in err.splitlines() if line.strip()]
    errors = [line for line in lines if line.startswith("error: ")]
    assert len(errors) == 1, err[-3000:]
    assert "Traceback" not in err and "Py4J" not in err, err[-3000:]
    if not outcome.jvm_logs:
        assert lines == errors, err[-3000:]
    line = errors[0]
    assert line.isprintable() and "\ufffd" not in line, repr(line)  # no control characters, no bad bytes
    assert len(line.replace(str(path), "<path>")) <= LONGEST_LINE, line
    paths = str(path.parent)  # paths are named, not quoted (a workflow file holds its report folder)
    given = contents(path).decode("utf-8", errors="replace").replace(paths, "")
    quoted = difflib.SequenceMatcher(None, line.replace(paths, ""), given, autojunk=False).find_longest_match()
    assert quoted.size <= LONGEST_QUOTE, f"quotes {given[quoted.b : quoted.b + quoted.size]!r}"
    assert outcome.says in line, line


def delta_tables(root: Path) -> list[str]:
    return sorted(str(log.parent.relative_to(root)) for log in root.rglob("_delta_log")) if root.exists() else []


def refused(code: int, err: str, path: Path, outcome: Refused) -> None:
    assert code == 2, err[-3000:]
    assert_one_error_line(err, path, outcome)
    if outcome.jvm_logs:
        time.sleep(0.5)  # the JVM's log lines reach stderr through a thread: let them land in this test


# Ingest: subscriptions CSV and Parquet, edge lists, Matrix Market ----------------------------


@pytest.mark.parametrize("case", [c.param() for c in INGEST_CASES])
def test_ingest_refuses_or_quarantines(spark, tmp_path, case: Case):
    """A broken input file stops the ingest with one line and no table written; a file with bad
    rows stores the good ones, and the instance's row counts every row read."""
    (tmp_path / "input").mkdir()
    path = case.build(tmp_path / "input")
    root = tmp_path / "lakehouse"
    argv = ("--lakehouse", str(root), "ingest", "--instance", "bad", "--source", SOURCES[case.reader])
    code, _, err = run_cli(*argv, "--path", str(path))
    if isinstance(case.outcome, Refused):
        refused(code, err, path, case.outcome)
        assert delta_tables(root) == []
        return
    expected = case.outcome
    assert code == 0, err[-3000:]
    lakehouse = Lakehouse(spark, str(root))
    row = lakehouse.instance_row("bad")
    counts = (row[S.ROWS_READ], row[S.ROWS_ACCEPTED], row[S.REJECTED], row[S.DUPLICATES], row[S.UNSAMPLED])
    assert counts == (expected.read, expected.accepted, expected.rejected, expected.duplicates, 0)
    quarantine = lakehouse.instance_rows(S.REJECTED_SUBSCRIPTIONS, "bad")
    assert quarantine.count() == expected.rejected
    assert quarantine.filter(~F.is_valid_utf8(S.RECORD)).count() == 0  # stored text reads back as text
    if expected.key is not None:
        keys = {r[S.KEY] for r in lakehouse.instance_rows(S.NODE_KEYS, "bad").collect()}
        assert expected.key in keys, keys


# Overlay imports -----------------------------------------------------------------------------


@pytest.fixture(scope="module")
def imported_into(spark, tmp_path_factory) -> Lakehouse:
    """A lakehouse with the instance 'g': a path 1-2-3-4-5, node keys '1'..'5'."""
    root = tmp_path_factory.mktemp("imports")
    edges = root / "g.txt"
    edges.write_text("1 2\n2 3\n3 4\n4 5\n")
    lakehouse = Lakehouse(spark, str(root / "lakehouse"))
    lakehouse.replace_instance("g", social_instance(spark, SocialSpec(path=str(edges), directed=False)))
    return lakehouse


def run_rows(lakehouse: Lakehouse, table: S.TableSpec, run_id: str):
    """A run's rows of a table (none when no import has created the table yet)."""
    if not lakehouse.exists(table):
        return lakehouse.spark.createDataFrame([], table.schema)
    return lakehouse.read(table).filter(F.col(S.RUN_ID) == run_id)


@pytest.mark.parametrize("case", [c.param() for c in OVERLAY_IMPORT])
def test_overlay_import_refuses_or_quarantines(imported_into, tmp_path, case: Case):
    """A broken overlay file leaves its run failed with the error and no link or quarantined row
    stored; a file with bad rows stores the good links, and the run's row counts every row."""
    path = case.build(tmp_path)
    run_id = case.name
    lakehouse = imported_into
    argv = ("--lakehouse", lakehouse.root, "import-overlay", "--instance", "g", "--run-id", run_id)
    code, _, err = run_cli(*argv, "--path", str(path))
    run = lakehouse.run_row(run_id)
    links, quarantine = (run_rows(lakehouse, table, run_id) for table in (S.OVERLAY_EDGES, S.REJECTED_OVERLAY_EDGES))
    if isinstance(case.outcome, Refused):
        refused(code, err, path, case.outcome)
        assert run[S.STATUS] == S.FAILED and case.outcome.says in run[S.MESSAGE]
        assert (links.count(), quarantine.count()) == (0, 0)
        return
    expected = case.outcome
    assert code == 0, err[-3000:]
    counts = (run[S.STATUS], run[S.ROWS_READ], run[S.EDGES], run[S.REJECTED], run[S.DUPLICATES])
    assert counts == (S.COMPLETE, expected.read, expected.accepted, expected.rejected, expected.duplicates)
    assert links.count() == expected.accepted
    assert quarantine.count() == expected.rejected + expected.duplicates  # duplicates are quarantined too
    assert quarantine.filter(~F.is_valid_utf8(S.RECORD)).count() == 0


# Workflow and settings YAML (both stop before Spark starts) ----------------------------------


@pytest.mark.parametrize("case", [c.param() for c in WORKFLOW_YAML])
def test_workflow_file_is_refused_in_one_line(tmp_path, case: Case):
    path = case.build(tmp_path)
    root = tmp_path / "lakehouse"
    code, _, err = run_cli("--lakehouse", str(root), "workflow", str(path))
    refused(code, err, path, case.outcome)
    assert delta_tables(root) == []


@pytest.mark.parametrize("case", [c.param() for c in SETTINGS_YAML])
def test_settings_file_is_refused_in_one_line(request, tmp_path, case: Case):
    path = case.build(tmp_path)
    root = tmp_path / "lakehouse"
    if isinstance(case.outcome, Defaults):
        request.getfixturevalue("spark")  # `instances` runs on the session of the tests
    code, out, err = run_cli("--config", str(path), "--lakehouse", str(root), "instances")
    if isinstance(case.outcome, Defaults):
        assert (code, err) == (0, ""), err[-3000:]
        assert "no instances yet" in out
        return
    refused(code, err, path, case.outcome)
    assert delta_tables(root) == []
