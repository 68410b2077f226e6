"""The library's modules import each other without cycles (lazy imports inside functions
count too), and the benchmark package uses only the library's public modules."""

from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
LIBRARY = ROOT / "python" / "delta_replay"
BENCH = ROOT / "benchmarks" / "delta_replay_bench"


def imported_modules(path: Path, package: str = "delta_replay") -> set[str]:
    """The ``package`` modules ``path`` imports anywhere in it (top level or in a function)."""
    found: set[str] = set()
    own = path.parent == LIBRARY
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.ImportFrom):
            if node.level == 1 and own:  # from .x import y / from . import x
                base = node.module
            elif node.level == 0 and node.module and node.module.split(".")[0] == package:
                base = node.module.removeprefix(package).lstrip(".") or None
            else:
                continue
            if base:
                found.add(base.split(".")[0])
            else:
                found.update(alias.name for alias in node.names)
        elif isinstance(node, ast.Import):
            for alias in node.names:
                parts = alias.name.split(".")
                if parts[0] == package and len(parts) > 1:
                    found.add(parts[1])
    return found


def cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """Every cycle through ``graph``'s edges, each once (as found from its smallest node)."""
    found: list[list[str]] = []

    def walk(start: str, node: str, path: list[str]) -> None:
        for nxt in sorted(graph.get(node, ())):
            if nxt == start:
                found.append([*path, start])
            elif nxt not in path and nxt > start:
                walk(start, nxt, [*path, nxt])

    for start in sorted(graph):
        walk(start, start, [start])
    return found


def test_the_library_has_no_import_cycle() -> None:
    # __init__ and __main__ import the modules they offer; nothing imports them back
    graph = {
        p.stem: imported_modules(p) - {"__init__"}
        for p in LIBRARY.glob("*.py")
        if p.stem not in ("__init__", "__main__")
    }
    assert {"cli", "cli_support", "connect", "session", "read", "inspection"} <= set(graph)
    assert "session" in graph["connect"]  # the direction that stays
    assert cycles(graph) == []


def test_the_cycle_finder_finds_lazy_cycles(tmp_path: Path) -> None:
    assert cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c", "a"]]
    assert cycles({"a": {"b"}, "b": set()}) == []
    probe = tmp_path / "delta_replay" / "m.py"
    probe.parent.mkdir()
    probe.write_text(
        "def f():\n    from delta_replay.session import x\n    import delta_replay.cli\n"
    )
    assert imported_modules(probe) == {"session", "cli"}


def test_the_bench_package_uses_only_public_library_modules() -> None:
    private = {
        f"{p.relative_to(BENCH)}: delta_replay.{m}"
        for p in BENCH.rglob("*.py")
        for m in imported_modules(p)
        if m.startswith("_")
    }
    assert not private, sorted(private)
    used = {m for p in BENCH.rglob("*.py") for m in imported_modules(p)}
    assert {"jvm", "versions", "cli_support", "session", "read"} <= used
