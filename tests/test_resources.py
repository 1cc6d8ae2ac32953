"""The shipped conf/: the wheel build copies all of it into the package, a checkout reads it in
place, and `workflow` / `bundle` take a shipped workflow by name. (The wheel itself is built and
run apart from the source tree in tests/test_cluster_path.py, `-m ci`.)"""

import importlib.util
from pathlib import Path

import pytest

from overlay.errors import InputError
from pipelines import cli, config, resources
from tests.helpers import run_cli

ROOT = Path(__file__).resolve().parent.parent
CONF = ROOT / "conf"


def tree(folder: Path) -> dict[str, bytes]:
    return {p.relative_to(folder).as_posix(): p.read_bytes() for p in sorted(folder.rglob("*")) if p.is_file()}


def build_hook():
    """setup.py's build_py command, imported without running setup()."""
    spec = importlib.util.spec_from_file_location("overlay_lab_setup", ROOT / "setup.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module.BuildPyWithConf


def run_build_py(build_lib: Path, editable: bool) -> None:
    from setuptools.dist import Distribution

    command = build_hook()(Distribution({"name": "overlay-lab", "packages": []}))
    command.initialize_options()
    command.build_lib = str(build_lib)
    command.editable_mode = editable
    command.finalize_options()
    command.run()


def test_the_build_copies_every_conf_file_into_the_package_unchanged(tmp_path):
    (tmp_path / "pipelines" / "conf").mkdir(parents=True)
    (tmp_path / "pipelines" / "conf" / "removed.yaml").write_text("stale: a file since removed from conf/\n")
    run_build_py(tmp_path, editable=False)
    packaged = tree(tmp_path / "pipelines" / "conf")
    assert "lab.yaml" in packaged and "workflows/overlay_refresh.yaml" in packaged
    assert packaged == tree(CONF)  # same names (none missing, none extra), same bytes


def test_an_editable_build_copies_nothing(tmp_path):
    run_build_py(tmp_path, editable=True)
    assert not (tmp_path / "pipelines" / "conf").exists()


def test_a_checkout_reads_the_top_level_conf():
    assert not resources.INSTALLED and not (ROOT / "pipelines" / "conf").exists()  # no second copy
    assert resources.CONF_DIR == CONF
    assert config.DEFAULT_CONFIG_FILE == CONF / "lab.yaml"
    assert cli.DEFAULT_WORKFLOW == CONF / "workflows" / "overlay_refresh.yaml"


@pytest.mark.parametrize("given", ["ktco_seeds", "ktco_seeds.yaml", "conf/workflows/ktco_seeds.yaml"])
def test_a_shipped_workflow_is_found_by_name_from_any_folder(given, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    assert resources.find_workflow(given) == CONF / "workflows" / "ktco_seeds.yaml"
    assert resources.source_name(resources.find_workflow(given)) == "conf/workflows/ktco_seeds.yaml"


def test_a_file_that_exists_wins_over_the_shipped_name(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "ktco_seeds.yaml").write_text("name: mine\n")
    assert resources.find_workflow("ktco_seeds.yaml") == Path("ktco_seeds.yaml")
    assert resources.source_name(tmp_path / "ktco_seeds.yaml") == str(tmp_path / "ktco_seeds.yaml")


def test_an_unknown_workflow_lists_the_shipped_ones():
    with pytest.raises(InputError) as raised:
        resources.find_workflow("overlay_refersh")
    for path in (CONF / "workflows").glob("*.yaml"):
        assert path.stem in str(raised.value)
    code, _out, err = run_cli("workflow", "no/such/flow.yaml")  # fails before Spark starts
    assert code == 2 and "overlay_refresh" in err and "ktco_seeds" in err


def test_bundle_renders_a_shipped_workflow_given_by_name(tmp_path):
    by_name, by_default = tmp_path / "by_name.yml", tmp_path / "by_default.yml"
    for argv in (["overlay_refresh", "--out", str(by_name)], ["--out", str(by_default)]):
        code, _out, err = run_cli("bundle", *argv)
        assert code == 0, err
    assert by_name.read_text() == by_default.read_text()
    assert by_name.read_text().startswith("# Generated from conf/workflows/overlay_refresh.yaml")
