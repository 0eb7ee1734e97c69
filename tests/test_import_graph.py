"""The package's import graph, read from the source (ast): one-way, and suites known by name only
inside `suites/`.

Floors (`FLOORS`, bottom first), after ../shared/design.md's layering and the flow of data
(suite -> prompt builder -> runner -> backend -> store -> scorer -> analysis -> report):
0. the shared vocabulary: `longscope` (its version; the facade's re-exports are lazy),
   `errors`, `types`, `summary`;
1. small utilities every layer may use: `files`, `jsonl`, `hub`, `catalogue`, `sources` (what a
   suite downloads, as plain values), `sandbox` (runs model-written programs; stdlib only),
   `cpu_check` (whether llama.cpp's build runs on this CPU, asked by the tokenizers and the
   llama.cpp backend);
2. `text/`: tokenizers, counting, filler, safe text;
2.5 `params` (typed plug-in options), `plugins` (the one `Registry`) and `urls` (endpoint URLs:
   checked, shown without secrets), below `models`, `metrics`, `suites` and `run`, which share them;
3. `models/`: backends (they know no suite);
4. `metrics/`: pure metrics, above the backends because a semantic metric may ask an embedding
   server (its URL is checked as the backends' are);
5. `router/`: a backend wrapper, using text and models only;
6. `analysis/`: reads summaries (never runs or suites), so the suites' summaries can use it;
7. `suites/` (and `download`, which fetches the data the suites declare);
8. `run/`: the runner, store, scoring, plan;
9. `report/` (and `export/`, which writes runs in other tools' formats, reports included);
10. `api` (and `results`, its typed return values); 11. `cli` (and `cli_options`).
An import from a floor to a higher one runs back up: at most `MAX_UPWARD` are allowed (each
listed in `test_imports_run_down_the_floors`'s message when there are more).

Every `import` counts, at module level or inside a function (a lazy import is still a dependency),
except inside `if TYPE_CHECKING:` and a module's `__getattr__` (lazy re-exports of a facade).
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

SRC = Path(__file__).parents[1] / "src"
PACKAGE = "longscope"
SUITES = f"{PACKAGE}.suites"
# What any layer may use of suites/: the registry, the protocol and the parameter types.
SUITE_CONTRACT = {SUITES, f"{SUITES}.base", f"{SUITES}.params"}
FLOORS: tuple[tuple[str, ...], ...] = (
    (PACKAGE, f"{PACKAGE}.errors", f"{PACKAGE}.types", f"{PACKAGE}.summary"),
    tuple(
        f"{PACKAGE}.{m}"
        for m in ("files", "jsonl", "hub", "catalogue", "sources", "sandbox", "cpu_check")
    ),
    (f"{PACKAGE}.text",),
    (f"{PACKAGE}.params", f"{PACKAGE}.plugins", f"{PACKAGE}.urls"),
    (f"{PACKAGE}.models",),
    (f"{PACKAGE}.metrics",),
    (f"{PACKAGE}.router",),
    (f"{PACKAGE}.analysis",),
    (SUITES, f"{PACKAGE}.download"),
    (f"{PACKAGE}.run",),
    (f"{PACKAGE}.report", f"{PACKAGE}.export"),
    (f"{PACKAGE}.api", f"{PACKAGE}.results"),
    (f"{PACKAGE}.cli", f"{PACKAGE}.cli_options"),
)
MAX_UPWARD = 0
# Strings that are a suite's name but mean something else where they appear.
NOT_SUITES = {("longscope.text.quantities", "hundred"): "the English number word"}


def _module_name(path: Path) -> str:
    parts = list(path.relative_to(SRC).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def _modules() -> dict[str, Path]:
    return {_module_name(p): p for p in sorted((SRC / PACKAGE).rglob("*.py"))}


def _skipped(node: ast.AST, types: bool = False) -> bool:
    if isinstance(node, ast.If) and not types:
        test = node.test
        name = test.id if isinstance(test, ast.Name) else getattr(test, "attr", "")
        return name == "TYPE_CHECKING"
    return isinstance(node, ast.FunctionDef) and node.name == "__getattr__"


def _imports(tree: ast.AST, modules: set[str], *, types: bool = False) -> set[str]:
    """Return the package modules `tree` imports (a `from M import x` names M.x when a module);
    with `types`, those imported only for the type checker too."""
    found: set[str] = set()

    def visit(node: ast.AST) -> None:
        if _skipped(node, types):
            return
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
            # `from pkg import module` depends on that module; `from module import name` on it.
            for alias in node.names:
                sub = f"{node.module}.{alias.name}"
                found.add(sub if sub in modules else node.module)
        for child in ast.iter_child_nodes(node):
            visit(child)

    visit(tree)
    return {name for name in found if name in modules}


def _strings(tree: ast.AST) -> set[str]:
    """Return the string constants of `tree`, docstrings left out."""
    docstrings = set()
    for node in ast.walk(tree):
        body = getattr(node, "body", None)
        if isinstance(body, list) and body and isinstance(body[0], ast.Expr):
            value = body[0].value
            if isinstance(value, ast.Constant) and isinstance(value.value, str):
                docstrings.add(id(value))
    return {
        node.value
        for node in ast.walk(tree)
        if isinstance(node, ast.Constant)
        and isinstance(node.value, str)
        and id(node) not in docstrings
    }


@pytest.fixture(scope="module")
def graph() -> dict[str, set[str]]:
    modules = _modules()
    names = set(modules)
    return {
        name: _imports(ast.parse(path.read_text(encoding="utf-8")), names) - {name}
        for name, path in modules.items()
    }


def _cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """Return the strongly connected components with more than one module (Tarjan)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    out: list[list[str]] = []

    def connect(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        on_stack.add(node)
        for target in sorted(graph.get(node, ())):
            if target not in index:
                connect(target)
                low[node] = min(low[node], low[target])
            elif target in on_stack:
                low[node] = min(low[node], index[target])
        if low[node] == index[node]:
            component = []
            while True:
                member = stack.pop()
                on_stack.discard(member)
                component.append(member)
                if member == node:
                    break
            if len(component) > 1:
                out.append(sorted(component))

    for node in sorted(graph):
        if node not in index:
            connect(node)
    return out


def _path(graph: dict[str, set[str]], component: list[str]) -> str:
    """Return one cycle inside a component, as `a -> b -> a`, for the failure message."""
    members = set(component)
    start = component[0]
    trail, seen, node = [start], {start}, start
    while True:
        node = sorted(graph[node] & members)[0]
        if node in seen:
            return " -> ".join([*trail[trail.index(node) :], node])
        trail.append(node)
        seen.add(node)


def test_no_import_cycles(graph) -> None:
    cycles = _cycles(graph)
    assert not cycles, "import cycles:\n" + "\n".join(_path(graph, c) for c in cycles)


def test_no_type_only_import_cycles() -> None:
    """Imports under `if TYPE_CHECKING:` count too: a circle that only the type checker sees is
    still two modules that know each other (issue 41)."""
    modules = _modules()
    names = set(modules)
    every = {
        name: _imports(ast.parse(path.read_text(encoding="utf-8")), names, types=True) - {name}
        for name, path in modules.items()
    }
    cycles = _cycles(every)
    assert not cycles, "type-only import cycles:\n" + "\n".join(_path(every, c) for c in cycles)


def test_only_suites_know_suites(graph) -> None:
    """Outside suites/, no module imports a suite's package nor names a suite in a string."""
    import importlib
    import pkgutil

    import longscope.suites

    names = set()
    for info in pkgutil.iter_modules(longscope.suites.__path__):
        if info.ispkg:
            table = getattr(importlib.import_module(f"{SUITES}.{info.name}"), "SUITES", {})
            names.update(table)
    assert {"longctx", "longbench-pro", "hundred", "ruler", "mrcr"} <= names
    problems = []
    for module, path in _modules().items():
        if module == SUITES or module.startswith(SUITES + "."):
            continue
        for target in sorted(graph[module]):
            if target.startswith(SUITES + ".") and target not in SUITE_CONTRACT:
                problems.append(f"{module} imports {target}")
        tree = ast.parse(path.read_text(encoding="utf-8"))
        for text in sorted(_strings(tree) & names):
            if (module, text) not in NOT_SUITES:
                problems.append(f"{module} names the suite {text!r}")
    assert not problems, "\n".join(problems)


def test_layers_point_one_way(graph) -> None:
    """The bottom imports nothing above it; analyses read summaries, never runs or suites."""
    bottom = {f"{PACKAGE}.errors", f"{PACKAGE}.types", f"{PACKAGE}.summary"}
    for module in bottom:
        assert graph[module] <= bottom, (module, graph[module] - bottom)
    for module, targets in graph.items():
        if module.startswith(f"{PACKAGE}.analysis"):
            above = {t for t in targets if t.startswith((f"{PACKAGE}.run", SUITES))}
            assert not above, (module, above)
        if module.startswith(f"{PACKAGE}.text"):
            above = {t for t in targets if t.startswith((f"{PACKAGE}.run", SUITES))}
            assert not above, (module, above)


def test_suites_and_models_know_nothing_of_each_other() -> None:
    """`models` imports nothing from `suites` and `suites` nothing from `models`, not even for the
    type checker: what they share (typed options, the registry) sits below both."""
    modules = _modules()
    names = set(modules)
    graph = {
        name: _imports(ast.parse(path.read_text(encoding="utf-8")), names, types=True)
        for name, path in modules.items()
    }
    crossing = sorted(
        f"{module} -> {target}"
        for module, targets in graph.items()
        for target in targets
        for a, b in ((f"{PACKAGE}.models", SUITES), (SUITES, f"{PACKAGE}.models"))
        if (module == a or module.startswith(a + "."))
        and (target == b or target.startswith(b + "."))
    )
    assert not crossing, "\n".join(crossing)


def _floor(module: str) -> int:
    """Return the floor of `module`: the one whose package or module is its longest prefix (the
    package itself, `longscope`, is its `__init__` only), or -1 when none is."""
    best, length = -1, -1
    for floor, prefixes in enumerate(FLOORS):
        for prefix in prefixes:
            inside = module.startswith(prefix + ".") and prefix != PACKAGE
            if (module == prefix or inside) and len(prefix) > length:
                best, length = floor, len(prefix)
    return best


def test_every_module_has_a_floor(graph) -> None:
    unplaced = sorted(m for m in graph if _floor(m) < 0)
    assert not unplaced, f"place these modules on a floor (FLOORS): {unplaced}"


def test_imports_run_down_the_floors(graph) -> None:
    """0 cycles (above) and at most `MAX_UPWARD` imports from a floor to a higher one."""
    upward = sorted(
        f"{module} (floor {_floor(module)}) -> {target} (floor {_floor(target)})"
        for module, targets in graph.items()
        for target in targets
        if _floor(target) > _floor(module)
    )
    assert len(upward) <= MAX_UPWARD, (
        f"{len(upward)} imports run back up a floor (at most {MAX_UPWARD}):\n" + "\n".join(upward)
    )


# --- the facade, capabilities, plain names (issue 41) --------------------------------------------

API_MAX_LINES = 350
ASSEMBLY = {"transport_of", "create_backend", "spread_backend", "with_retries", "with_router"}
"""What builds a backend: run/assemble.py's business, never the facade's."""


def test_api_is_a_thin_facade_without_backend_assembly(graph) -> None:
    path = SRC / PACKAGE / "api.py"
    lines = path.read_text(encoding="utf-8").count("\n")
    assert lines < API_MAX_LINES, f"api.py has {lines} lines (under {API_MAX_LINES})"
    low = {t for t in graph[f"{PACKAGE}.api"] if t.startswith(f"{PACKAGE}.models")}
    assert not low, f"api.py assembles backends itself: it imports {sorted(low)}"
    called = {
        node.func.id if isinstance(node.func, ast.Name) else getattr(node.func, "attr", "")
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8")))
        if isinstance(node, ast.Call)
    }
    assert not called & ASSEMBLY, f"api.py calls {sorted(called & ASSEMBLY)} (run/assemble.py's)"


def _capabilities() -> set[str]:
    """Every member a plug-in base declares (suites, backends, embedders): what a plug-in can do."""
    from longscope.metrics.similarity import Embedder
    from longscope.models.base import Backend
    from longscope.suites.base import Suite

    return {
        name
        for base in (Suite, Backend, Embedder)
        for klass in base.__mro__
        if klass is not object
        for name in [*vars(klass), *getattr(klass, "__annotations__", {})]
        if not name.startswith("__")
    }


def test_no_capability_is_asked_for_by_name_outside_the_registry() -> None:
    """`getattr`/`hasattr` on a plug-in capability's name is the registry's alone (plugins.py):
    everywhere else each capability is declared on its base class with its default, and read."""
    capabilities = _capabilities()
    assert {"OPTIONS", "from_options", "base_url", "max_similarity", "score"} <= capabilities
    found = []
    for module, path in _modules().items():
        if module == f"{PACKAGE}.plugins":
            continue
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if (
                isinstance(node, ast.Call)
                and isinstance(node.func, ast.Name)
                and node.func.id in ("getattr", "hasattr")
                and len(node.args) >= 2
                and isinstance(node.args[1], ast.Constant)
                and node.args[1].value in capabilities
            ):
                found.append(f"{module}:{node.lineno} {node.func.id}(..., {node.args[1].value!r})")
    assert not found, "capabilities asked for by name:\n" + "\n".join(found)


def test_no_result_result_chain_anywhere() -> None:
    """Results read by their plain names (`RunResult.scores`, `ScoreResult.summary`): no
    `.result` alias is left to chain, in the source, the docs or the tests."""
    import re

    chain = re.compile(r"result\.result\b")
    root = SRC.parent
    found = [
        f"{path.relative_to(root)}:{number}"
        for folder in ("src", "docs", "tests", "benchmarks")
        for path in sorted((root / folder).rglob("*"))
        if path.suffix in (".py", ".md") and path != Path(__file__)
        for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1)
        if chain.search(line)
    ] + [
        f"{name}:{number}"
        for name in ("README.md", "BENCHMARKS.md")
        for number, line in enumerate((root / name).read_text(encoding="utf-8").splitlines(), 1)
        if chain.search(line)
    ]
    assert not found, "result.result chains:\n" + "\n".join(found)


def test_one_file_digest() -> None:
    """A file's sha256 is computed in one place (`files.sha256_of`), which every pin and input
    record reads: no second copy to drift."""
    found = [
        f"{module}:{node.lineno}"
        for module, path in _modules().items()
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8")))
        if isinstance(node, ast.FunctionDef) and node.name == "sha256_of"
    ]
    assert found == [f"{PACKAGE}.files:{_line_of('def sha256_of', SRC / PACKAGE / 'files.py')}"]


def _line_of(text: str, path: Path) -> int:
    lines = path.read_text(encoding="utf-8").splitlines()
    return next(number for number, line in enumerate(lines, 1) if line.startswith(text))
