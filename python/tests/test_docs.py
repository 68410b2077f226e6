"""Docs that hold: every relative link in README.md and docs/**/*.md names a file in the repo,
every Scaladoc link in the connector's sources names something they define, and every Python
block there is found, runnable or marked (test_packaging.py runs the
runnable ones from the wheel in a clean venv, test_connect.py the Connect one)."""

from __future__ import annotations

import re
from dataclasses import dataclass
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


# -- Python blocks: run here, run elsewhere, or marked as fragments -----------------------------
#
# A ```python block in README.md or docs/ is run by test_packaging.py from the wheel in a clean
# venv (the blocks of one page in order, as one script, in a temporary working directory),
# unless an HTML comment on the line before it says otherwise (docs/development.md, "Docs
# that run"):
#   <!-- docs-test: fragment (why) -->   not runnable on its own, so not run
#   <!-- docs-test: connect (...) -->    run by test_connect.py on a Spark Connect client
MARKER = re.compile(r"^<!-- docs-test: (fragment|connect)\b.*-->$")
FENCE = re.compile(r"^```([\w+-]*)\s*$")


@dataclass(frozen=True)
class Block:
    page: Path
    line: int  # of the opening fence
    lang: str
    marker: str | None  # None: run by this module
    code: str


def code_blocks(page: Path) -> list[Block]:
    """Every fenced block of ``page`` with its language and the marker before it."""
    lines = page.read_text().splitlines()
    blocks, i = [], 0
    while i < len(lines):
        fence = FENCE.match(lines[i])
        if not fence:
            i += 1
            continue
        j = i + 1
        while j < len(lines) and lines[j].strip() != "```":
            j += 1
        before = next((x.strip() for x in reversed(lines[:i]) if x.strip()), "")
        marker = MARKER.match(before)
        blocks.append(
            Block(page, i + 1, fence[1], marker[1] if marker else None, "\n".join(lines[i + 1 : j]))
        )
        i = j + 1
    return blocks


def python_blocks(marker: str | None = None) -> list[Block]:
    """The ```python blocks of README.md and docs/ that carry ``marker`` (None: the runnable
    ones, run from the wheel by test_packaging.py)."""
    pages = [ROOT / "README.md", *sorted((ROOT / "docs").rglob("*.md"))]
    return [
        b
        for p in pages
        for b in code_blocks(p)
        if b.lang in ("python", "py") and b.marker == marker
    ]


def test_python_looks_like_python_only_in_python_blocks() -> None:
    """An untagged block that holds Python would escape the checks below."""
    pages = [ROOT / "README.md", *sorted((ROOT / "docs").rglob("*.md"))]
    untagged = [
        f"{b.page.relative_to(ROOT)}:{b.line}"
        for p in pages
        for b in code_blocks(p)
        if not b.lang and re.match(r"\s*(from \w|import \w|spark\.|df\.|delta_replay\.)", b.code)
    ]
    assert not untagged, untagged
    assert python_blocks(), "no Python block found: the extraction is broken"
    assert python_blocks("connect") and python_blocks("fragment")


def test_the_marker_parser(tmp_path: Path) -> None:
    page = tmp_path / "p.md"
    page.write_text(
        "text\n\n```python\na = 1\n```\n\n<!-- docs-test: fragment (why) -->\n```python\nb\n```\n"
        "<!-- docs-test: connect -->\n\n```python\nc\n```\n```\nplain\n```\n"
    )
    found = [(b.lang, b.marker, b.code, b.line) for b in code_blocks(page)]
    assert found == [
        ("python", None, "a = 1", 3),
        ("python", "fragment", "b", 8),
        ("python", "connect", "c", 13),
        ("", None, "plain", 16),
    ]


SCALA_MAIN = ROOT / "connector" / "src" / "main" / "scala"
ROOMS = {p.name for p in (SCALA_MAIN / "io" / "deltareplay" / "internal").iterdir() if p.is_dir()}


def dangling_scaladoc_links(root: Path = SCALA_MAIN) -> list[str]:
    """``[[Name]]`` links in the Scala sources whose names the sources do not define (a class,
    object, trait, def, val, type or constructor parameter of that name); links into Spark, Java or
    Scala are not checked. Scaladoc itself would say so only when the docs are built."""
    texts = {p: p.read_text() for p in root.rglob("*.scala")}
    kinds = r"\b(?:class|object|trait|def|val|var|type)\s+([A-Za-z_]\w*)"
    params = r"[(,]\s*(?:val\s+|var\s+)?([a-z]\w*)\s*:"
    defined = {n for t in texts.values() for n in re.findall(kinds, t) + re.findall(params, t)}
    dangling = []
    for path, text in texts.items():
        for match in re.finditer(r"\[\[([^\]\s|]+)", text):
            target = match.group(1)
            if re.match(r"(org|java|javax|scala|com)\.", target):
                continue
            names = re.split(r"[.#]", target.removeprefix("io.deltareplay."))
            names = [n.split("(")[0].rstrip("$") for n in names if n and n != "internal"]
            if any(n not in defined and n not in ROOMS for n in names):
                line = text[: match.start()].count("\n") + 1
                dangling.append(f"{path.relative_to(root)}:{line}: [[{target}]]")
    return dangling


def test_scaladoc_links_name_what_the_sources_define(tmp_path: Path) -> None:
    assert dangling_scaladoc_links() == []
    probe = tmp_path / "P.scala"
    probe.write_text(
        "/** See [[Here]], [[Here.apply]], [[org.apache.spark.sql.Row]] and [[Gone]]. */\n"
        "object Here { def apply(x: Int): Int = x }\n"
    )
    assert dangling_scaladoc_links(tmp_path) == ["P.scala:1: [[Gone]]"]
