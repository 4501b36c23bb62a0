"""Which agentool operations a surface exposes, and under which tool names.

A selector without wildcards that matches nothing raises `SelectorError`, so a typo never exposes
everything or nothing.
"""

from __future__ import annotations

import fnmatch
import re
from collections.abc import Iterable
from dataclasses import dataclass

from ._options import check_instance, check_string_or_strings, check_strings, check_text
from .core.manager import AgenToolManager
from .core.registry import AgenToolRegistry, Route, get_registry
from .errors import InvalidToolNameError, SelectorError, ToolNameConflictError, did_you_mean, quote, suggest

__all__ = (
    'ExposedOperation',
    'Selectors',
    'select_operations',
    'is_exposed',
    'check_selector',
    'TAG_PREFIX',
    'TOOL_NAME_PATTERN',
)

TAG_PREFIX = 'tag:'
"""Selectors starting with this match tags instead of names."""

TOOL_NAME_PATTERN = '^[a-zA-Z0-9_-]{1,64}$'
"""What every exposed tool name matches: the rule MCP and the LLM providers' APIs (OpenAI, Anthropic) share."""

_TOOL_NAME = re.compile(TOOL_NAME_PATTERN)

Selectors = str | Iterable[str]
"""One selector or several; a plain string is one selector, never a sequence of characters."""


@dataclass(frozen=True, kw_only=True)
class ExposedOperation:
    """One operation of one agentool, as a surface exposes it."""

    agentool: str
    operation: str
    """The operation value the surface fills in."""
    name: str
    """The tool name clients call it by (`{prefix}{agentool}{separator}{operation}`)."""
    route: Route
    manager: AgenToolManager

    @property
    def tags(self) -> frozenset[str]:
        """The route's tags and the agentool's tags."""
        return frozenset(self.route.tags).union(self.manager.config.tags)


def is_exposed(
    agentool: str,
    operation: str,
    route: Route,
    *,
    tags: Iterable[str] = (),
    include: Selectors | None = None,
    exclude: Selectors = (),
) -> bool:
    """The selection rule for one operation: exclude wins, include is an allowlist, else not deprecated."""
    check_text('agentool', agentool)
    check_text('operation', operation)
    check_instance('route', route, Route)
    include_list = None if include is None else check_string_or_strings('include', include)
    all_tags = frozenset(check_strings('tags', tags)).union(route.tags)
    return _exposed(agentool, operation, route, all_tags, include_list, check_string_or_strings('exclude', exclude))


def _exposed(
    agentool: str, operation: str, route: Route, tags: frozenset[str], include: list[str] | None, exclude: list[str]
) -> bool:
    if any(_matches(s, agentool, operation, tags) for s in exclude):
        return False
    if include is not None:
        return any(_matches(s, agentool, operation, tags) for s in include)
    return not route.deprecated


def select_operations(
    registry: AgenToolRegistry | None = None,
    *,
    include: Selectors | None = None,
    exclude: Selectors = (),
    prefix: str = '',
    separator: str = '_',
) -> list[ExposedOperation]:
    """The operations of `registry` (default: the one in effect) to expose, in a stable order.

    Raises:
        SelectorError: a selector without wildcards matches no agentool, operation or tag.
        ToolNameConflictError: two selected operations would get the same tool name.
        InvalidToolNameError: a tool name does not match `TOOL_NAME_PATTERN`.
    """
    check_instance('registry', registry, AgenToolRegistry, optional=True)
    check_text('prefix', prefix)
    check_text('separator', separator)
    registry = get_registry() if registry is None else registry
    include_list = None if include is None else check_string_or_strings('include', include)
    exclude_list = check_string_or_strings('exclude', exclude)
    runnable = [name for name in registry.list_names() if not registry.validate_config(name, include_warnings=False)]
    described = _described(registry, runnable)  # described only (cannot run): not exposed
    for option, selectors in (('include', include_list or []), ('exclude', exclude_list)):
        for selector in selectors:
            _check_selector(option, selector, described)
    owners: dict[str, ExposedOperation] = {}
    for name, operation, route, tags in described:
        if not _exposed(name, operation, route, tags, include_list, exclude_list):
            continue
        item = ExposedOperation(
            agentool=name,
            operation=operation,
            name=f'{prefix}{name}{separator}{operation}',
            route=route,
            manager=registry.get_manager(name),
        )
        if not _TOOL_NAME.fullmatch(item.name):
            raise InvalidToolNameError(
                f'tool name {item.name!r} (prefix {prefix!r}, separator {separator!r}) is not usable: a tool name '
                f'must match {TOOL_NAME_PATTERN} (letters, digits, _ and -, at most 64 characters), which MCP and '
                'the LLM APIs all accept; choose another prefix or separator, or exclude the operation',
                agentool=name,
                operation=operation,
                tool_name=item.name,
                rule=TOOL_NAME_PATTERN,
            )
        if (other := owners.get(item.name)) is not None:
            raise ToolNameConflictError(
                f'tool name {item.name!r} would expose both {other.agentool}.{other.operation} and '
                f'{name}.{operation}; exclude one of them or choose another separator',
                agentool=name,
                operation=operation,
                tool_name=item.name,
                operations=[f'{other.agentool}.{other.operation}', f'{name}.{operation}'],
            )
        owners[item.name] = item
    return list(owners.values())


def _is_pattern(selector: str) -> bool:
    return any(char in selector for char in '*?[')


def _matches(selector: str, agentool: str, operation: str, tags: frozenset[str]) -> bool:
    if selector.startswith(TAG_PREFIX):
        tag = selector[len(TAG_PREFIX) :]
        return any(fnmatch.fnmatchcase(t, tag) for t in tags) if _is_pattern(tag) else tag in tags
    if not _is_pattern(selector):
        return selector in (agentool, f'{agentool}.{operation}')
    return fnmatch.fnmatchcase(agentool, selector) or fnmatch.fnmatchcase(f'{agentool}.{operation}', selector)


def check_selector(registry: AgenToolRegistry, selector: str, *, option: str = 'include') -> None:
    """Refuse `selector` (`SelectorError`) when it has no wildcard and matches nothing, runnable or not."""
    check_instance('registry', registry, AgenToolRegistry)
    check_text(option, selector)
    check_text('option', option)
    _check_selector(option, selector, _described(registry, registry.list_names()))


_Described = tuple[str, str, Route, frozenset[str]]
"""An operation as selectors see it: agentool, operation, route, and the route's and agentool's tags."""


def _described(registry: AgenToolRegistry, names: list[str]) -> list[_Described]:
    return [
        (name, operation, route, frozenset(route.tags).union(config.tags))
        for name in names
        for config in (registry.require(name),)
        for operation, route in config.routing_config.operation_map.items()
    ]


def _check_selector(option: str, selector: str, candidates: list[_Described]) -> None:
    if _is_pattern(selector) or any(_matches(selector, name, op, tags) for name, op, _, tags in candidates):
        return
    if selector.startswith(TAG_PREFIX):
        known = sorted({TAG_PREFIX + tag for *_, tags in candidates for tag in tags})
    else:
        known = sorted({name for name, *_ in candidates} | {f'{name}.{op}' for name, op, *_ in candidates})
    suggestions = suggest(selector, known)
    raise SelectorError(
        f'{option} selector {quote(selector)} matches no registered agentool, operation or tag'
        f'{did_you_mean(suggestions)}',
        selector=selector,
        option=option,
        suggestions=suggestions,
    )
