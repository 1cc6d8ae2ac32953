"""The one build step pyproject.toml cannot say: ship the top-level `conf/` inside the package.

`conf/` stays at the top of the repository (one copy in the source tree); the wheel carries it as
`pipelines/conf/`, where an installed package finds it (`pipelines/resources.py`). An editable
install reads `conf/` in place, so nothing is copied then. `MANIFEST.in` puts `conf/` in sdists.
"""

import os
import shutil
from pathlib import Path

from setuptools import setup
from setuptools.command.build_py import build_py

CONF = Path(__file__).resolve().parent / "conf"
PACKAGED_CONF = ("pipelines", "conf")


def conf_files() -> list[str]:
    """Every file under `conf/`, relative to it (all of them ship: the test compares the trees)."""
    if not CONF.is_dir():
        raise SystemExit(f"setup.py: {CONF} is missing; build from a checkout or an sdist that has conf/")
    return sorted(p.relative_to(CONF).as_posix() for p in CONF.rglob("*") if p.is_file())


def conf_outputs(build_lib: str) -> dict[str, str]:
    """Each conf file's place in the build tree -> its source."""
    return {os.path.join(build_lib, *PACKAGED_CONF, *name.split("/")): str(CONF / name) for name in conf_files()}


class BuildPyWithConf(build_py):
    def run(self) -> None:
        super().run()
        if self.editable_mode:
            return
        # A reused build/ may hold files since removed from conf/: start from an empty folder.
        shutil.rmtree(os.path.join(self.build_lib, *PACKAGED_CONF), ignore_errors=True)
        for target, source in conf_outputs(self.build_lib).items():
            self.mkpath(os.path.dirname(target))
            self.copy_file(source, target, preserve_mode=False)

    def get_outputs(self, include_bytecode: bool = True) -> list[str]:
        outputs = super().get_outputs(include_bytecode)
        return outputs if self.editable_mode else [*outputs, *conf_outputs(self.build_lib)]


if __name__ == "__main__":  # as setuptools runs it; tests import it to check the copy
    setup(cmdclass={"build_py": BuildPyWithConf})
