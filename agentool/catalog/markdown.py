"""The catalog as Markdown, in the architecture guide's layout, with every piece of user-supplied text escaped.

User text renders as the literal text it is; schemas and examples are JSON in fenced blocks.
"""

from __future__ import annotations

import json
import re
from typing import TYPE_CHECKING, Any, cast

from .._options import check_limit, check_text, replace_refused
from ..core.definition import docstring_summary
from .data import CatalogEntry, CatalogOperation, CatalogTool, export_catalog, field_wording, operation_hints

if TYPE_CHECKING:
    from ..core.registry import AgenToolRegistry

__all__ = ('markdown_docs', 'agentool_markdown', 'operation_markdown', 'escape', 'code', 'paragraphs', 'json_block')

_DEEPEST_LEVEL = 4
"""The deepest heading an agentool's name can take: its tools and examples are two levels below (`######`)."""
_BACKSLASHED = frozenset('\\`*{}[]#')
"""Characters escaped with a backslash wherever they are (emphasis, code, links, attributes, headings)."""
_WORD_UNDERSCORE = re.compile(r'(?<=[^\W_])_(?=[^\W_])')
"""An underscore inside a word (`doc_test`): no emphasis can open or close there, so it stays as it is."""
_ENTITIES = {'&': '&amp;', '<': '&lt;', '>': '&gt;', '|': '&#124;', '~': '&#126;'}
"""Characters written as HTML entities: raw HTML, blockquotes, tables, strikethrough."""
_LINE_START = re.compile(r'^(?:[-+!]|[:=?]|\d+[.)])')
"""What opens a block at the start of a line: lists, admonitions, definitions, headings, ordered lists."""


def _visible(text: str) -> str:
    """`text` with whitespace folded and every other control or format character as its escape (`\\u202e`)."""
    folded = ' '.join(text.split())
    if folded.isprintable():
        return folded
    return replace_refused(folded, lambda char: char.encode('unicode_escape').decode('ascii'))


def _line_start(match: re.Match[str]) -> str:
    marker = match.group()  # `:`, `=` and `?` are one character, written as an entity
    return f'&#{ord(marker)};' if marker[-1] in ':=?' else f'{marker[:-1]}\\{marker[-1]}'


def escape(text: str, *, line_start: bool = True) -> str:
    """`text` as literal inline Markdown: whitespace folded to single spaces, syntax escaped.

    `line_start=False` is for text after something on its line, where `1.` opens no block.
    """
    folded = _visible(text)
    inside_words = {match.start() for match in _WORD_UNDERSCORE.finditer(folded)}
    escaped = ''.join(
        _ENTITIES.get(c, f'\\{c}' if c in _BACKSLASHED or (c == '_' and i not in inside_words) else c)
        for i, c in enumerate(folded)
    )
    return _LINE_START.sub(_line_start, escaped, count=1) if line_start else escaped


def paragraphs(text: str) -> str:
    """Multi-line `text` (a docstring) as escaped Markdown: its paragraphs, and its lines kept as line breaks."""
    blocks = [block for block in re.split(r'\n\s*\n', text.strip()) if block.strip()]
    return '\n\n'.join('  \n'.join(escape(line) for line in block.splitlines() if line.strip()) for block in blocks)


def code(text: str) -> str:
    """`text` as an inline code span, whatever backticks it contains."""
    folded = _visible(text)
    if not folded:
        return ''
    fence = '`' * (max((len(run) for run in re.findall('`+', folded)), default=0) + 1)
    pad = ' ' if folded.startswith('`') or folded.endswith('`') else ''
    return f'{fence}{pad}{folded}{pad}{fence}'


def json_block(value: Any) -> str:
    """`value` as indented JSON in a fenced block, control and format characters escaped."""
    text = json.dumps(value, indent=2, ensure_ascii=False)
    # JSON escapes C0 controls only: DEL, C1, format marks and separators are escaped as JSON would.
    text = '\n'.join(replace_refused(line, lambda char: json.dumps(char)[1:-1]) for line in text.split('\n'))
    longest = max((len(run) for run in re.findall(r'^\s*(`+)', text, flags=re.MULTILINE)), default=0)
    fence = '`' * max(3, longest + 1)
    return f'{fence}json\n{text}\n{fence}'


def markdown_docs(registry: AgenToolRegistry, *, title: str | None = 'AgenTool Registry Documentation') -> str:
    """Markdown documentation of every agentool in `registry`, sorted by name, under heading `title`."""
    catalog = export_catalog(registry)  # checks the registry
    check_text('title', title, optional=True)
    lines: list[str] = [f'# {escape(title)}', ''] if title else []
    lines += [f'Total AgenTools: {catalog["total_agentools"]}', '']
    for entry in catalog['agentools']:
        lines += _agentool(entry, 2)
    return '\n'.join(lines).rstrip() + '\n'


