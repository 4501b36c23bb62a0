"""The package's shape: imports inside `agentool/` point one way (those in function bodies count:
deferring one keeps the circle; those under `if TYPE_CHECKING:` never run), and no module passes 800
lines (a smell guard: modules are cut by concept, never to fit a count).
"""

from __future__ import annotations

import ast
import graphlib
import inspect
import re
import sys
from pathlib import Path

import pytest

from tests.agentools import ROOT

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


PRIVATE_IMPORTS_ALLOWED: dict[tuple[str, str], str] = {
    ('agentool.testing.stand_in', 'agentool.core.injector._targets'): (
        'a stand-in must recognise an agentool agent exactly as the injector does (one rule, `stood_in_for`)'
    ),
}
"""Imports of a subpackage's private module from outside that subpackage, each with its reason."""


def private_imports(package: Path) -> set[tuple[str, str]]:
    """(importer, private module) for each import of a subpackage's `_module` from outside it."""
    graph = import_graph(package)
    found: set[tuple[str, str]] = set()
    for module, targets in graph.items():
        for target in targets:
            owner, _, leaf = target.rpartition('.')
            inside = module == owner or module.startswith(owner + '.')
            if leaf.startswith('_') and not leaf.startswith('__') and owner.count('.') >= 1 and not inside:
                found.add((module, target))
    return found


def test_private_modules_of_a_subpackage_stay_inside_it() -> None:
    """What several packages share lives in a root-level `agentool._name` module or a public face."""
    assert len(PRIVATE_IMPORTS_ALLOWED) <= 5
    assert private_imports(PACKAGE) - PRIVATE_IMPORTS_ALLOWED.keys() == set()


def test_the_private_import_check_sees_a_crossing(tmp_path: Path) -> None:
    package = tmp_path / 'pkg'
    (package / 'sub').mkdir(parents=True)
    for name in ('__init__.py', 'sub/__init__.py', 'sub/_inner.py', '_shared.py'):
        (package / name).write_text('X = 1\n')
    (package / 'sub' / 'face.py').write_text('from ._inner import X\nfrom .._shared import X as Y\n')
    (package / 'outside.py').write_text('from .sub._inner import X\nfrom ._shared import X as Y\n')
    assert private_imports(package) == {('pkg.outside', 'pkg.sub._inner')}


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


def _agentool_imports(module: str) -> set[str]:
    path = ROOT / 'agentool' / f'{module}.py'
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.ImportFrom) and node.level:
            found.add('.'.join(filter(None, ['agentool', node.module])))
        elif isinstance(node, ast.ImportFrom) and (node.module or '').startswith('agentool'):
            found.add(node.module or '')
    return found


def test_the_bottom_layer_imports_only_what_the_architecture_page_says() -> None:
    assert _agentool_imports('errors') == {'agentool._bounds'}  # its text bounds, a leaf
    assert _agentool_imports('_bounds') == set()
    assert _agentool_imports('base') <= {'agentool.errors'}
    assert _agentool_imports('_compat') == {'agentool.errors'}
    # telemetry needs only the base (errors and the option checks); the core sits above it.
    assert _agentool_imports('telemetry') == {'agentool.errors', 'agentool._options'}
    page = (ROOT / 'docs' / 'architecture.md').read_text()
    assert 'base["errors · _compat · base' in page
    assert 'telemetry --> base' in page
    assert 'core --> telemetry' in page


def _private(name: str) -> bool:
    return name.startswith('_') and not (name.startswith('__') and name.endswith('__'))


def test_nothing_in_agentool_reads_or_writes_a_private_pydantic_ai_name() -> None:
    found: list[str] = []
    for path in sorted((ROOT / 'agentool').rglob('*.py')):
        tree = ast.parse(path.read_text())
        where = path.relative_to(ROOT).as_posix()
        bound: set[str] = set()  # names this module binds to pydantic-ai modules and objects
        for node in ast.walk(tree):
            if isinstance(node, ast.ImportFrom) and (node.module or '').split('.')[0] == 'pydantic_ai':
                parts = (node.module or '').split('.')
                found += [f'{where}:{node.lineno} {node.module}' for part in parts if _private(part)]
                found += [f'{where}:{node.lineno} {alias.name}' for alias in node.names if _private(alias.name)]
                bound |= {alias.asname or alias.name for alias in node.names}
            elif isinstance(node, ast.Import):
                for alias in node.names:
                    if alias.name.split('.')[0] == 'pydantic_ai':
                        found += [
                            f'{where}:{node.lineno} {alias.name}' for part in alias.name.split('.') if _private(part)
                        ]
                        bound.add(alias.asname or alias.name.split('.')[0])
        for node in ast.walk(tree):
            if isinstance(node, ast.Attribute) and _private(node.attr):
                base = node.value
                if isinstance(base, ast.Name) and base.id in bound:
                    found.append(f'{where}:{node.lineno} {base.id}.{node.attr}')
    assert found == []


