"""A fixture folder built once per source tree (`tests/built_once.py`): reused by a later session
of the same tree with its paths moved, built again after any source edit."""

from __future__ import annotations

import pytest

from tests import built_once as B


@pytest.fixture
def tree(tmp_path, monkeypatch):
    """A source tree of two files and an empty store, in place of the checkout's."""
    root = tmp_path / "checkout"
    (root / "overlay").mkdir(parents=True)
    (root / "overlay" / "a.py").write_text("A = 1\n")
    (root / "overlay" / "__pycache__").mkdir()
    (root / "overlay" / "__pycache__" / "a.nbi").write_text("numba's, not a source")
    monkeypatch.setattr(B, "ROOT", root)
    monkeypatch.setattr(B, "STORE", root / ".pytest_cache" / "built")
    monkeypatch.setattr(B, "SOURCES", ("overlay",))
    monkeypatch.setattr(B, "SOURCE_FILES", ())
    return root


def counting_build(calls: list):
    def build(folder):
        calls.append(folder)
        (folder / "data").mkdir()
        (folder / "data" / "rows.txt").write_text(f"built in {folder}\n")
        return {"argv": ["--lakehouse", str(folder / "data")], "first": [0, f"Report: {folder}/report.md", ""]}

    return build


def test_a_later_session_copies_the_build_and_moves_its_paths(tree, tmp_path):
    calls: list = []
    first, second = tmp_path / "session1", tmp_path / "session2"
    first.mkdir(), second.mkdir()
    record = B.built_once("x", first, counting_build(calls))
    again = B.built_once("x", second, counting_build(calls))
    assert calls == [first]
    assert record["argv"] == ["--lakehouse", f"{first}/data"]
    assert again == {"argv": ["--lakehouse", f"{second}/data"], "first": [0, f"Report: {second}/report.md", ""]}
    assert (second / "data" / "rows.txt").read_text() == f"built in {first}\n"  # the files' bytes are the build's


def test_a_source_edit_builds_again_and_drops_the_old_copy(tree, tmp_path):
    calls: list = []
    folders = [tmp_path / f"session{i}" for i in range(3)]
    for folder in folders:
        folder.mkdir()
    B.built_once("x", folders[0], counting_build(calls))
    (tree / "overlay" / "__pycache__" / "a.nbi").write_text("recompiled")  # not a source: same key
    B.built_once("x", folders[1], counting_build(calls))
    (tree / "overlay" / "a.py").write_text("A = 2\n")
    B.built_once("x", folders[2], counting_build(calls))
    assert calls == [folders[0], folders[2]]
    assert [p.name for p in (B.STORE / "x").iterdir()] == [B.source_key("x")]
