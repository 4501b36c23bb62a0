"""The registry: agentool configurations by name, each with the manager that runs it.

`get_registry()` is the default one, unless `use_registry()` scopes another to a block or task.
"""

from __future__ import annotations

import dataclasses
import functools
from collections.abc import Callable, Generator, Iterator, MutableMapping, Sequence
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass
from types import MethodType
from typing import TYPE_CHECKING, Any, Concatenate, Generic, Literal, ParamSpec, TypeVar, cast

from .._options import check_instance, check_name
from ..errors import ConfigurationError, DuplicateNameError, InvalidUpdateError, quote, suggest
from ._lookup import not_found
from .definition import (
    DEFAULT_MAX_INPUT_BYTES,
    AgenToolConfig,
    ConfigProblem,
    Route,
    RouteSpec,
    RoutingConfig,
    ToolMetadata,
    Transform,
    check_routes,
    configuration_error,
    now,
)
from .manager import AgenToolManager
from .request import InjectorInEffect

if TYPE_CHECKING:
    from .. import catalog

__all__ = (
    'Transform',
    'Route',
    'RouteSpec',
    'RoutingConfig',
    'ToolMetadata',
    'ConfigProblem',
    'AgenToolConfig',
    'AgenToolRegistry',
    'get_registry',
    'use_registry',
    'hidden_by_scope',
    'not_found',
    'suggest',
    'DEFAULT_MAX_INPUT_BYTES',
)


_P = ParamSpec('_P')
_R = TypeVar('_R')


class _RegistryMethod(Generic[_P, _R]):
    """A registry method that also works on the class, acting on the registry in effect."""

    def __init__(self, method: Callable[Concatenate[AgenToolRegistry, _P], _R]) -> None:
        self._method = method
        self.__doc__ = method.__doc__
        self.__wrapped__ = method

    def __set_name__(self, owner: type[AgenToolRegistry], name: str) -> None:
        self._name = name

    def __get__(
        self, instance: AgenToolRegistry | None, owner: type[AgenToolRegistry] | None = None
    ) -> Callable[_P, _R]:
        method = self._method
        if instance is not None:
            bound = cast('Callable[_P, _R]', MethodType(method, instance))
            # A non-data descriptor: the instance attribute now shadows it, so later lookups are a dict hit.
            instance.__dict__[self._name] = bound
            return bound

        @functools.wraps(method)
        def on_registry_in_effect(*args: _P.args, **kwargs: _P.kwargs) -> _R:
            return method(get_registry(), *args, **kwargs)

        return on_registry_in_effect


class _ConfigsView(MutableMapping[str, AgenToolConfig]):
    """`AgenToolRegistry._configs`, the guide's name-to-config dict: a live view; setting registers."""

    def __init__(self, registry: AgenToolRegistry | None) -> None:
        self._registry = registry

    def __get__(self, instance: AgenToolRegistry | None, owner: type[AgenToolRegistry] | None = None) -> _ConfigsView:
        return self if instance is None else _ConfigsView(instance)

    def _target(self) -> AgenToolRegistry:
        return get_registry() if self._registry is None else self._registry

    def __getitem__(self, name: str) -> AgenToolConfig:
        config = self._target().get(name)
        if config is None:
            raise KeyError(name)
        return config

    def __setitem__(self, name: str, config: AgenToolConfig) -> None:
        self._target().register(name, config, replace=True)

    def __delitem__(self, name: str) -> None:
        if not self._target().unregister(name):
            raise KeyError(name)

    def __iter__(self) -> Iterator[str]:
        return iter(self._target().list_names())

    def __len__(self) -> int:
        return len(self._target())

    def __repr__(self) -> str:
        return f'{type(self).__name__}({dict(self)!r})'


@dataclass(frozen=True)
class _Entry:
    config: AgenToolConfig
    manager: AgenToolManager | None
    """`None` when the configuration cannot run; `problems` then says why."""
    problems: tuple[ConfigProblem, ...] = ()
    warnings: tuple[ConfigProblem, ...] = ()


def _entry_for(name: str, config: AgenToolConfig) -> _Entry:
    routes, problems, warnings = check_routes(name, config)
    manager = None if problems else AgenToolManager(name, config, routes=routes)
    return _Entry(config, manager, tuple(problems), tuple(warnings))


