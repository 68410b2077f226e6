"""The library's modules import each other without cycles (lazy imports inside functions
count too), and the benchmark package uses only the library's public modules; the benchmark
package's modules, and its subpackages taken whole, import each other without cycles too."""

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


def package_modules(root: Path) -> dict[str, Path]:
    """Every module of the package at ``root`` by its dotted name (a package's ``__init__``
    under the package's own name)."""
    found: dict[str, Path] = {}
    for path in sorted(root.rglob("*.py")):
        parts = path.relative_to(root.parent).with_suffix("").parts
        found[".".join(parts[:-1] if parts[-1] == "__init__" else parts)] = path
    return found


def module_imports(name: str, path: Path, modules: set[str]) -> set[str]:
    """The ``modules`` that module ``name`` (at ``path``) imports anywhere in it (top level, in a
    function, under ``TYPE_CHECKING``): ``from .x import y`` names ``x``, or ``x.y`` when ``y``
    is a module itself; ``from . import y`` names the package unless ``y`` is a module."""
    here = name.split(".") if path.name == "__init__.py" else name.split(".")[:-1]
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.ImportFrom):
            if node.level:
                parent = here[: len(here) - node.level + 1]
                base = ".".join([*parent, node.module] if node.module else parent)
            else:
                base = node.module or ""
            for alias in node.names:
                inner = f"{base}.{alias.name}"
                found.add(inner if inner in modules else base)
        elif isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
    return (found & modules) - {name}


def bench_graph() -> dict[str, set[str]]:
    """The benchmark package's modules (names without ``delta_replay_bench.``) and what each
    imports of it."""
    modules = package_modules(BENCH)
    prefix = f"{BENCH.name}."
    return {
        name.removeprefix(prefix): {
            m.removeprefix(prefix) for m in module_imports(name, path, set(modules))
        }
        for name, path in modules.items()
    }


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


def test_the_bench_package_has_no_import_cycle() -> None:
    graph = bench_graph()
    assert {"replay.bench", "replay.cli", "synth.generator", "synth.real"} <= set(graph)
    assert "replay.cli" in graph["replay.bench"]  # the direction that stays: the runner uses its
    assert "synth" in graph["replay.bench"]  # command line, and replay uses synth's tables
    assert cycles(graph) == []


def test_the_bench_subpackages_have_no_import_cycle() -> None:
    """Subpackages stand in layers too (``replay`` uses ``synth``, never the other way)."""
    rooms: dict[str, set[str]] = {}
    for name, imports in bench_graph().items():
        room = name.split(".")[0]
        rooms.setdefault(room, set()).update(m.split(".")[0] for m in imports)
    graph = {room: imports - {room} for room, imports in rooms.items()}
    assert "synth" in graph["replay"]
    assert cycles(graph) == []


def test_the_module_graph_sees_every_kind_of_import(tmp_path: Path) -> None:
    root = tmp_path / "pkg"
    (root / "sub").mkdir(parents=True)
    for name in ("__init__", "a", "b", "sub/__init__", "sub/c", "sub/d"):
        (root / f"{name}.py").write_text("")
    (root / "sub" / "c.py").write_text(
        "from . import d\nfrom .. import a, helper\nfrom ..b import thing\n"
        "def f():\n    import pkg.sub.d\n    from pkg import b\n"
        "if TYPE_CHECKING:\n    from pkg.sub import c, e\n"
    )
    (root / "sub" / "__init__.py").write_text("from .c import run\nfrom . import d\n")
    modules = package_modules(root)
    assert set(modules) == {"pkg", "pkg.a", "pkg.b", "pkg.sub", "pkg.sub.c", "pkg.sub.d"}
    names = set(modules)
    c = module_imports("pkg.sub.c", modules["pkg.sub.c"], names)
    assert c == {"pkg.sub.d", "pkg.a", "pkg", "pkg.b", "pkg.sub"}
    assert module_imports("pkg.sub", modules["pkg.sub"], names) == {"pkg.sub.c", "pkg.sub.d"}
