"""Dependencies between agentools: as data, and as a Mermaid flowchart."""

from __future__ import annotations

from typing import TYPE_CHECKING, NotRequired, TypedDict

from .._options import check_flag, replace_refused
from .data import check_registry, tool_names

if TYPE_CHECKING:
    from ..core.registry import AgenToolRegistry

__all__ = ('DependencyGraph', 'dependency_graph', 'mermaid_graph')


class DependencyGraph(TypedDict):
    """Who depends on whom. Agentools are sorted by name; lists keep their declared order."""

    agentools: dict[str, list[str]]
    """Agentool → its dependencies: those declared (as given), then the registered agentools its routes name."""
    missing: dict[str, list[str]]
    """Agentool → its declared dependencies that are not registered (only agentools that have some)."""
    tools: NotRequired[dict[str, list[str]]]
    """Agentool → its tool functions (only with `include_tools=True`)."""


def dependency_graph(registry: AgenToolRegistry, *, include_tools: bool = True) -> DependencyGraph:
    """Dependencies between agentools, those not registered, and the tools of each."""
    check_registry(registry)
    check_flag('include_tools', include_tools)  # a truthy 'no' would include them
    agentools: dict[str, list[str]] = {}
    missing: dict[str, list[str]] = {}
    for name in registry.list_names():
        config = registry.require(name)
        dependencies = list(config.dependencies)
        routed = [route.tool for route in config.routing_config.operation_map.values()]
        dependencies += [t for t in dict.fromkeys(routed) if t != name and t in registry and t not in dependencies]
        agentools[name] = dependencies
        if absent := [dep for dep in dict.fromkeys(dependencies) if dep not in registry]:
            missing[name] = absent
    graph = DependencyGraph(agentools=agentools, missing=missing)
    if include_tools:
        graph['tools'] = {name: tool_names(registry.require(name)) for name in agentools}
    return graph


def mermaid_graph(registry: AgenToolRegistry, *, include_tools: bool = True) -> str:
    """The dependency graph as Mermaid flowchart text (`graph LR`), labels escaped; missing dependencies dashed."""
    graph = dependency_graph(registry, include_tools=include_tools)
    ids = {name: f'a{index}' for index, name in enumerate(graph['agentools'])}
    lines = ['graph LR']
    lines += [f'    {ids[name]}("{_label(name)}")' for name in graph['agentools']]
    absent = sorted({dep for deps in graph['missing'].values() for dep in deps})
    ids.update({dep: f'm{index}' for index, dep in enumerate(absent)})
    lines += [f'    {ids[dep]}["{_label(dep)} (missing)"]:::missing' for dep in absent]
    for name, dependencies in graph['agentools'].items():
        lines += [f'    {ids[name]} --> {ids[dep]}' for dep in dict.fromkeys(dependencies)]
    for name, tools in graph.get('tools', {}).items():
        lines += [f'    {ids[name]} -.-> {ids[name]}_t{i}["{_label(tool)}()"]' for i, tool in enumerate(tools)]
    if absent:
        lines.append('    classDef missing stroke-dasharray: 5 5')
    return '\n'.join(lines) + '\n'


_ENTITIES = {
    '#': '#35;', '"': '#quot;', '<': '#lt;', '>': '#gt;', '&': '#amp;', '`': '#96;',
    '%': '#37;', '{': '#123;', '}': '#125;', "'": '#39;',
}  # fmt: skip
"""Mermaid syntax as entity codes: quotes, HTML, and `%%{...}%%` (a directive reconfigures a diagram)."""


def _label(text: str) -> str:
    """`text` safe inside a quoted Mermaid label, unfolded: every control or format character an entity."""
    return replace_refused(''.join(_ENTITIES.get(char, char) for char in text), lambda char: f'#{ord(char)};')
