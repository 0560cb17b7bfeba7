"""The README is a newcomer's guide and docs/ the reference it points to: every link in them leads
somewhere, the README stays short, and the source layout in docs/architecture.md names every module."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
DOCS = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md")), ROOT / "deploy" / "README.md"]


def _anchor(heading: str) -> str:
    """GitHub's anchor of a Markdown heading."""
    text = heading.lstrip("#").strip().lower().replace("`", "")
    return re.sub(r"[^\w\- ]", "", text).replace(" ", "-")


def _anchors(path: Path) -> set[str]:
    found, in_code = set(), False
    for line in path.read_text(encoding="utf-8").splitlines():
        if line.startswith("```"):
            in_code = not in_code
        elif not in_code and re.match(r"#{1,6} ", line):
            found.add(_anchor(line))
    return found


@pytest.mark.parametrize("doc", DOCS, ids=[str(d.relative_to(ROOT)) for d in DOCS])
def test_every_link_leads_to_a_file_and_heading_that_exist(doc):
    broken = []
    for target in re.findall(r"\]\(([^)\s]+)\)", doc.read_text(encoding="utf-8")):
        if target.startswith(("http://", "https://", "mailto:")):
            continue
        path, _, anchor = target.partition("#")
        destination = (doc.parent / path).resolve() if path else doc
        if not destination.exists():
            broken.append(f"{target}: no such file")
        elif anchor and destination.suffix == ".md" and anchor not in _anchors(destination):
            broken.append(f"{target}: no such heading")
    assert not broken, broken


def test_the_readme_is_a_guide_not_a_reference():
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    assert len(readme.splitlines()) <= 300
    for needed in (
        "## Quick start",
        "## Input and output",
        "## Running the stream",
        "## Use from Python",
        "## Running the tests",
        "## Reference",
    ):
        assert needed in readme, needed
    listed = set(re.findall(r"\(docs/([\w-]+\.md)\)", readme[readme.index("## Reference") :]))
    assert listed == {p.name for p in (ROOT / "docs").glob("*.md")}, "the Reference table lists every doc"


def test_the_layout_names_every_module():
    architecture = (ROOT / "docs" / "architecture.md").read_text(encoding="utf-8")
    layout = architecture[architecture.index("## Layout") :]
    modules = [
        path
        for path in sorted((ROOT / "stream_lsh").rglob("*.py"))
        if path.name != "__main__.py" and (path.name != "__init__.py" or path.parent.name == "stream_lsh")
    ]
    missing = [
        str(p.relative_to(ROOT)) for p in modules if not re.search(rf"\b{re.escape(p.name)}\b", layout)
    ]
    assert not missing, f"docs/architecture.md's Layout does not name {missing}"
