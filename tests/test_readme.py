"""The README's promises a newcomer acts on: its Python tour runs as written on an active
session, its length, and no dated notes."""

from __future__ import annotations

import re
from pathlib import Path

from overlay import schema as S

ROOT = Path(__file__).resolve().parent.parent
README = (ROOT / "README.md").read_text()


def test_the_python_tour_runs_as_written(spark, monkeypatch, tmp_path, capsys):
    """The notebook example, on the tests' session (the active one, as in a notebook), in a fresh
    folder: it ingests, designs and prints the run's TcoSuppR twice, from the run row and from the
    library's own component count."""
    (block,) = re.findall(r"```python\n(.*?)```", README, flags=re.S)
    monkeypatch.chdir(tmp_path)
    exec(compile(block, "README.md", "exec"), {})
    printed = capsys.readouterr().out.split("\n")
    run_id, edges, support = printed[-3].split()
    assert run_id == "zipf-300.gpm.d4.s1" and int(edges) > 0
    assert float(printed[-2]) == float(support) and 0 < float(support) <= 1
    assert (tmp_path / "lakehouse" / S.OVERLAY_RUNS.name).is_dir()


def test_the_readme_is_short_and_undated():
    assert len(README.splitlines()) <= 400
    assert not re.search(r"\b20\d\d-\d\d-\d\d\b", README), "a dated note"
    assert not re.search(r"\b[0-9a-f]{7,40}\b", README.replace("0.9965", "")), "a commit hash"