class AgenToolRegistry:
    """Holds agentool configurations by name, with the manager built from each that can run.

    `register` stores any configuration, so catalogs can describe agentools defined elsewhere; one
    that cannot run raises `ConfigurationError` naming every problem when run (`create_agentool`
    refuses it; `validate_config` reports its problems). Every public method also works on the
    class (`AgenToolRegistry.get(name)`), acting on the registry in effect.
    """

    _configs = _ConfigsView(None)

    def __init__(self) -> None:
        self._entries: dict[str, _Entry] = {}
        self.default_injector: InjectorInEffect | None = None
        """The injector `get_injector()` makes for this registry (collected with it)."""

    @_RegistryMethod
    def register(self, name: str, config: AgenToolConfig, *, replace: bool = False) -> None:
        """Store `config` under `name` (checked, but stored even when it cannot run; see `validate_config`).

        `ConfigurationError` for a bad name or config, or an input schema that is not a pydantic model.
        """
        check_instance('config', config, AgenToolConfig, agentool=check_name(name))
        if not replace and name in self._entries:
            raise DuplicateNameError(
                f'agentool {name!r} is already registered; pass replace=True to replace it', agentool=name
            )
        previous = self._entries.get(name)
        if previous is not None:
            config = dataclasses.replace(config, created_at=previous.config.created_at, updated_at=now())
        entry = _entry_for(name, config)
        if bad := [problem for problem in entry.problems if problem.kind == 'bad_schema']:
            raise configuration_error(name, bad)  # nothing, not even a catalog, can use it
        self._entries[name] = entry

    @_RegistryMethod
    def validate_config(
        self, name_or_config: str | AgenToolConfig, *, include_warnings: bool = True
    ) -> list[ConfigProblem]:
        """Every problem of a configuration (given, or registered under a name): errors first, then warnings."""
        if isinstance(name_or_config, AgenToolConfig):
            _, errors, warnings = check_routes('<unregistered>', name_or_config)
        else:
            entry = self._entry(name_or_config)
            errors, warnings = entry.problems, entry.warnings
        return [*errors, *(warnings if include_warnings else ())]

    @_RegistryMethod
    def get(self, name: str) -> AgenToolConfig | None:
        """The configuration registered under `name`, or `None` (also for a name that is not a string)."""
        return self._entries[name].config if name in self else None

    @_RegistryMethod
    def require(self, name: str) -> AgenToolConfig:
        """The configuration registered under `name`; raises `AgenToolNotFoundError` if there is none."""
        return self._entry(name).config

    @_RegistryMethod
    def get_manager(self, name: str) -> AgenToolManager:
        """The manager that runs agentool `name`; `ConfigurationError` listing every problem if it cannot run."""
        entry = self._entry(name)
        if entry.manager is None:
            raise configuration_error(name, entry.problems)
        return entry.manager

    @_RegistryMethod
    def exists(self, name: str) -> bool:
        """Whether an agentool called `name` is registered."""
        return name in self

    @_RegistryMethod
    def list_names(self) -> list[str]:
        """Registered names, sorted."""
        return sorted(self._entries)

    @_RegistryMethod
    def update(self, name: str, **changes: Any) -> bool:
        """Change `description`, `version`, `tags` or `examples` of agentool `name`, all or nothing
        (else `InvalidUpdateError`); `False` if there is no such agentool."""
        if name not in self:
            return False
        if fixed := [field for field in changes if field not in _UPDATABLE]:
            raise InvalidUpdateError(
                f'agentool {name!r}: field {quote(fixed[0])} cannot be updated (updatable: {", ".join(_UPDATABLE)}); '
                'create the agentool again with replace=True to change anything else',
                agentool=name,
                field=fixed[0],
            )
        try:  # checked as `AgenToolConfig` checks them at creation, reported as the update's own error
            config = dataclasses.replace(self._entries[name].config, **changes, updated_at=now())
        except ConfigurationError as error:
            field = error.details.get('option')
            raise InvalidUpdateError(f'agentool {name!r}: {error.message}', agentool=name, field=field) from None
        self._entries[name] = _entry_for(name, config)
        return True

    @_RegistryMethod
    def unregister(self, name: str) -> bool:
        """Remove agentool `name`; `False` if there was none."""
        return isinstance(cast(object, name), str) and self._entries.pop(name, None) is not None

    @_RegistryMethod
    def clear(self) -> None:
        """Remove every agentool."""
        self._entries.clear()

    @_RegistryMethod
    def list_detailed(self) -> list[catalog.CatalogDetails]:
        """Every agentool's catalog entry plus its registration timestamps, sorted by name."""
        return _catalog().list_detailed(self)

    @_RegistryMethod
    def search(self, tags: Sequence[str] | None = None, name_pattern: str | None = None) -> list[str]:
        """Names, sorted, of the agentools carrying any of `tags` and whose name matches `name_pattern`.

        `name_pattern` is a case-insensitive substring, or a shell pattern if it has `*`, `?` or `[`.
        """
        return _catalog().search(self, tags, name_pattern)

    @_RegistryMethod
    def get_schema(self, name: str) -> dict[str, Any] | None:
        """The JSON schema of agentool `name`'s input; `None` if there is no such agentool (like `get`)."""
        return _catalog().input_schema(self, name) if name in self else None

    @_RegistryMethod
    def get_operations(self, name: str) -> dict[str, catalog.CatalogOperation] | None:
        """Operation → its catalog description, in routing order; `None` if there is no such agentool."""
        return _catalog().operations(self, name) if name in self else None

    @_RegistryMethod
    def get_tools_info(self, name: str) -> list[catalog.CatalogTool] | None:
        """The tool functions of agentool `name` (summary, parameters, types, operations); `None` if unknown."""
        return _catalog().tools_info(self, name) if name in self else None

    @_RegistryMethod
    def export_catalog(self) -> catalog.Catalog:
        """The whole catalog as JSON-serialisable data, in a deterministic order."""
        return _catalog().export_catalog(self)

    @_RegistryMethod
    def generate_markdown_docs(self, *, title: str | None = 'AgenTool Registry Documentation') -> str:
        """The catalog as Markdown, user-supplied text escaped."""
        return _catalog().markdown_docs(self, title=title)

    @_RegistryMethod
    def generate_dependency_graph(self, *, include_tools: bool = True) -> catalog.DependencyGraph:
        """Dependencies between agentools (and their tools) as data; see `generate_mermaid_graph`."""
        return _catalog().dependency_graph(self, include_tools=include_tools)

    @_RegistryMethod
    def generate_mermaid_graph(self, *, include_tools: bool = True) -> str:
        """The dependency graph as Mermaid flowchart text."""
        return _catalog().mermaid_graph(self, include_tools=include_tools)

    @_RegistryMethod
    def generate_api_spec(
        self,
        *,
        title: str = 'AgenTool Registry API',
        version: str = '1.0.0',
        description: str | None = None,
        openapi_version: Literal['3.0.0', '3.1.0'] = '3.0.0',
    ) -> dict[str, Any]:
        """An OpenAPI document: one path per agentool and one per operation."""
        return _catalog().openapi_spec(
            self, title=title, version=version, description=description, openapi_version=openapi_version
        )

    def __contains__(self, name: object) -> bool:
        return isinstance(name, str) and name in self._entries

    def __len__(self) -> int:
        return len(self._entries)

    def _entry(self, name: str) -> _Entry:
        try:
            return self._entries[name]
        except (KeyError, TypeError):  # TypeError: a name that cannot be a key (a list...) names nothing
            raise not_found(name, self._entries, note=hidden_by_scope(name, self)) from None


