"""The package's shape: imports inside `agentool/` point one way, and no module passes 800 lines
(a smell guard: modules are cut by concept, never to fit a count).

Imports inside function bodies count (deferring an import to dodge a circular-import error keeps
the circle); imports under `if TYPE_CHECKING:` do not, since they never run.
"""

from __future__ import annotations

import ast
import graphlib
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parent.parent / 'agentool'
MAX_LINES = 800


def _module_name(path: Path, package: Path = PACKAGE) -> str:
    parts = path.relative_to(package.parent).with_suffix('').parts
    return '.'.join(parts[:-1] if parts[-1] == '__init__' else parts)


def _runtime_imports(tree: ast.AST) -> list[ast.Import | ast.ImportFrom]:
    found: list[ast.Import | ast.ImportFrom] = []
    for node in ast.iter_child_nodes(tree):
        if isinstance(node, ast.If) and 'TYPE_CHECKING' in ast.unparse(node.test):
            found += [n for child in node.orelse for n in _runtime_imports_of(child)]
        else:
            found += _runtime_imports_of(node)
    return found


def _runtime_imports_of(node: ast.AST) -> list[ast.Import | ast.ImportFrom]:
    if isinstance(node, ast.Import | ast.ImportFrom):
        return [node]
    return _runtime_imports(node)


def import_graph(package: Path) -> dict[str, set[str]]:
    """Module -> the modules of the package it imports at run time (function bodies included)."""
    files = {_module_name(path, package): path for path in package.rglob('*.py')}
    graph: dict[str, set[str]] = {}
    for module, path in files.items():
        is_package = path.name == '__init__.py'
        edges: set[str] = set()
        for node in _runtime_imports(ast.parse(path.read_text())):
            if isinstance(node, ast.Import):
                targets = [alias.name for alias in node.names]
            else:
                base = module.split('.') if is_package else module.split('.')[:-1]
                base = base[: len(base) - node.level + 1] if node.level else []
                root = '.'.join([*base, *([node.module] if node.module else [])])
                targets = [root, *(f'{root}.{alias.name}' for alias in node.names)]
            for target in targets:
                while target and target not in files:
                    target = target.rpartition('.')[0]
                # A module importing its own package (or the package's parent) is not an edge to itself.
                if target and target != module and not module.startswith(target + '.'):
                    edges.add(target)
        graph[module] = edges
    return graph


def test_no_import_circle_inside_the_package() -> None:
    try:
        order = list(graphlib.TopologicalSorter(import_graph(PACKAGE)).static_order())
    except graphlib.CycleError as error:
        pytest.fail(f'import circle inside agentool: {" -> ".join(error.args[1])}')
    assert 'agentool.core.registry' in order


def test_no_module_over_800_lines() -> None:
    sizes = {_module_name(p): len(p.read_text().splitlines()) for p in PACKAGE.rglob('*.py')}
    assert {module: lines for module, lines in sizes.items() if lines > MAX_LINES} == {}


def test_the_core_imports_neither_injector_nor_renderers_at_import_time() -> None:
    graph = import_graph(PACKAGE)
    core = {m for m in graph if m == 'agentool.core' or m.startswith('agentool.core.')}
    injector = {m for m in core if m.startswith('agentool.core.injector')}
    upward = {
        (module, target)
        for module in core - injector
        for target in graph[module]
        if target in injector or target == 'agentool.catalog' or target.startswith('agentool.catalog.')
    }
    # The registry's one deferred import of the renderers is the documented exception.
    assert upward == {('agentool.core.registry', 'agentool.catalog')}


def _defines_something(tree: ast.Module) -> bool:
    for node in tree.body:
        if isinstance(node, ast.Import | ast.ImportFrom | ast.Expr):  # imports and the docstring
            continue
        targets = node.targets if isinstance(node, ast.Assign) else []
        if [ast.unparse(t) for t in targets] == ['__all__']:
            continue
        return True
    return False


def test_no_module_only_re_exports_another() -> None:
    """A module is a concept's home: only a package's `__init__` gathers names from elsewhere."""
    aliases = [
        _module_name(path)
        for path in PACKAGE.rglob('*.py')
        if path.name != '__init__.py' and not _defines_something(ast.parse(path.read_text()))
    ]
    assert aliases == []


def test_the_check_sees_a_deferred_import_circle(tmp_path: Path) -> None:
    package = tmp_path / 'pkg'
    package.mkdir()
    (package / '__init__.py').write_text('')
    (package / 'a.py').write_text('from . import b\n')
    (package / 'b.py').write_text('def f():\n    from .a import g\n')
    (package / 'c.py').write_text('from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from .a import x\n')
    graph = import_graph(package)
    assert graph['pkg.a'] == {'pkg.b'}
    assert graph['pkg.b'] == {'pkg.a'}
    assert graph['pkg.c'] == set()
    with pytest.raises(graphlib.CycleError):
        list(graphlib.TopologicalSorter(graph).static_order())
