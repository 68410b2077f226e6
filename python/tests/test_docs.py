"""Docs that hold: every relative link in README.md and docs/**/*.md names a file in the repo,
and every Python block there runs (here or in test_connect.py) or is marked as a fragment."""

from __future__ import annotations

import contextlib
import io
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from pyspark.sql import SparkSession

import delta_replay

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
# A ```python block in README.md or docs/ is run by this module (the blocks of one page in
# order, in one namespace, with a temporary working directory), unless an HTML comment on the
# line before it says otherwise (docs/development.md, "Docs that run"):
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
    """The ```python blocks of README.md and docs/ that carry ``marker`` (None: run here)."""
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


def test_docs_python_blocks_run(
    spark: SparkSession, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Every runnable block, page by page, on the test session (the blocks' getOrCreate()
    returns it); then what the text around them says about their output."""
    monkeypatch.chdir(tmp_path)
    pages: dict[Path, list[Block]] = {}
    for block in python_blocks():
        pages.setdefault(block.page, []).append(block)
    assert ROOT / "docs" / "usage.md" in pages
    outputs: dict[str, str] = {}
    for page, blocks in pages.items():
        namespace: dict[str, Any] = {"__name__": "__docs__"}
        for block in blocks:
            out = io.StringIO()
            where = f"{page.relative_to(ROOT)}:{block.line}"
            with contextlib.redirect_stdout(out):
                exec(compile(block.code, where, "exec"), namespace)  # noqa: S102
            outputs[where] = out.getvalue()
        if page.name == "usage.md":
            usage = namespace
    # usage.md: the first block's table, read through the connector with pruning and skipping
    metrics = delta_replay.scan_metrics(usage["df"])
    assert len(metrics) == 1 and metrics[0]["filesAfterPartitionPruning"] < metrics[0]["liveFiles"]
    text = "\n".join(outputs.values())
    assert "'filesAfterSkipping'" in text  # the printed scan_metrics
    # EXPLAIN before the query ran shows what replay and skipping did (the text says so)
    explain = next(v for k, v in outputs.items() if "DeltaReplayScan" in v)
    assert "live files" in explain and "after skipping" in explain, explain
    v1 = delta_replay.read(spark, usage["path"], reader="delta").where("day = '1' AND id < 100")
    assert sorted(usage["df"].collect()) == sorted(v1.collect())