def test_agentools_subclasses_of_pydantic_ai_classes_use_none_of_their_private_attributes() -> None:
    import agentool.testing  # noqa: F401  # pyright: ignore[reportUnusedImport]
    from agentool import dbos, durable, mcp, toolset  # noqa: F401  # pyright: ignore[reportUnusedImport]

    classes = {
        value
        for name, module in list(sys.modules.items())
        if name.startswith('agentool.')
        for value in vars(module).values()
        if isinstance(value, type) and value.__module__ == name
    }
    assert classes
    clashes: list[str] = []
    for cls in sorted(classes, key=lambda kind: kind.__qualname__):
        bases = [base for base in cls.__mro__ if base.__module__.split('.')[0] == 'pydantic_ai']
        if not bases:
            continue
        source = inspect.getsource(cls)
        used = set(re.findall(r'self\.(_[a-zA-Z]\w*)', source)) | {name for name in vars(cls) if _private(name)}
        for base in bases:
            base_source = inspect.getsource(base)
            clashes += [
                f'{cls.__qualname__}.{name} (pydantic-ai {base.__qualname__})'
                for name in sorted(used)
                if _private(name) and re.search(rf'\b{name}\b', base_source)
            ]
    assert clashes == []


_LAYERS = {  # the architecture page's diagram: a layer may import the layers it points to, transitively
    'base': set[str](),
    'core': {'telemetry'},
    'telemetry': {'base'},
    'injector': {'core'},
    'catalog': {'core'},
    'factory': {'injector'},
    'bridges': {'catalog', 'factory'},
    'engines': {'bridges'},
    'testing': {'bridges', 'engines'},
    'cli': {'testing'},
    'docs': {'bridges'},
}


_NAMED = {
    **dict.fromkeys(['errors', '_compat', 'base', '_bounds', '_options', '_answering'], 'base'),
    **dict.fromkeys(['_terminal', '_modules', 'paths'], 'base'),
    'telemetry': 'telemetry',
    'catalog': 'catalog',
    'factory': 'factory',
    **dict.fromkeys(['toolset', 'filters', 'mcp', 'mcp_http', 'model_strings', 'dispatch'], 'bridges'),
    **dict.fromkeys(['_interface', '_http_guards'], 'bridges'),
    **dict.fromkeys(['durable', 'dbos', 'temporal', 'prefect'], 'engines'),
    'testing': 'testing',
    **dict.fromkeys(['cli', '__main__'], 'cli'),
    'mkdocs': 'docs',
}


# The page's one exception: the registry's deferred import of the catalog renderers.
_EXCEPTIONS = frozenset({'agentool.core.registry'})


def _layer(module: str) -> str | None:
    parts = module.split('.')
    if parts[1:2] == ['core']:
        return 'injector' if parts[2:3] == ['injector'] else 'core'
    return _NAMED.get(parts[1]) if len(parts) > 1 else None


def test_every_import_points_down_the_architecture_diagram() -> None:
    def below(layer: str) -> set[str]:
        found = {layer}
        for lower in _LAYERS[layer]:
            found |= below(lower)
        return found

    graph = import_graph(ROOT / 'agentool')
    upward = [
        f'{module} -> {target}'
        for module, targets in sorted(graph.items())
        if module not in _EXCEPTIONS and (layer := _layer(module)) is not None
        for target in sorted(targets)
        if (lower := _layer(target)) is not None and lower not in below(layer)
    ]
    assert upward == []


def test_every_module_sits_in_a_layer_of_the_diagram() -> None:
    # A module with no layer would escape the test above: every import it makes would pass.
    graph = import_graph(ROOT / 'agentool')
    assert sorted(module for module in graph if module != 'agentool' and _layer(module) is None) == []


# Where agentool reads or writes an object's `__dict__` (or `vars()`), and why that object is agentool's own.
_OWN_DICTS = {
    'agentool/errors.py': "an error's own state, pickled with it",
    'agentool/core/registry.py': "the registry's method descriptor caches a bound method on the registry",
    'agentool/testing/plugin.py': "a copy of pytest's parsed options (an argparse namespace)",
}
# The one sanctioned patch of pydantic-ai at import: the documented `agentool:NAME` model-string hook.
_PATCHES = {'agentool/model_strings.py'}
_HOOKS = frozenset({'__getattribute__', '__getattr__', '__setattr__', '__new__'})


