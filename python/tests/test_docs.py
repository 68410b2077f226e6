"""Docs that hold: every relative link in README.md and docs/**/*.md names a file in the repo."""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
# [text](target) and ![alt](target); the target up to a space or ')'
LINK = re.compile(r"!?\[[^\]]*\]\(([^)\s]+)(?:\s+\"[^\"]*\")?\)")


def _pages() -> list[Path]:
    pages = [ROOT / "README.md", *sorted((ROOT / "docs").rglob("*.md"))]
    pages += sorted((ROOT / "benchmarks").rglob("*.md"))
    return pages


def broken_links(page: Path, root: Path = ROOT) -> list[str]:
    broken = []
    text = re.sub(r"```.*?```", "", page.read_text(), flags=re.S)  # code blocks are not links
    for target in LINK.findall(text):
        if re.match(r"^[a-z][a-z0-9+.-]*:", target) or target.startswith("#"):
            continue  # an absolute URL or an anchor in the same page
        path = target.split("#", 1)[0]
        resolved = (page.parent / path).resolve()
        if not resolved.exists() or root not in resolved.parents:
            broken.append(target)
    return broken


def test_every_relative_link_resolves() -> None:
    pages = _pages()
    assert len(pages) >= 10
    found = {str(p.relative_to(ROOT)): broken_links(p) for p in pages}
    assert {page: links for page, links in found.items() if links} == {}


def test_the_checker_finds_a_broken_link(tmp_path: Path) -> None:
    page = tmp_path / "page.md"
    page.write_text("[ok](page.md) [gone](nope.md) ![img](missing.png) [web](https://x.org)\n")
    assert broken_links(page, root=tmp_path) == ["nope.md", "missing.png"]
