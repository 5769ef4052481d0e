"""The package's shape, read statically from its source with ast: imports at the top of each
module, no import cycle, the one-way pipeline of docs/reference/architecture.md, no function over 80
lines."""

from __future__ import annotations

import ast
import functools
from pathlib import Path

import pytest

pytestmark = pytest.mark.fast  # no program compiled, traced or launched (make test-fast)

PACKAGE = Path(__file__).resolve().parents[1] / "tareador"
# Shared utilities first, then the stages in pipeline order: a module imports only from its own
# stage or an earlier one. taskgraph comes before tracing: the task graph is the contract every
# stage shares, tracing included (it builds the rows of model.py and writes them with store.py).
# The package itself (tareador.load, tareador.hints) is the top.
ORDER = [{"errors", "files", "native", "stopping", "system_packages", "text_columns", "version", "workers"},
         {"taskgraph"}, {"tracing"}, {"formats"}, {"synthesis"}, {"simulation"}, {"analyses"}, {"render"},
         {"report"}, {"cli"}, {"__main__", ""}]
# Imported where they are used, not at the top: each serves one feature and costs the start-up of
# every command (Bokeh and matplotlib a second, frida and networkx a fifth), needs an MPI launch
# (mpi4py) or is an optional extra (pandas, for to_pandas). A tareador module that imports one of
# them at its top may be imported where it is used, for the same reason (the report's pages,
# which load Bokeh).
LAZY = {"bokeh", "frida", "matplotlib", "mpi4py", "networkx", "pandas", "tqdm"}
LONGEST = 80


@functools.cache
def modules(package: Path = PACKAGE) -> dict[str, ast.Module]:
    found = {}
    for path in sorted(package.rglob("*.py")):
        name = ".".join(("tareador",) + path.relative_to(package).with_suffix("").parts).removesuffix(".__init__")
        found[name] = ast.parse(path.read_text(), str(path))
    return found


def imports(name: str, tree: ast.Module, packages: set[str], known: set[str]) -> list[tuple[ast.stmt, list[str], bool]]:
    """(statement, the modules it imports, whether it is inside a function) of every import that
    runs: those under ``if TYPE_CHECKING:`` never do."""
    out = []

    def visit(node: ast.AST, in_function: bool) -> None:
        for child in ast.iter_child_nodes(node):
            if isinstance(child, ast.If) and ast.unparse(child.test) in ("TYPE_CHECKING", "typing.TYPE_CHECKING"):
                continue
            if isinstance(child, ast.Import):
                out.append((child, [a.name for a in child.names], in_function))
            elif isinstance(child, ast.ImportFrom):
                base = child.module or ""
                if child.level:
                    package = name if name in packages else name.rpartition(".")[0]
                    for _ in range(child.level - 1):
                        package = package.rpartition(".")[0]
                    base = f"{package}.{base}".rstrip(".")
                out.append((child, [f"{base}.{a.name}" if f"{base}.{a.name}" in known else base for a in child.names],
                            in_function))
            visit(child, in_function or isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef)))

    visit(tree, False)
    return out


@functools.cache
def all_imports(package: Path) -> dict[str, list[tuple[ast.stmt, list[str], bool]]]:
    trees = modules(package)
    packages = {".".join(("tareador",) + p.parent.relative_to(package).parts) for p in package.rglob("__init__.py")}
    return {name: imports(name, tree, packages, set(trees)) for name, tree in trees.items()}


def dependencies(package: Path) -> dict[str, set[str]]:
    """Module -> the tareador modules it imports (a name imported from a package's __init__
    counts as the package)."""
    found = all_imports(package)
    return {name: {m for _, targets, _ in rows for m in targets if m in found and m != name}
            for name, rows in found.items()}


def stage(module: str) -> int:
    part = module.split(".")[1] if "." in module else ""
    return next((k for k, group in enumerate(ORDER) if part in group), -1)


