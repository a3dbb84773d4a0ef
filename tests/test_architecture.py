"""The import rule of docs/architecture.md, read from the code's own imports.

Packages are layered in the order data flows; a package may import only the packages below it:
`metric` imports nothing of the project, nothing imports `flows`, no package imports one above it
(a lazy import inside a function counts too), and no module imports itself through a circle of
imports (lazy ones included: a circle hidden inside a function is still one). Every stage runs
without Prefect: importing every stage package, and a build with `--runner local`, never imports
`prefect`. The command line imports what a command runs, when it runs it: `arena --help` and
`import flows.cli` import no numerics, simulator, table or orchestration library, and
`arena validate` imports the mesh and simulator libraries only in its worker processes."""

from __future__ import annotations

import ast
import json
import subprocess
import sys
from pathlib import Path

import pytest
from verify_assets import door_urdf

REPO = Path(__file__).resolve().parents[1]

#: Bottom to top: each package may import the ones before it, never one after it.
LAYERS = (
    "metric",
    "schemas",
    "samples",
    "normalize",
    "taxonomy",
    "verify",
    "previews",
    "duplicates",
    "export",
    "scoring",
    "pipeline",
    "flows",
)
STAGE_PACKAGES = LAYERS[:-1]


def module_name(path: Path) -> str:
    parts = list(path.relative_to(REPO).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def project_modules() -> dict[str, Path]:
    return {
        module_name(path): path
        for package in LAYERS
        for path in sorted((REPO / package).rglob("*.py"))
    }


def imports_of(path: Path, modules: dict[str, Path]) -> list[tuple[str, bool]]:
    """(project module imported, at import time?) for every import statement of a file.
    `from a.b import c` names module a.b.c when that is a module, else a.b."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    top_level = {id(node) for node in tree.body}
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            names = [f"{node.module}.{alias.name}" for alias in node.names]
            names = [n if n in modules else node.module for n in names]
        else:
            continue
        for name in names:
            while name and name not in modules:
                name = name.rpartition(".")[0]
            if name:
                found.append((name, id(node) in top_level))
    return found


def import_graph() -> dict[str, list[tuple[str, bool]]]:
    """module -> [(imported project module, at import time?)] for the whole project."""
    modules = project_modules()
    return {name: imports_of(path, modules) for name, path in modules.items()}


def rule_violations(graph: dict[str, list[tuple[str, bool]]]) -> list[str]:
    """Every break of the import rule in a module graph, as readable lines."""
    rank = {package: i for i, package in enumerate(LAYERS)}
    problems = []
    for module, imported in sorted(graph.items()):
        own = module.split(".")[0]
        for target, _ in imported:
            other = target.split(".")[0]
            if other == own:
                continue
            if own == "metric":
                problems.append(f"{module} imports {target}: metric imports nothing of ours")
            elif other == "flows":
                problems.append(f"{module} imports {target}: nothing imports flows")
            elif rank[other] > rank[own]:
                problems.append(f"{module} imports {target}: {other} is above {own}")
    problems.extend(f"import circle: {' -> '.join(c)}" for c in import_circles(graph))
    return problems


def import_circles(graph: dict[str, list[tuple[str, bool]]]) -> list[list[str]]:
    """Circles of imports between modules, lazy ones included (one per strongly connected
    group)."""
    edges = {m: sorted({t for t, _ in ts if t != m}) for m, ts in graph.items()}
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    circles = []

    def visit(node: str) -> None:  # Tarjan's strongly connected components
        index[node] = low[node] = len(index)
        stack.append(node)
        on_stack.add(node)
        for nxt in edges.get(node, []):
            if nxt not in index:
                visit(nxt)
                low[node] = min(low[node], low[nxt])
            elif nxt in on_stack:
                low[node] = min(low[node], index[nxt])
        if low[node] == index[node]:
            group = []
            while True:
                top = stack.pop()
                on_stack.discard(top)
                group.append(top)
                if top == node:
                    break
            if len(group) > 1:
                circles.append(sorted(group) + [sorted(group)[0]])

    for node in sorted(edges):
        if node not in index:
            visit(node)
    return circles


def test_the_project_keeps_the_import_rule():
    graph = import_graph()
    assert {m.split(".")[0] for m in graph} == set(LAYERS)
    assert rule_violations(graph) == []


def test_the_rule_check_catches_each_kind_of_break():
    wrong = {
        "metric.tree": [("normalize.model", True)],
        "verify.checks": [("flows.cli", False)],
        "normalize.run": [("taxonomy.assign", False)],
        "export.a": [("export.b", True)],
        "export.b": [("export.a", True)],
        "export.c": [("export.d", False)],  # a lazy import closes a circle too
        "export.d": [("export.c", True)],
        "pipeline.chain": [("export.manifests", True), ("normalize.model", True)],
    }
    assert rule_violations(wrong) == [
        "metric.tree imports normalize.model: metric imports nothing of ours",
        "normalize.run imports taxonomy.assign: taxonomy is above normalize",
        "verify.checks imports flows.cli: nothing imports flows",
        "import circle: export.a -> export.b -> export.a",
        "import circle: export.c -> export.d -> export.c",
    ]


def test_imports_are_read_with_their_modules_and_timing(tmp_path):
    source = tmp_path / "x.py"
    source.write_text(
        "from export import manifests\nimport normalize.model\n\n"
        "def f():\n    from taxonomy.assign import categorize\n",
        encoding="utf-8",
    )
    modules = {"export": 0, "export.manifests": 0, "normalize.model": 0, "taxonomy.assign": 0}
    assert imports_of(source, modules) == [
        ("export.manifests", True),
        ("normalize.model", True),
        ("taxonomy.assign", False),
    ]


def _imported_modules(code: str) -> list[str]:
    run = subprocess.run(
        [sys.executable, "-c", code + "\nimport json, sys; print(json.dumps(sorted(sys.modules)))"],
        cwd=REPO,
        capture_output=True,
        text=True,
        check=True,
    )
    return json.loads(run.stdout.strip().splitlines()[-1])


def test_no_stage_package_imports_prefect():
    modules = project_modules()
    stage_modules = sorted(m for m in modules if m.split(".")[0] in STAGE_PACKAGES)
    loaded = _imported_modules("\n".join(f"import {m}" for m in stage_modules))
    assert set(stage_modules) <= set(loaded)
    assert [m for m in loaded if m.split(".")[0] == "prefect"] == []


@pytest.mark.slow
def test_a_local_build_never_imports_prefect(tmp_path):
    for i in range(3):
        (tmp_path / "doors" / f"door_{i}").mkdir(parents=True)
        (tmp_path / "doors" / f"door_{i}" / "cabinet.urdf").write_text(door_urdf(upper=1.0 + i))
    sources = tmp_path / "sources.yaml"
    sources.write_text(
        f"sources:\n  - {{name: doors, format: urdf, path: {tmp_path / 'doors'}, license: t}}\n"
    )
    code = (
        "import sys\n"
        "from flows.cli import app\n"
        f"try:\n    app(['build', '--sources', {str(sources)!r}, "
        f"'--out', {str(tmp_path / 'rel')!r}, '--runner', 'local', '--no-cache', "
        "'--workers', '1'])\n"
        "except SystemExit as exc:\n    assert exc.code == 0, exc.code\n"
    )
    loaded = _imported_modules(code)
    assert (tmp_path / "rel" / "release.json").is_file()
    assert "pipeline.build" in loaded
    assert [m for m in loaded if m.split(".")[0] == "prefect"] == []


#: What a module-level import in the command line (or what it loads) must not bring in
HEAVY = ("prefect", "pandas", "pyarrow", "scipy", "mujoco", "trimesh", "matplotlib", "pybullet")


def _heavy(loaded: list[str], heavy=HEAVY) -> list[str]:
    return sorted({m.split(".")[0] for m in loaded} & set(heavy))


def _running(args: list[str]) -> str:
    return f"from flows.cli import app\ntry:\n    app({args!r})\nexcept SystemExit:\n    pass\n"


@pytest.mark.parametrize(
    "code",
    ["import flows.cli", _running(["--help"]), _running(["validate", "--help"])],
    ids=["import", "help", "validate-help"],
)
def test_the_command_line_starts_without_heavy_modules(code):
    assert _heavy(_imported_modules(code), (*HEAVY, "numpy", "jsonschema", "dask")) == []


def test_validate_imports_meshes_and_simulators_only_in_its_workers(tmp_path):
    (tmp_path / "door.urdf").write_text(door_urdf(), encoding="utf-8")
    loaded = _imported_modules(_running(["validate", str(tmp_path / "door.urdf")]))
    assert "verify.validate" in loaded
    assert _heavy(loaded) == []
