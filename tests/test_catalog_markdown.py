"""generate_markdown_docs: content, and user-supplied text that always renders as itself."""

from __future__ import annotations

import html
import re
from typing import Literal

import markdown
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from pydantic import Field

from agentool import AgenToolRegistry, BaseOperationInput, Route, RoutingConfig, create_agentool
from agentool.catalog.markdown import agentool_markdown, code, escape, operation_markdown, paragraphs
from agentool.errors import ConfigurationError
from examples.calculator import create_calculator

# The extensions of the docs site (mkdocs.yml), where the generated Markdown is published.
EXTENSIONS = ['admonition', 'attr_list', 'def_list', 'tables', 'toc', 'pymdownx.details', 'pymdownx.superfences']


def render(text: str) -> str:
    return markdown.markdown(text, extensions=EXTENSIONS)


def parse(rendered: str) -> tuple[list[str], str]:
    """The tags `rendered` opens (named as `HTMLParser` names them), and its text as shown."""
    tags = re.findall(r'<([a-zA-Z][^\t\n\r\f />\x00]*)', rendered)
    return [tag.lower() for tag in tags], html.unescape(re.sub(r'<[^>]*>', '', rendered))


def folded(text: str) -> str:
    return ' '.join(text.split())


HOSTILE = [
    '<script>alert(1)</script>',
    '**bold** _em_ `code` [link](http://x) ![img](y) <b>',
    '# heading',
    '- item',
    '1. first',
    '> quote',
    '!!! note "admonition"',
    ': definition',
    '| a | b |',
    '~~strike~~ &amp; &lt; \\*',
    '{: .class } {#id}',
    '::: agentool.core.registry',
    '===',
    '--- ',
    '+ plus',
    '<!-- comment -->',
    '[x]: http://ref',
]


@given(
    st.sampled_from(HOSTILE)
    | st.text(alphabet=st.characters(codec='utf-8', exclude_categories=['Cs', 'Cc', 'Cf', 'Zl', 'Zp']))
)
@settings(max_examples=300, deadline=None)
def test_escaped_text_renders_as_itself(text: str) -> None:
    tags, shown = parse(render(escape(text)))
    assert set(tags) <= {'p'}
    assert folded(shown) == folded(text)


@given(st.lists(st.sampled_from([*HOSTILE, 'plain words', '    indented code?']), min_size=1, max_size=6))
def test_paragraphs_keep_lines_and_render_as_text(lines: list[str]) -> None:
    tags, shown = parse(render(paragraphs('\n'.join(lines))))
    assert set(tags) <= {'p', 'br'}
    assert folded(shown) == folded(' '.join(lines))


@given(st.text(alphabet='`ab <>&*', min_size=1))
def test_code_spans_hold_any_backticks(text: str) -> None:
    if not text.strip():
        assert code(text) == ''
        return
    tags, shown = parse(render(code(text)))
    assert tags == ['p', 'code']
    assert folded(shown) == folded(text)


class HostileInput(BaseOperationInput):
    """Input."""

    operation: Literal['<b>go</b>']
    target: str = Field(description='**not bold** <img src=x onerror=alert(1)>')


async def hostile_tool(target: str) -> str:
    """Docstring with <script>alert(1)</script> and [a link](javascript:alert(1)).

    # Not a heading
    """
    return target


def test_user_text_in_docs_is_escaped(registry: AgenToolRegistry) -> None:
    create_agentool(
        'evil`name',
        HostileInput,
        RoutingConfig(operation_map={'<b>go</b>': Route(tool='hostile_tool', tags=('*tag*',))}),
        [hostile_tool],
        description='<iframe src=x></iframe> _desc_',
        tags=['<t>'],
        version='1.0 <v>',
    )
    rendered = render(registry.generate_markdown_docs())
    assert not re.search(r'<(script|img|iframe|a|em|b)[\s>]', rendered)
    text = html.unescape(rendered)
    for expected in ['<script>alert(1)</script>', '[a link](javascript:alert(1))', '# Not a heading', '*tag*']:
        assert expected in text
    assert '<h2 id="evilname">evil`name</h2>' in rendered
    assert '<strong>&lt;b&gt;go&lt;/b&gt;</strong>' in rendered


def test_markdown_documents_agentools_operations_and_fields(registry: AgenToolRegistry) -> None:
    create_calculator()
    route = Route(tool='hostile_tool', read_only=True, deprecated=True, max_output_chars=10)
    create_agentool('pinger', HostileInput, RoutingConfig(operation_map={'<b>go</b>': route}), [hostile_tool])
    docs = registry.generate_markdown_docs(title='Tools')
    assert docs.startswith('# Tools\n\nTotal AgenTools: 2\n')
    assert docs.index('## calculator') < docs.index('## pinger')
    assert '- **divide**: Divide a by b; dividing by zero raises ZeroDivisionError, which propagates.' in docs
    assert '    - **Tool:** `divide` (returns `float`)' in docs
    assert '        - `a` (`float`, required): The first operand.' in docs
    assert '#### divide (async)' in docs
    assert '- Parameters: a, b' in docs
    assert '**Tags:** math, example' in docs
    assert '**Deprecated.**' in docs
    assert '**Hints:** read-only, output cut at 10 characters' in docs
    assert '#### Example 1\n\n**Input:**\n\n```json\n{\n  "operation": "add"' in docs  # the calculator's examples
    assert registry.generate_markdown_docs(title='Tools') == docs
    assert registry.generate_markdown_docs(title=None).startswith('Total AgenTools: 2')


def test_markdown_of_an_empty_registry(registry: AgenToolRegistry) -> None:
    assert registry.generate_markdown_docs() == '# AgenTool Registry Documentation\n\nTotal AgenTools: 0\n'


def test_one_entry_renders_at_any_heading_level_as_in_the_whole_docs(registry: AgenToolRegistry) -> None:
    create_calculator()
    entry = registry.export_catalog()['agentools'][0]
    whole = registry.generate_markdown_docs(title=None)
    assert agentool_markdown(entry) in whole
    page = agentool_markdown(entry, heading_level=1)
    assert page.startswith('# calculator\n')
    assert '\n## Operations\n' in page
    assert '\n### divide (async)\n' in page
    divide = next(op for op in entry['operations'] if op['name'] == 'divide')
    rendered = operation_markdown(divide)
    assert rendered.startswith('- **divide**: Divide a by b')
    assert '**Request schema:**\n\n```json\n{\n  "title": "CalculatorInput (divide)"' in rendered
    for level in (0, 5, True):
        with pytest.raises(ConfigurationError, match='heading_level'):
            agentool_markdown(entry, heading_level=level)