def cycles(package: Path) -> list[list[str]]:
    graph = dependencies(package)
    state: dict[str, int] = {}  # 1: on the current path, 2: done
    path: list[str] = []
    found = []

    def walk(node: str) -> None:
        state[node] = 1
        path.append(node)
        for nxt in sorted(graph[node]):
            if state.get(nxt) == 1:
                found.append(path[path.index(nxt):] + [nxt])
            elif nxt not in state:
                walk(nxt)
        path.pop()
        state[node] = 2

    for node in sorted(graph):
        if node not in state:
            walk(node)
    return found


def upward(package: Path) -> list[str]:
    return sorted(f"{a} -> {b}" for a, targets in dependencies(package).items() for b in targets
                  if stage(b) > stage(a))


def heavy(package: Path) -> set[str]:
    """The modules that load a LAZY library when imported: those that import one at their top,
    and those that import such a module at theirs."""
    found = all_imports(package)
    direct = {name: {t for _, targets, inside in rows if not inside for t in targets} for name, rows in found.items()}
    loaded = {name for name, targets in direct.items() if any(t.split(".")[0] in LAZY for t in targets)}
    while True:
        more = {name for name, targets in direct.items() if targets & loaded} - loaded
        if not more:
            return loaded
        loaded |= more


def inside_functions(package: Path) -> list[str]:
    allowed = heavy(package)
    return [f"{name}:{node.lineno}: {ast.unparse(node)}" for name, rows in all_imports(package).items()
            for node, targets, in_function in rows
            if in_function and not all(t.split(".")[0] in LAZY or t in allowed for t in targets)]


def long_functions(package: Path) -> list[str]:
    return [f"{name}.{node.name}: {node.end_lineno - node.lineno + 1} lines" for name, tree in modules(package).items()
            for node in ast.walk(tree) if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef))
            and node.end_lineno - node.lineno + 1 > LONGEST]


def test_every_module_has_a_stage():
    assert [m for m in modules() if stage(m) < 0] == []


def test_no_import_cycle():
    assert cycles(PACKAGE) == []


def test_stages_import_only_earlier_ones():
    assert upward(PACKAGE) == []


def test_imports_are_at_the_top():
    assert inside_functions(PACKAGE) == []


def test_no_function_over_80_lines():
    assert long_functions(PACKAGE) == []


def test_the_checks_see_what_they_look_for(tmp_path):
    """Each check finds its fault in a small package that has it."""
    package = tmp_path / "tareador"
    files = {
        "__init__.py": "",
        "errors.py": "",
        "taskgraph/__init__.py": "",
        "taskgraph/model.py": "from tareador.taskgraph.dag import Dag\n",
        "taskgraph/dag.py": "from tareador.taskgraph import model\n\n\ndef load():\n    from tareador import errors\n"
                            "    import networkx\n    from tareador.taskgraph import plot\n"
                            "    return errors, networkx, plot\n",
        "taskgraph/plot.py": "import matplotlib\n",
        "taskgraph/store.py": "from tareador.cli import main\n\n\ndef f():\n" + "    x = 1\n" * LONGEST
                              + "    return x\n",
        "cli/__init__.py": "",
        "cli/main.py": "from tareador.taskgraph import store\n",
    }
    for name, text in files.items():
        (package / name).parent.mkdir(parents=True, exist_ok=True)
        (package / name).write_text(text)
    assert cycles(package) == [["tareador.cli.main", "tareador.taskgraph.store", "tareador.cli.main"],
                               ["tareador.taskgraph.dag", "tareador.taskgraph.model", "tareador.taskgraph.dag"]]
    assert upward(package) == ["tareador.taskgraph.store -> tareador.cli.main"]
    assert inside_functions(package) == ["tareador.taskgraph.dag:5: from tareador import errors"]
    assert long_functions(package) == [f"tareador.taskgraph.store.f: {LONGEST + 2} lines"]
