"""The generated reference pages (docs/reference/) are current: they equal a fresh rendering of the
CLI parser and of `overlay/schema.py` (no Spark needed)."""

import argparse

from overlay import schema as S
from pipelines import reference


def test_the_committed_reference_pages_are_current():
    stale = [str(path.relative_to(reference.ROOT)) for path in reference.stale_pages()]
    assert not stale, f"stale: {stale}; run `python -m pipelines.reference write` and commit the pages"


def test_the_check_names_a_stale_page_and_fails(tmp_path, capsys, monkeypatch):
    reference.write_pages(tmp_path)
    (tmp_path / "tables.md").write_text("old\n")
    assert [path.name for path in reference.stale_pages(tmp_path)] == ["tables.md"]
    monkeypatch.setattr(reference, "REFERENCE", tmp_path)
    monkeypatch.setattr(reference, "ROOT", tmp_path.parent)
    assert reference.main(["check"]) == 1
    assert "tables.md is stale" in capsys.readouterr().err


def test_the_table_page_names_every_table_and_column():
    page = reference.render_tables()
    for table in S.ALL_TABLES:
        section = page[page.index(f"### `{table.name}` {{#{table.name}}}") :]
        section = section[: section.find("\n### ", 1) if "\n### " in section[1:] else len(section)]
        for column in table.columns:
            assert f"| `{column}` |" in section, f"{table.name}.{column}"


def test_the_cli_page_walks_subcommands_at_any_depth():
    """A command with its own subcommands (as `runs show`, or `simulate feverfew`) gets a section
    each, with its arguments, choices and defaults; the global flags are listed once."""
    parser = argparse.ArgumentParser(prog="tool", description="A tool.")
    parser.add_argument("--verbose", action="store_true", help="say more")
    commands = parser.add_subparsers(dest="command")
    simulate = commands.add_parser("simulate", help="run a simulation")
    simulate.add_argument("--verbose", action="store_true", help="say more")
    protocols = simulate.add_subparsers(dest="protocol")
    feverfew = protocols.add_parser("feverfew", help="gossip cycles")
    feverfew.add_argument("--cycles", type=int, default=40, help="how many cycles")
    feverfew.add_argument("--pss", choices=("cyclon", "uniform"), default="cyclon")
    variants = feverfew.add_subparsers(dest="variant")
    variants.add_parser("live", help="the live variant")
    page = reference.render_cli(parser)
    assert "### `simulate feverfew` {#simulate-feverfew}" in page
    assert "#### `simulate feverfew live` {#simulate-feverfew-live}" in page
    assert "| `--cycles CYCLES` | how many cycles |  | `40` |" in page
    assert "| `--pss {cyclon,uniform}` |  | `cyclon`, `uniform` | `cyclon` |" in page
    assert page.count("say more") == 1
