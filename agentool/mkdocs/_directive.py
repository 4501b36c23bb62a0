"""`::: agentool NAME` and `::: agentool NAME.OPERATION` in a hand-written page: its catalog entry in place.

Expanded before the page is converted, so the entry's headings join its table of contents.
"""

from __future__ import annotations

import re
from collections.abc import Callable

from .._bounds import did_you_mean, quote, suggest
from ..catalog import CatalogEntry
from ..catalog.markdown import agentool_markdown, operation_markdown

_DIRECTIVE = re.compile(r'^::: agentool[ \t]+(?P<target>\S.*?)[ \t]*$')
_FENCE = re.compile(r'^[ \t]{0,3}(?P<fence>`{3,}|~{3,})')


def expand(markdown: str, entries: dict[str, CatalogEntry], report: Callable[[str], None]) -> str:
    """`markdown` with every directive replaced by its entry; one it cannot resolve is reported and left out."""
    if '::: agentool' not in markdown:
        return markdown
    lines: list[str] = []
    fence: str | None = None
    for line in markdown.split('\n'):
        opened = _FENCE.match(line)
        if fence is not None:
            if opened and opened['fence'][0] == fence[0] and len(opened['fence']) >= len(fence):
                fence = None
        elif opened:
            fence = opened['fence']
        elif directive := _DIRECTIVE.match(line):
            line = _entry(directive['target'], entries, report)
        lines.append(line)
    return '\n'.join(lines)


def _entry(target: str, entries: dict[str, CatalogEntry], report: Callable[[str], None]) -> str:
    if (entry := entries.get(target)) is not None:
        return agentool_markdown(entry, heading_level=2)
    name, _, operation = target.rpartition('.')
    if (entry := entries.get(name)) is not None:
        if (found := next((op for op in entry['operations'] if op['name'] == operation), None)) is not None:
            return operation_markdown(found)
        problem = f'agentool {quote(name)} documents no operation {quote(operation)}'
        hint = did_you_mean(suggest(operation, [op['name'] for op in entry['operations']]))
    else:
        problem = 'no agentool or operation of that name is in the catalog'
        known = [*entries, *(f'{n}.{op["name"]}' for n, e in entries.items() for op in e['operations'])]
        hint = did_you_mean(suggest(target, known))
    report(f'::: agentool {quote(target)}: {problem}{hint}')
    return ''
