"""docs/tables.md documents every table and column (the notebooks run in test_workflow_run.py)."""

import re
from pathlib import Path

from overlay import schema as S

ROOT = Path(__file__).resolve().parent.parent


def test_the_docs_list_every_table_and_column():
    readme = (ROOT / "docs" / "tables.md").read_text()
    section = readme[readme.index("# The tables"):]
    for table in S.ALL_TABLES:
        assert f"`{table.name}`" in section, table.name
        row = next(line for line in section.splitlines() if line.startswith("| ") and f"`{table.name}`" in line.split("|")[1])
        for column in table.columns:
            assert re.search(rf"(?<![A-Za-z_]){column}(?![A-Za-z_])", row), f"{table.name}.{column} missing from docs/tables.md"
