"""The wheel a bundle deploys, installed apart from the source tree (the CI pass, `-m ci`): its
data files and conf/ packaged, and `bundle`, `workflow NAME` and `main` run from a folder where
the source tree is not importable."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

from tests.helpers import failure_excerpt, lab_command, python_env, run_cli

pytestmark = pytest.mark.ci
ROOT = Path(__file__).resolve().parent.parent
BUILD_IGNORED = (
    ".git",
    ".venv",
    ".jars",
    "build",
    "dist",
    "reports",
    "*.egg-info",
    "__pycache__",
    ".pytest_cache",
)


def build_ignored(folder: str, names: list[str]) -> set[str]:
    """What the build copy leaves out: `BUILD_IGNORED` anywhere, and the lakehouses at the top
    (conf/workflows/lakehouse_maintenance.yaml is a source file)."""
    ignored = set(shutil.ignore_patterns(*BUILD_IGNORED)(folder, names))
    return ignored | ({n for n in names if n.startswith("lakehouse")} if Path(folder) == ROOT else set())


def share_compiled_kernels(target: Path) -> int:
    """Give the installed modules the checkout's numba cache; the number of cache files copied.

    numba keys a kernel's cache by the folder of its source file and trusts it while that file's
    modification time and size are the same: the installed files are the checkout's byte for byte
    (the wheel was built from a copy of it), so with their times set to the checkout's they load
    the kernels the test run compiled already instead of compiling every kernel `main` needs again
    (this check took 255 s with them against 293 s without, alone on one core, 2026-12-07).
    """
    copied = 0
    for package in ("overlay", "routing", "pipelines"):
        for installed in (target / package).rglob("*.py"):
            source = ROOT / installed.relative_to(target)
            if not source.is_file() or source.read_bytes() != installed.read_bytes():
                continue
            stat = source.stat()
            os.utime(installed, ns=(stat.st_atime_ns, stat.st_mtime_ns))
            for cached in (source.parent / "__pycache__").glob(f"{source.stem}.*.nb[ic]"):
                (installed.parent / "__pycache__").mkdir(exist_ok=True)
                shutil.copy2(cached, installed.parent / "__pycache__" / cached.name)
                copied += 1
    return copied


def test_the_wheel_installed_apart_from_the_source_tree_runs(tmp_path):
    """What the bundle deploys: `pip wheel` of the project, with its data files and conf/, run from
    a folder where the source tree is not importable: `bundle`, `workflow NAME` and `main`."""
    # Built from a copy: setuptools writes build/ next to the sources it builds.
    source = tmp_path / "source"
    shutil.copytree(ROOT, source, ignore=build_ignored)
    wheels = tmp_path / "dist"
    subprocess.run(
        [sys.executable, "-m", "pip", "wheel", "--no-deps", "--quiet", "--wheel-dir", str(wheels), str(source)],
        check=True,
        capture_output=True,
        timeout=600,
    )
    (wheel,) = wheels.glob("overlay_lab-*.whl")
    with zipfile.ZipFile(wheel) as archive:
        names = archive.namelist()
        packaged_conf = {
            n.removeprefix("pipelines/conf/"): archive.read(n) for n in names if n.startswith("pipelines/conf/")
        }
    assert "pipelines/log4j2.properties" in names
    assert "pipelines/datasets/facebook_combined.txt.gz" in names
    conf = {p.relative_to(ROOT / "conf").as_posix(): p.read_bytes() for p in (ROOT / "conf").rglob("*") if p.is_file()}
    assert packaged_conf == conf  # every conf/ file, none missing or extra, byte for byte
    target = tmp_path / "site"
    subprocess.run(
        [sys.executable, "-m", "pip", "install", "--no-deps", "--quiet", "--target", str(target), str(wheel)],
        check=True,
        capture_output=True,
        timeout=600,
    )
    share_compiled_kernels(target)
    # An installed package looks for jars in `.jars/` next to it (here target/.jars) unless
    # $OVERLAY_LAB_JARS says where: here the checkout's, fetched by setup.
    env = python_env(PYTHONPATH=str(target), OVERLAY_LAB_JARS=str(ROOT / ".jars"))
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()

    def lab(*argv: str, timeout: int = 120) -> subprocess.CompletedProcess:
        return subprocess.run(
            lab_command(*argv),
            check=False,
            capture_output=True,
            text=True,
            env=env,
            cwd=elsewhere,
            timeout=timeout,
        )

    probe = "import pipelines.resources as r; print(r.__file__, r.INSTALLED, r.CONF_DIR, sep=chr(10))"
    where = subprocess.run(
        [sys.executable, "-c", probe], check=False, capture_output=True, text=True, env=env, cwd=elsewhere
    )
    module, installed, conf_dir = where.stdout.split()
    assert Path(module).is_relative_to(target) and not Path(module).is_relative_to(ROOT), where
    assert installed == "True" and conf_dir == str(target / "pipelines" / "conf"), where

    # bundle: the job rendered from the packaged conf, written under the cwd, is the checkout's
    # rendering (which test_bundle holds equal to the checked-in resources/ file).
    bundled = lab("bundle")
    assert bundled.returncode == 0, bundled.stderr[-3000:]
    in_checkout = tmp_path / "checkout.job.yml"
    assert run_cli("bundle", "--out", str(in_checkout))[0] == 0
    assert (elsewhere / "resources" / "overlay_refresh.job.yml").read_text() == in_checkout.read_text()
    assert lab("bundle", "--check").returncode == 0
    assert lab("bundle", "ktco_seeds", "--out", "ktco.yml").returncode == 0
    assert (elsewhere / "ktco.yml").read_text().startswith("# Generated from conf/workflows/ktco_seeds.yaml")
    assert not (target / "resources").exists()

    # workflow NAME, at the level of loading the packaged file (ktco_seeds runs ~6 min): an
    # unknown parameter is refused naming the shipped file's own parameters, before Spark starts.
    named = lab("workflow", "ktco_seeds", "--param", "no_such=1")
    assert named.returncode == 2 and "this workflow takes report_dir" in named.stderr, named.stderr[-3000:]
    unknown = lab("workflow", "no_such_workflow")
    assert unknown.returncode == 2 and "overlay_refresh" in unknown.stderr, unknown.stderr[-3000:]

    # main: the packaged main workflow, for real, on a 100-node sample (the full default sample
    # takes ~5 min; every step still runs: ingest from the packaged graph, designs, evaluate,
    # route, report).
    ran = lab(
        "--lakehouse",
        str(tmp_path / "lh"),
        "--master",
        "local[2]",
        "--driver-memory",
        "1g",
        "main",
        "--param",
        "instance=fb-100",
        "--param",
        "sample=100",
        "--param",
        "publications=20",
        timeout=1800,
    )
    assert ran.returncode == 0, failure_excerpt(ran)
    assert re.search(r"\[(\d+)/\1\] report: done", ran.stdout) and "fb-100.gpm.r0.2.local" in ran.stdout
    assert (elsewhere / "reports" / "overlay_refresh" / "report.md").is_file()
