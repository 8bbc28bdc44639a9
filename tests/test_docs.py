"""The docs in the repository hold together: every relative link resolves (file and anchor),
nothing points to design notes that live outside the repository, the code's pointers into
docs/ name sections that exist, and the README opens with the two commands."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from seer.data.records import FIELDS

ROOT = Path(__file__).resolve().parent.parent
DOCS = sorted((ROOT / "docs").glob("*.md"))
PAGES = [ROOT / "README.md", *DOCS]
LINK = re.compile(r"\[[^\]]*\]\(([^)\s]+)\)")
FENCE = re.compile(r"^```.*?^```", re.S | re.M)
# the notes that were never in the repository (spelt in two parts so this file does not match)
OUTSIDE = re.compile(r"\b(?:DESIGN|REFERENCE)" + r"\.md\b")
SCANNED = ("seer", "cudnn_bench", "tests", "tools", "docs", "fits", ".ci")
SCANNED_FILES = ("README.md", "Makefile", "pyproject.toml", "data/README.md", "cudnn_bench/GPU_RUN.md")


def slug(heading: str) -> str:
    """GitHub's anchor for a heading: lower case, punctuation dropped, spaces to hyphens."""
    text = re.sub(r"[`*]", "", heading.strip().lower())
    return re.sub(r"[^\w\- ]", "", text).replace(" ", "-")


def headings(page: Path) -> list[str]:
    text = FENCE.sub("", page.read_text())
    return [m.group(1) for m in re.finditer(r"^#{1,6}\s+(.+?)\s*#*$", text, re.M)]


def links(page: Path) -> list[str]:
    return LINK.findall(FENCE.sub("", page.read_text()))


def test_the_docs_exist():
    assert {p.name for p in DOCS} >= {"model.md", "data.md", "harness.md", "results.md", "reference.md"}


@pytest.mark.parametrize("page", PAGES, ids=lambda p: p.name)
def test_every_relative_link_resolves(page):
    found = links(page)
    assert found, f"{page.name} links to nothing"
    for target in found:
        if re.match(r"[a-z]+:", target):  # http:, https:, mailto:
            continue
        path, _, anchor = target.partition("#")
        dest = (page.parent / path).resolve() if path else page
        assert dest.exists(), f"{page.name}: link to {target!r}: no such file"
        assert ROOT in dest.parents or dest == ROOT, f"{page.name}: {target!r} leaves the repository"
        if anchor:
            assert dest.suffix == ".md", f"{page.name}: anchor into a non-Markdown file: {target!r}"
            anchors = {slug(h) for h in headings(dest)}
            assert anchor in anchors, f"{page.name}: {target!r}: no heading gives #{anchor} in {dest.name}"


def test_the_link_checker_can_fail(tmp_path):
    page = tmp_path / "p.md"
    page.write_text("# A title\n\n[x](p.md#a-title) [y](p.md#nope)\n")
    assert slug("A title") == "a-title" and slug("The `seer` model: B_max") == "the-seer-model-b_max"
    assert {slug(h) for h in headings(page)} == {"a-title"} and links(page) == ["p.md#a-title", "p.md#nope"]


def _text_files():
    for name in SCANNED:
        for p in sorted((ROOT / name).rglob("*")):
            if p.is_file() and p.suffix in {".py", ".md", ".json", ".toml", ".sh", ".txt", ""}:
                yield p
    for name in SCANNED_FILES:
        if (ROOT / name).exists():
            yield ROOT / name


def test_nothing_points_to_notes_outside_the_repository():
    hits = [
        f"{p.relative_to(ROOT)}:{i}"
        for p in _text_files()
        if "__pycache__" not in p.parts
        for i, line in enumerate(p.read_text(errors="replace").splitlines(), 1)
        if OUTSIDE.search(line)
    ]
    assert not hits, "points to notes outside the repository (use docs/): " + ", ".join(hits[:10])


# "docs/reference.md, GPU specifications" or "docs/results.md (Metrics)" in code and comments
SECTION_REF = re.compile(r"docs/(\w+)\.md(?:,\s*|\s*\()(?:the\s+)?([A-Za-z][\w +-]*[\w+])")


def _norm(heading: str) -> str:
    return re.sub(r"^the\s+", "", heading.strip().lower())


def test_sections_the_code_cites_exist():
    cited = 0
    for p in _text_files():
        if p.suffix != ".py" or "__pycache__" in p.parts:
            continue
        for m in SECTION_REF.finditer(p.read_text()):
            page = ROOT / "docs" / f"{m.group(1)}.md"
            assert page.exists(), f"{p.relative_to(ROOT)} cites {page.name}, which does not exist"
            names = {_norm(h) for h in headings(page)}
            assert _norm(m.group(2)) in names, f"{p.relative_to(ROOT)} cites {m.group(0)!r}: no such section"
            cited += 1
    assert cited >= 10  # the pattern finds the code's citations


def test_the_readme_opens_with_the_two_commands():
    first = "\n".join((ROOT / "README.md").read_text().splitlines()[:8])
    assert "make run" in first and "make test" in first


def test_the_data_page_lists_every_record_column():
    text = (ROOT / "docs" / "data.md").read_text()
    missing = [f.name for f in FIELDS if f"| `{f.name}` |" not in text]
    assert not missing, f"docs/data.md lacks record columns {missing}"
