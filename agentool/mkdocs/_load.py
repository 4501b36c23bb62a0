"""The user's agentools, registered afresh on every build into a registry of their own.

Each build reimports the configured modules in a fresh `use_registry()` scope, so `mkdocs serve`
shows what the code says now.
"""

from __future__ import annotations

import importlib
import pkgutil
import sys
from collections.abc import Generator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path

from .._bounds import clip, quote
from .._modules import import_modules
from ..core.registry import AgenToolRegistry, use_registry
from ..errors import ConfigurationError


@dataclass(frozen=True, kw_only=True)
class Problem:
    """A misconfiguration: the plugin option at fault and what is wrong."""

    key: str
    message: str


@dataclass(kw_only=True)
class Loaded:
    """What one load registered, where each agentool came from, and what went wrong."""

    registry: AgenToolRegistry
    origins: dict[str, tuple[str, str]] = field(default_factory=dict[str, tuple[str, str]])
    """Agentool name → (option, module or callable) that registered it."""
    problems: list[Problem] = field(default_factory=list[Problem])
    sources: list[Path] = field(default_factory=list[Path])
    """The files and package folders of the loaded modules (what `mkdocs serve` watches)."""

    def report(self, key: str, message: str) -> None:
        self.problems.append(Problem(key=key, message=message))


def load(modules: list[str], callables: list[str], *, root: Path) -> Loaded:
    """Import `modules` and call `callables` (`module:function`) into a fresh registry, `root` importable."""
    named = [*modules, *(spec.partition(':')[0] for spec in callables if spec.partition(':')[0])]
    _forget(named)
    importlib.invalidate_caches()  # a module file added since the last build is found
    with _importable(root), use_registry() as registry:
        loaded = Loaded(registry=registry)
        for module in modules:
            _import(loaded, module)
        for spec in callables:
            _call(loaded, spec)
    loaded.sources = _sources(named)
    return loaded


def _import(loaded: Loaded, module: str) -> None:
    before = set(loaded.registry.list_names())
    imported_already = module in sys.modules  # by a module listed before it: what it registers was counted there
    try:
        import_modules([module])
    except ConfigurationError as error:
        loaded.report('modules', str(error))
        return
    if not _added(loaded, before, ('modules', f'module {module}')) and not imported_already:
        loaded.report(
            'modules',
            f'module {quote(module)} registers no agentool when imported; if it registers them '
            'in a function, list that function under `callables` (module:function) instead',
        )


def _call(loaded: Loaded, spec: str) -> None:
    module, _, attribute = spec.partition(':')
    if not (module and attribute):
        loaded.report('callables', f'{quote(spec)} is not module:function (e.g. shop.tools:create_tools)')
        return
    before = set(loaded.registry.list_names())
    try:
        target: object = pkgutil.resolve_name(spec)
        if not callable(target):
            raise TypeError(f'{attribute} is a {type(target).__name__}, not a function')
        target()
    except Exception as error:  # the user's code may raise anything while it registers agentools
        loaded.report('callables', f'calling {quote(spec)} failed: {type(error).__name__}: {clip(str(error))}')
        return
    if not _added(loaded, before, ('callables', f'callable {spec}')):
        loaded.report('callables', f'calling {quote(spec)} registered no agentool')


def _added(loaded: Loaded, before: set[str], origin: tuple[str, str]) -> list[str]:
    added = [name for name in loaded.registry.list_names() if name not in before]
    loaded.origins.update(dict.fromkeys(added, origin))
    return added


def _forget(modules: list[str]) -> None:
    """Drop `modules` and their submodules from `sys.modules`, so the next import runs their code again."""
    for name in list(sys.modules):
        if any(name == module or name.startswith(f'{module}.') for module in modules):
            del sys.modules[name]


def _sources(modules: list[str]) -> list[Path]:
    found: list[Path] = []
    for name in dict.fromkeys(modules):
        if isinstance(path := getattr(sys.modules.get(name), '__file__', None), str):
            file = Path(path)
            found.append(file.parent if file.name == '__init__.py' else file)
    return found


@contextmanager
def _importable(root: Path) -> Generator[None]:
    """The project's folder (where mkdocs.yml is) importable while the modules load, as `python -m` makes it."""
    entry = str(root)
    added = entry not in sys.path
    if added:
        sys.path.insert(0, entry)
    try:
        yield
    finally:
        if added and entry in sys.path:
            sys.path.remove(entry)
