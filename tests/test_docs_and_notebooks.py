"""The README documents every table and column; the notebooks run against a small lakehouse."""

import re
import runpy
from pathlib import Path

from overlay import schema as S
from overlay.instance.synthetic import SyntheticSpec, synthetic_instance

ROOT = Path(__file__).resolve().parent.parent


def test_readme_lists_every_table_and_column():
    readme = (ROOT / "README.md").read_text()
    section = readme[readme.index("## The tables"):]
    for table in S.ALL_TABLES:
        assert f"`{table.name}`" in section, table.name
        row = next(line for line in section.splitlines() if line.startswith("| ") and f"`{table.name}`" in line.split("|")[1])
        for column in table.columns:
            assert re.search(rf"(?<![A-Za-z_]){column}(?![A-Za-z_])", row), f"{table.name}.{column} missing from the README"


def test_instances_notebook_runs(spark, lakehouse, capsys, monkeypatch):
    lakehouse.replace_instance(
        "nb", synthetic_instance(spark, SyntheticSpec(dist="zipf", nodes=15, topics=10, min_subs=1, max_subs=3, seed=2))
    )
    monkeypatch.setenv("OVERLAY_LAB_LAKEHOUSE", lakehouse.root)
    monkeypatch.setenv("OVERLAY_LAB_INSTANCE", "nb")
    runpy.run_path(str(ROOT / "notebooks" / "instances_overview.py"), run_name="__main__")
    out = capsys.readouterr().out
    assert "nb" in out and "subscribers" in out and "reason" in out