def agentool_markdown(entry: CatalogEntry, *, heading_level: int = 2) -> str:
    """One catalog entry as Markdown, laid out as in `markdown_docs`, its name a heading of `heading_level` (1-4)."""
    check_limit('heading_level', heading_level, maximum=_DEEPEST_LEVEL)  # the sections go two levels deeper
    return '\n'.join(_agentool(entry, heading_level)).rstrip() + '\n'


def operation_markdown(operation: CatalogOperation) -> str:
    """One operation as Markdown: the list item `markdown_docs` writes for it, then its request schema."""
    lines = [*_operation(operation), '', '**Request schema:**', '', json_block(operation['request_schema'])]
    return '\n'.join(lines) + '\n'


def _agentool(entry: CatalogEntry, level: int) -> list[str]:
    heading, section, item = '#' * level, '#' * (level + 1), '#' * (level + 2)
    lines = [f'{heading} {escape(entry["name"])}', '']
    if entry['description']:
        lines += [f'**Description:** {escape(entry["description"], line_start=False)}', '']
    lines += [f'**Version:** {escape(entry["version"], line_start=False)}', '']
    if entry['tags']:
        lines += [f'**Tags:** {", ".join(escape(tag, line_start=False) for tag in entry["tags"])}', '']
    if entry['dependencies']:
        lines += [f'**Depends on:** {", ".join(code(dep) for dep in entry["dependencies"])}', '']
    output = code(entry['output_type']) if entry['output_type'] else 'JSON text (untyped)'
    lines += [f'**Output:** {output}', '', f'**Operation field:** {code(entry["operation_field"])}', '']
    if entry['operations']:
        lines += [f'{section} Operations', '']
        for operation in entry['operations']:
            lines += _operation(operation)
        lines.append('')
    if entry['tools']:
        lines += [f'{section} Tools', '']
        for tool in entry['tools']:
            lines += _tool(tool, item)
    lines += [f'{section} Input Schema', '', json_block(entry['input_schema']), '']
    if entry['examples']:
        lines += [f'{section} Examples', '']
        for number, example in enumerate(entry['examples'], 1):
            lines += _example(number, example, item)
    return lines


def _operation(operation: CatalogOperation) -> list[str]:
    summary = docstring_summary(operation['description'])
    about = escape(summary, line_start=False) if summary else f'Calls {code(operation["tool"])}'
    items = [f'**Tool:** {code(operation["tool"])}']
    if operation['returns']:
        items[0] += f' (returns {code(operation["returns"])})'
    if operation['deprecated']:
        items.append('**Deprecated.**')
    if hints := operation_hints(operation):
        items.append(f'**Hints:** {", ".join(hints)}')
    if operation['tags']:
        items.append(f'**Tags:** {", ".join(escape(tag, line_start=False) for tag in operation["tags"])}')
    items.append('**Fields:**' if operation['fields'] else '**Fields:** none')
    lines = [f'- **{escape(operation["name"], line_start=False)}**: {about}']
    lines += [f'    - {item}' for item in items]
    for field in operation['fields']:
        wording = field_wording(field, operation['request_schema'], code=code)
        described = f': {escape(field["description"], line_start=False)}' if field['description'] else ''
        lines.append(f'        - {code(field["name"])} ({wording}){described}')
    return lines


def _tool(tool: CatalogTool, heading: str) -> list[str]:
    lines = [f'{heading} {escape(tool["name"])} ({"async" if tool["is_async"] else "sync"})', '']
    if tool['description']:
        lines += [paragraphs(tool['description']), '']
    facts: list[str] = []
    if tool['parameters']:
        facts.append(f'- Parameters: {", ".join(escape(p, line_start=False) for p in tool["parameters"])}')
    if tool['return_type']:
        facts.append(f'- Returns: {code(tool["return_type"])}')
    return [*lines, *facts, ''] if facts else lines


def _example(number: int, example: Any, heading: str) -> list[str]:
    lines = [f'{heading} Example {number}', '']
    if not isinstance(example, dict) or not ({'input', 'output'} & example.keys()):
        return [*lines, json_block(example), '']
    parts = cast('dict[str, Any]', example)
    if isinstance(description := parts.get('description'), str) and description:
        lines += [paragraphs(description), '']
    for key, label in (('input', '**Input:**'), ('output', '**Output:**')):
        if key in parts:
            lines += [label, '', json_block(parts[key]), '']
    return lines
