"""A session fixture's folder built once per source tree, shared by the test passes that follow.

`.ci/run` runs the default pass, then the CI pass, in two pytest sessions of the same checkout:
both need the `refreshed` lakehouse (the tiny workflow run through the CLI, about four minutes of
one worker). The first session to build it stores a copy under `.pytest_cache/built/`, keyed by
the bytes of everything that can change what it holds (the lab's packages, conf/, the tests'
helpers and workflow files, the Python, PySpark and jar versions); a later session of the same
tree copies it into its own temporary folder instead of building it again. Any edit to those
files changes the key, so a stale copy is never used; the folder keeps the latest key only.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import sys
from collections.abc import Callable
from importlib.metadata import version
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
STORE = ROOT / ".pytest_cache" / "built"
SOURCES = ("overlay", "routing", "pipelines", "conf", "tests/workflows")
SOURCE_FILES = ("tests/conftest.py", "tests/helpers.py", "tests/built_once.py", "pyproject.toml")
SKIPPED_SUFFIXES = (".pyc", ".nbi", ".nbc")


def source_key(name: str) -> str:
    """The hash of what a build named `name` depends on."""
    digest = hashlib.sha256(f"{name}\n{sys.version}\n{version('pyspark')}\n{version('delta-spark')}\n".encode())
    files = [ROOT / f for f in SOURCE_FILES]
    for folder in SOURCES:
        files += [p for p in (ROOT / folder).rglob("*") if p.is_file() and "__pycache__" not in p.parts]
    jars = ROOT / ".jars"
    for path in sorted(files):
        if path.suffix in SKIPPED_SUFFIXES:
            continue
        digest.update(f"{path.relative_to(ROOT).as_posix()}\n".encode())
        digest.update(path.read_bytes())
    for jar in sorted(jars.rglob("*.jar")) if jars.is_dir() else ():
        digest.update(f"{jar.name}:{jar.stat().st_size}\n".encode())
    return digest.hexdigest()[:24]


def built_once(name: str, folder: Path, build: Callable[[Path], dict]) -> dict:
    """`build(folder)` fills `folder` and returns a JSON-able record (strings may name the
    folder); or, when this source tree built it before, the stored copy lands in `folder` and
    the record comes back with the old folder's path replaced by this one."""
    key = source_key(name)
    stored = STORE / name / key
    if (stored / "record.json").is_file():
        shutil.copytree(stored / "tree", folder, dirs_exist_ok=True)
        saved = json.loads((stored / "record.json").read_text())
        record = _moved(saved["record"], saved["resolved"], str(folder.resolve()))
        return _moved(record, saved["folder"], str(folder))
    record = build(folder)
    _store(name, key, folder, record)
    return record


def _moved(value, old: str, new: str):
    if isinstance(value, str):
        return value.replace(old, new)
    if isinstance(value, list):
        return [_moved(v, old, new) for v in value]
    if isinstance(value, dict):
        return {k: _moved(v, old, new) for k, v in value.items()}
    return value


def _store(name: str, key: str, folder: Path, record: dict) -> None:
    """Copy the build under a temporary name, then rename it into place (two sessions storing at
    once: the second finds it there and drops its copy); older keys of `name` go."""
    partial = STORE / name / f".{key}.{os.getpid()}"
    shutil.rmtree(partial, ignore_errors=True)
    shutil.copytree(folder, partial / "tree")
    (partial / "record.json").write_text(
        json.dumps({"folder": str(folder), "resolved": str(folder.resolve()), "record": record})
    )
    try:
        partial.rename(STORE / name / key)
    except OSError:  # stored meanwhile by another session
        shutil.rmtree(partial, ignore_errors=True)
    for other in (STORE / name).iterdir():
        if other.name != key and not other.name.startswith("."):
            shutil.rmtree(other, ignore_errors=True)
