"""The catalog the plugin publishes: which agentools and operations, and each generated file's text.

Selection is `agentool.filters`' rule, except that without `include` deprecated operations are
documented too (a catalog describes what exists).
"""

from __future__ import annotations

import html
import json
import re
from dataclasses import dataclass, field
from typing import Any

from .._bounds import clip, quote
from ..catalog import CatalogEntry, catalog_entry, export_catalog, mermaid_graph, openapi_spec
from ..catalog.markdown import agentool_markdown, code, escape, json_block
from ..core.registry import AgenToolRegistry
from ..errors import SelectorError
from ..filters import check_selector, is_exposed
from ._load import Loaded, Problem

INDEX = 'index.md'
JSON_CATALOG = 'catalog.json'
OPENAPI = 'openapi.json'
_UNSAFE = re.compile(r'[^A-Za-z0-9_.-]+')


@dataclass(frozen=True, kw_only=True)
class SiteOptions:
    """The plugin options that shape the catalog (checked by MkDocs' config validation)."""

    include: list[str] | None
    exclude: list[str]
    output: str
    title: str
    page_title: str
    openapi_version: str


@dataclass(kw_only=True)
class CatalogSite:
    """The documented agentools (their entries hold the selected operations only) and their pages."""

    options: SiteOptions
    entries: dict[str, CatalogEntry] = field(default_factory=dict[str, CatalogEntry])
    pages: dict[str, str] = field(default_factory=dict[str, str])
    """Agentool name → its page, relative to the docs folder (`agentools/notes.md`)."""
    files: dict[str, str] = field(default_factory=dict[str, str])
    """Generated file (relative to the docs folder) → its text."""
    problems: list[Problem] = field(default_factory=list[Problem])

    def page_title(self, name: str) -> str:
        """The title of agentool `name`'s page, as HTML: themes write page titles unescaped."""
        return self.options.page_title.format(name=html.escape(name))


def build_site(loaded: Loaded, options: SiteOptions) -> CatalogSite:
    """Select, describe and render the agentools `loaded` registered."""
    site = CatalogSite(options=options)
    registry = loaded.registry
    include = None if options.include is None else _checked(site, registry, 'include', options.include)
    exclude = _checked(site, registry, 'exclude', options.exclude)
    for name in registry.list_names():
        config = registry.require(name)
        operations = [
            operation
            for operation, route in config.routing_config.operation_map.items()
            if is_exposed(name, operation, route, tags=config.tags, include=['*'] if include is None else include,
                          exclude=exclude)
        ]  # fmt: skip
        if not operations:
            continue
        try:
            entry = catalog_entry(registry, name)
        except Exception as error:  # a schema pydantic cannot write, say: named, and the rest still documented
            key, source = loaded.origins.get(name, ('modules', 'the modules'))
            message = (
                f'agentool {quote(name)} (registered by {source}) cannot be described by the catalog: '
                f'{type(error).__name__}: {clip(" ".join(str(error).split()))}; fix it, or leave it out '
                f'with `exclude: [{quote(name)}]`'
            )
            site.problems.append(Problem(key=key, message=message))
            continue
        entry['operations'] = [op for op in entry['operations'] if op['name'] in operations]
        site.entries[name] = entry
    site.pages = _pages(options.output, list(site.entries))
    documented = AgenToolRegistry()
    for name in site.entries:
        documented.register(name, registry.require(name))
    _render(site, documented)
    return site


def _checked(site: CatalogSite, registry: AgenToolRegistry, key: str, selectors: list[str]) -> list[str]:
    kept: list[str] = []
    for selector in selectors:
        try:
            check_selector(registry, selector, option=key)
        except SelectorError as error:
            site.problems.append(Problem(key=key, message=str(error)))
            continue
        kept.append(selector)
    return kept


def _pages(output: str, names: list[str]) -> dict[str, str]:
    """A file per agentool beside the index, named after it where safe in a path, unique whatever the case."""
    taken = {INDEX.removesuffix('.md')}
    pages: dict[str, str] = {}
    for name in names:
        base = _UNSAFE.sub('-', name).strip('-.') or 'agentool'
        slug, number = base, 2
        while slug.lower() in taken:
            slug, number = f'{base}-{number}', number + 1
        taken.add(slug.lower())
        pages[name] = f'{output}/{slug}.md'
    return pages