def hand_built(source: str, where: str) -> list[str]:
    """Where `source` builds or patches a pydantic-ai object by hand instead of through its public API.

    `object.__new__`, a class made by three-argument `type()`, attribute hooks on a class deriving
    from a pydantic-ai class, `__dict__`/`vars()` outside `_OWN_DICTS`, and assignments to
    attributes of pydantic-ai names outside `_PATCHES`.
    """
    tree = ast.parse(source)
    found: list[str] = []
    bound: set[str] = set()  # names bound to pydantic-ai modules and objects
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and (node.module or '').split('.')[0] == 'pydantic_ai':
            bound |= {alias.asname or alias.name for alias in node.names}
        elif isinstance(node, ast.Import):
            bound |= {
                alias.asname or alias.name.split('.')[0]
                for alias in node.names
                if alias.name.split('.')[0] == 'pydantic_ai'
            }
    derived = set(bound)  # classes of this module deriving from a pydantic-ai class, found in order
    for node in ast.walk(tree):
        if isinstance(node, ast.ClassDef):
            bases = {name.id for base in node.bases for name in ast.walk(base) if isinstance(name, ast.Name)}
            if bases & derived:
                derived.add(node.name)
                hooks = [item.name for item in node.body if isinstance(item, ast.FunctionDef) and item.name in _HOOKS]
                found += [f'{where}:{node.lineno} {node.name}.{hook}' for hook in hooks]
    for node in ast.walk(tree):
        if isinstance(node, ast.Attribute):
            if node.attr == '__new__' and isinstance(node.value, ast.Name) and node.value.id in {'object', *bound}:
                found.append(f'{where}:{node.lineno} {node.value.id}.__new__')
            if node.attr == '__dict__' and where not in _OWN_DICTS:
                found.append(f'{where}:{node.lineno} __dict__')
        elif isinstance(node, ast.Call) and isinstance(node.func, ast.Name):
            if node.func.id == 'type' and len(node.args) == 3:
                found.append(f'{where}:{node.lineno} type() with three arguments')
            if node.func.id == 'vars' and where not in _OWN_DICTS:
                found.append(f'{where}:{node.lineno} vars()')
            if node.func.id == 'setattr' and node.args and where not in _PATCHES:
                target = node.args[0]
                if isinstance(target, ast.Name) and target.id in bound:
                    found.append(f'{where}:{node.lineno} setattr({target.id}, ...)')
        elif isinstance(node, ast.Assign | ast.AugAssign | ast.AnnAssign) and where not in _PATCHES:
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            for target in targets:
                base = target.value if isinstance(target, ast.Attribute) else None
                if isinstance(target, ast.Attribute) and isinstance(base, ast.Name) and base.id in bound:
                    found.append(f'{where}:{node.lineno} {base.id}.{target.attr} = ...')
    return found


def test_no_pydantic_ai_object_is_built_or_patched_by_hand() -> None:
    found: list[str] = []
    for path in sorted((ROOT / 'agentool').rglob('*.py')):
        found += hand_built(path.read_text(), path.relative_to(ROOT).as_posix())
    assert found == []


@pytest.mark.parametrize(
    'source',
    [
        'from pydantic_ai import RunContext\nctx = object.__new__(RunContext)\n',
        'from pydantic_ai import RunContext\nctx = RunContext.__new__(RunContext)\n',
        'def fill(ctx):\n    ctx.__dict__.update(run_id="x")\n',
        'def fill(ctx):\n    vars(ctx)["run_id"] = "x"\n',
        'from pydantic_ai import RunContext\nKind = type("RunContext", (RunContext,), {})\n',
        'from pydantic_ai import RunContext\nclass C(RunContext):\n    def __getattribute__(self, name): ...\n',
        'from pydantic_ai import RunContext\nclass B(RunContext): ...\nclass C(B):\n    def __getattr__(s, n): ...\n',
        'from pydantic_ai import Agent\nAgent.instrument_all = staticmethod(print)\n',
        'from pydantic_ai import Agent\nsetattr(Agent, "instrument_all", print)\n',
    ],
)
def test_the_hand_built_scan_sees_each_pattern(source: str) -> None:
    assert hand_built(source, 'agentool/example.py') != []
