"""Where the shipped settings and workflow files are, with or without a checkout.

`conf/` lives at the top of the repository; the wheel build (`setup.py`) copies it into the
package as `pipelines/conf/`. An installed wheel reads that copy; a checkout or an editable
install reads `conf/` itself. (The JVM jars are found apart from this: `pipelines/jars.py`.)
"""

from __future__ import annotations

from pathlib import Path

from overlay.errors import InputError
from pipelines.jars import PROJECT_ROOT

PACKAGED_CONF = Path(__file__).resolve().parent / "conf"
INSTALLED = PACKAGED_CONF.is_dir()  # a wheel's install: no checkout to read conf/ from
CONF_DIR = PACKAGED_CONF if INSTALLED else PROJECT_ROOT / "conf"
WORKFLOWS_DIR = CONF_DIR / "workflows"


def shipped_workflows() -> list[str]:
    return sorted(p.stem for p in WORKFLOWS_DIR.glob("*.yaml"))


def find_workflow(given: str) -> Path:
    """The file as given when it exists, else the shipped workflow it names (`ktco_seeds`,
    `ktco_seeds.yaml` or `conf/workflows/ktco_seeds.yaml`): the README's commands then work from
    an installed wheel too."""
    path = Path(given)
    if path.is_file():
        return path
    if path.is_dir():
        raise InputError(f"workflow file {given} is a folder; give a workflow YAML file or a shipped one's name")
    if path.parent in (Path("."), Path("conf/workflows")):
        shipped = WORKFLOWS_DIR / (path.name if path.suffix == ".yaml" else f"{path.name}.yaml")
        if shipped.is_file():
            return shipped
    raise InputError(
        f"workflow file {given} does not exist, and it names no shipped workflow; "
        f"shipped ({WORKFLOWS_DIR}): {', '.join(shipped_workflows()) or 'none'}"
    )


def source_name(path: Path) -> str:
    """How a rendered job names its workflow: `conf/...` for a shipped file, wherever the package
    is, so a checkout's committed job and an installed package's rendering are the same text."""
    path = path.resolve()
    if path.is_relative_to(CONF_DIR):
        return (Path("conf") / path.relative_to(CONF_DIR)).as_posix()
    if not INSTALLED and path.is_relative_to(PROJECT_ROOT):
        return path.relative_to(PROJECT_ROOT).as_posix()
    return str(path)


def bundle_root() -> Path:
    """Where `bundle` writes `resources/` by default: the checkout; without one, the current folder."""
    return Path.cwd() if INSTALLED else PROJECT_ROOT