def _render(site: CatalogSite, registry: AgenToolRegistry) -> None:
    options = site.options
    catalog = export_catalog(registry)
    catalog['agentools'] = list(site.entries.values())  # the same entries, with the selected operations only
    spec = openapi_spec(registry, title=options.title, openapi_version=options.openapi_version)  # pyright: ignore[reportArgumentType]
    spec['paths'] = {path: item for path, item in spec['paths'].items() if _documented(item['post'], site.entries)}
    site.files[f'{options.output}/{JSON_CATALOG}'] = json.dumps(catalog, indent=2, allow_nan=False)
    site.files[f'{options.output}/{OPENAPI}'] = json.dumps(spec, indent=2, allow_nan=False)
    # Agentools and their dependencies only: each page lists its tools, and with them the graph grows tall.
    site.files[f'{options.output}/{INDEX}'] = _index(site, mermaid_graph(registry, include_tools=False))
    users: dict[str, list[str]] = {}
    for name, entry in site.entries.items():
        for dependency in entry['dependencies']:
            users.setdefault(dependency, []).append(name)
    for name, entry in site.entries.items():
        site.files[site.pages[name]] = _page(site, entry, users.get(name, []))


def _documented(post: dict[str, Any], entries: dict[str, CatalogEntry]) -> bool:
    about = post['x-agentool']
    operations = entries[about['agentool']]['operations']
    return 'operation' not in about or any(op['name'] == about['operation'] for op in operations)


def _index(site: CatalogSite, graph: str) -> str:
    options = site.options
    lines = [
        f'# {escape(options.title)}',
        '',
        f'{len(site.entries)} agentools, generated from their definitions when the docs are built. '
        f'Also published: the [JSON catalog]({JSON_CATALOG}) and the '
        f'[OpenAPI {options.openapi_version} document]({OPENAPI}).',
        '',
        '## Dependencies',
        '',
        'Each agentool points to the agentools it depends on; a dashed node is a dependency '
        'this catalog does not document.',
        '',
        # Raw HTML rather than a ```mermaid fence: no Markdown extension needed, on any theme.
        f'<pre class="mermaid">{html.escape(graph.rstrip(), quote=False)}</pre>',
        '',
        '## Agentools',
        '',
        '| Agentool | Version | Operations | Description |',
        '| --- | --- | --- | --- |',
    ]
    for name, entry in site.entries.items():
        link = f'[{escape(name, line_start=False)}]({site.pages[name].rpartition("/")[2]})'
        operations = ', '.join(
            code(op['name']) + (' (deprecated)' if op['deprecated'] else '') for op in entry['operations']
        )
        description = escape(entry['description'] or '', line_start=False)
        lines.append(f'| {link} | {escape(entry["version"], line_start=False)} | {operations} | {description} |')
    return '\n'.join(lines) + '\n'


def _page(site: CatalogSite, entry: CatalogEntry, users: list[str]) -> str:
    title = site.page_title(entry['name'])
    # JSON is YAML: the title is one quoted scalar whatever it holds.
    lines = ['---', f'title: {json.dumps(title)}', '---', '', agentool_markdown(entry, heading_level=1)]
    linked = [*(('Depends on', dep) for dep in entry['dependencies']), *(('Used by', user) for user in users)]
    if linked:
        lines += ['## Dependencies', '']
        for label, other in linked:
            page = site.pages.get(other)
            shown = f'[{escape(other, line_start=False)}]({page.rpartition("/")[2]})' if page else (
                f'{code(other)} (not in this catalog)'
            )  # fmt: skip
            lines.append(f'- {label}: {shown}')
        lines.append('')
    if entry['operations']:
        lines += ['## Request schemas', '']
        for operation in entry['operations']:
            lines += [f'### {escape(operation["name"])}', '', json_block(operation['request_schema']), '']
    return '\n'.join(lines)
