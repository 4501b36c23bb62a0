"""The catalog as Markdown, with every piece of user-supplied text escaped.

Names, descriptions, docstrings, tags and types are escaped so they render as the literal text
they are: no emphasis, links, headings, lists, HTML or tables can come out of them. Schemas and
examples are shown as JSON in fenced blocks.
"""

from __future__ import annotations

import json
import re
from typing import TYPE_CHECKING, Any

from .data import CatalogEntry, CatalogOperation, export_catalog

if TYPE_CHECKING:
    from ..core.registry import AgenToolRegistry

__all__ = ('markdown_docs', 'escape', 'code', 'paragraphs')

_BACKSLASHED = frozenset('\\`*_{}[]#')
"""Characters escaped with a backslash wherever they are (emphasis, code, links, attributes, headings)."""
_ENTITIES = {'&': '&amp;', '<': '&lt;', '>': '&gt;', '|': '&#124;', '~': '&#126;'}
"""Characters written as HTML entities: raw HTML, blockquotes, tables, strikethrough."""
_LINE_START = re.compile(r'^(?:[-+!]|[:=?]|\d+[.)])')
"""What opens a block at the start of a line: lists, admonitions, definitions, headings, ordered lists."""


def _line_start(match: re.Match[str]) -> str:
    marker = match.group()
    if marker[-1] in ':=?':
        return f'&#{ord(marker)};'
    return f'{marker[:-1]}\\{marker[-1]}'


def escape(text: str) -> str:
    """`text` as literal inline Markdown: whitespace folded to single spaces, syntax escaped."""
    folded = ' '.join(text.split())
    escaped = ''.join(_ENTITIES.get(c, f'\\{c}' if c in _BACKSLASHED else c) for c in folded)
    return _LINE_START.sub(_line_start, escaped, count=1)


def paragraphs(text: str) -> str:
    """Multi-line `text` (a docstring) as escaped Markdown: its paragraphs, and its lines kept as line breaks."""
    blocks = [block for block in re.split(r'\n\s*\n', text.strip()) if block.strip()]
    return '\n\n'.join('  \n'.join(escape(line) for line in block.splitlines() if line.strip()) for block in blocks)


def code(text: str) -> str:
    """`text` as an inline code span, whatever backticks it contains."""
    folded = ' '.join(text.split())
    if not folded:
        return ''
    fence = '`' * (max((len(run) for run in re.findall('`+', folded)), default=0) + 1)
    pad = ' ' if folded.startswith('`') or folded.endswith('`') else ''
    return f'{fence}{pad}{folded}{pad}{fence}'


def _json_block(value: Any) -> str:
    text = json.dumps(value, indent=2, ensure_ascii=False)
    longest = max((len(run) for run in re.findall(r'^\s*(`+)', text, flags=re.MULTILINE)), default=0)
    fence = '`' * max(3, longest + 1)
    return f'{fence}json\n{text}\n{fence}'


def markdown_docs(registry: AgenToolRegistry, *, title: str | None = 'AgenTool catalog') -> str:
    """Markdown documentation of every agentool in `registry`, sorted by name.

    Args:
        registry: The registry to document.
        title: The level-1 heading; `None` leaves it out (each agentool is a level-2 section).
    """
    catalog = export_catalog(registry)
    lines: list[str] = [f'# {escape(title)}', ''] if title else []
    names = [entry['name'] for entry in catalog['agentools']]
    if names:
        count = f'{len(names)} agentool{"s" if len(names) != 1 else ""}'
        lines += [f'{count}: {", ".join(code(name) for name in names)}.', '']
    else:
        lines += ['No agentools are registered.', '']
    for entry in catalog['agentools']:
        lines += _agentool(entry)
    return '\n'.join(lines).rstrip() + '\n'


def _agentool(entry: CatalogEntry) -> list[str]:
    lines = [f'## {code(entry["name"])}', '']
    if entry['description']:
        lines += [paragraphs(entry['description']), '']
    facts = [
        f'**Version:** {escape(entry["version"])}',
        f'**Tags:** {", ".join(escape(tag) for tag in entry["tags"]) or "none"}',
        f'**Depends on:** {", ".join(code(dep) for dep in entry["dependencies"]) or "nothing"}',
        f'**Output:** {code(entry["output_type"]) if entry["output_type"] else "JSON text (untyped)"}',
        f'**Operation field:** {code(entry["operation_field"])}',
    ]
    lines += [f'- {fact}' for fact in facts] + ['', '### Operations', '']
    for operation in entry['operations']:
        lines += _operation(operation)
    lines += ['### Input schema', '', _json_block(entry['input_schema']), '']
    if entry['examples']:
        lines += ['### Examples', '', _json_block(entry['examples']), '']
    return lines


def _operation(operation: CatalogOperation) -> list[str]:
    lines = [f'#### {code(operation["name"])}', '']
    if operation['deprecated']:
        lines += ['**Deprecated.**', '']
    if operation['description']:
        lines += [paragraphs(operation['description']), '']
    returns = f' (returns {code(operation["returns"])})' if operation['returns'] else ''
    items = [f'**Tool:** {code(operation["tool"])}{returns}']
    if hints := _hints(operation):
        items.append(f'**Hints:** {", ".join(hints)}')
    if operation['tags']:
        items.append(f'**Tags:** {", ".join(escape(tag) for tag in operation["tags"])}')
    items.append('**Fields:**' if operation['fields'] else '**Fields:** none')
    lines += [f'- {item}' for item in items]
    for field in operation['fields']:
        required = 'required' if field['required'] else f'optional, default {code(json.dumps(field["default"]))}'
        about = f': {escape(field["description"])}' if field['description'] else ''
        lines.append(f'    - {code(field["name"])} ({code(field["type"])}, {required}){about}')
    return [*lines, '']


def _hints(operation: CatalogOperation) -> list[str]:
    hints = [
        label
        for label, on in (
            ('read-only', operation['read_only']),
            ('idempotent', operation['idempotent']),
            ('destructive', operation['destructive']),
            ('not concurrency-safe', not operation['concurrent_safe']),
        )
        if on
    ]
    if (limit := operation['max_output_chars']) is not None:
        hints.append(f'output cut at {limit} characters')
    return hints