_UPDATABLE = ('description', 'version', 'tags', 'examples')


def _catalog():
    # Deferred: the core loads the catalog renderers only when asked (they import only its data types).
    from .. import catalog

    return catalog


_default_registry = AgenToolRegistry()
_active_registry: ContextVar[AgenToolRegistry | None] = ContextVar('agentool_registry', default=None)


def get_registry() -> AgenToolRegistry:
    """The registry in effect: the innermost `use_registry()` scope, else the default registry."""
    active = _active_registry.get()
    return _default_registry if active is None else active


def hidden_by_scope(name: object, registry: AgenToolRegistry) -> str:
    """Why `name` is not found in `registry` though the default registry holds it (a scope hides it), or ''."""
    if registry is _default_registry or not isinstance(name, str) or name not in _default_registry:
        return ''
    return (
        f'; {name!r} is registered in the default registry, which this scoped one hides (`use_registry()`, '
        "or the pytest plugin's `agentool_registry` fixture or `agentool_isolate = true`): create it inside "
        'the scope, say by calling the function that creates it in the test or a fixture'
    )


@contextmanager
def use_registry(registry: AgenToolRegistry | None = None) -> Generator[AgenToolRegistry]:
    """Make `registry` (a fresh empty one by default) the registry in effect inside the block (task-local)."""
    check_instance('registry', registry, AgenToolRegistry, optional=True)
    registry = AgenToolRegistry() if registry is None else registry
    token = _active_registry.set(registry)
    try:
        yield registry
    finally:
        _active_registry.reset(token)
