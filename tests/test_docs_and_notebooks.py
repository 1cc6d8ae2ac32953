"""The links between the pages resolve, and so do the code's citations of them (the table and CLI
references are checked current in test_reference.py; the notebooks run in test_workflow_run.py)."""

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def _anchors(markdown: str) -> set[str]:
    """The anchors of a page's headings: an explicit `{#id}`, else GitHub's slug of the text."""
    anchors = set()
    for heading in re.findall(r"^#+\s+(.*)$", re.sub(r"```.*?```", "", markdown, flags=re.S), re.M):
        explicit = re.search(r"\{#([\w-]+)\}\s*$", heading)
        text = re.sub(r"[`*_]", "", heading.lower())
        anchors.add(explicit.group(1) if explicit else re.sub(r"[^\w\- ]", "", text).strip().replace(" ", "-"))
    return anchors


def test_every_link_between_the_pages_resolves():
    """A page moved or a heading renamed must not leave a link to nowhere (README, CHANGELOG, docs/**)."""
    pages = [ROOT / "README.md", ROOT / "CHANGELOG.md", *sorted((ROOT / "docs").rglob("*.md"))]
    broken = []
    for page in pages:
        for target in re.findall(r"\]\(([^)\s]+)\)", page.read_text()):
            if target.startswith(("http://", "https://", "mailto:")):
                continue
            path, _, anchor = target.partition("#")
            linked = (page.parent / path).resolve() if path else page
            if not linked.exists():
                broken.append(f"{page.relative_to(ROOT)}: {target} (no such file)")
            elif anchor and linked.suffix == ".md" and anchor not in _anchors(linked.read_text()):
                broken.append(f"{page.relative_to(ROOT)}: {target} (no such heading)")
    assert not broken, broken


def test_every_docs_citation_in_the_code_resolves():
    """A docstring or comment citing a page's sections (`docs/readings/rappel.md#join, #rejoin`) names a page
    and headings that exist: the code's specification stays inside the repository."""
    broken = []
    for folder in ("overlay", "pipelines", "routing", "benchmarks", "tests"):
        for source in sorted((ROOT / folder).rglob("*.py")):
            for path, anchors in re.findall(r"(docs/[\w/-]+\.md)((?:#[\w-]+)(?:,\s+#[\w-]+)*)?", source.read_text()):
                page = ROOT / path
                if not page.exists():
                    broken.append(f"{source.relative_to(ROOT)}: {path} (no such file)")
                    continue
                known = _anchors(page.read_text())
                broken += [
                    f"{source.relative_to(ROOT)}: {path}#{a} (no such heading)"
                    for a in re.findall(r"#([\w-]+)", anchors)
                    if a not in known
                ]
    assert not broken, broken


def test_the_workflows_page_names_every_step_command_and_shipped_workflow():
    """A command a step may run, or a workflow in conf/workflows/, added without a word on the
    workflows page leaves users guessing: the page lists each."""
    from pipelines.workflow.spec import STEP_COMMANDS

    page = (ROOT / "docs" / "operations" / "workflows.md").read_text()
    missing = [f"step command {c}" for c in STEP_COMMANDS if f"`{c}`" not in page]
    missing += [
        f"workflow {p.name}"
        for p in sorted((ROOT / "conf" / "workflows").glob("*.yaml"))
        if f"conf/workflows/{p.name}" not in page
    ]
    assert not missing, missing
