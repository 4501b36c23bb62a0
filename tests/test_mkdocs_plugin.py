"""The MkDocs plugin on a small user site: pages, graph, JSON and OpenAPI, the directive, escaping, errors.

Each test writes a site to a temporary folder (its own mkdocs.yml, a module `shop_tools` with two
agentools, `orders` depending on `stock`, the second registered by a function) and builds it in
process, as `mkdocs build` does.
"""

from __future__ import annotations

import json
import logging
import sys
from collections.abc import Iterator
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest
from mkdocs.commands.build import build
from mkdocs.config import load_config
from mkdocs.exceptions import Abort
from openapi_spec_validator import validate

from agentool.mkdocs import AgenToolPlugin

MODULE = '''
from typing import Literal

from pydantic import Field

from agentool import BaseOperationInput, Route, RoutingConfig, create_agentool, get_injector


class StockInput(BaseOperationInput):
    operation: Literal['count', 'restock']
    sku: str = Field(description='The <b>SKU</b> to look up.')
    amount: int = Field(default=1, description='How many to add.')


async def count(sku: str) -> int:
    """Count items of *sku* <script>alert(1)</script>."""
    return 3


async def restock(sku: str, amount: int = 1) -> int:
    """Add stock."""
    return 3 + amount


class OrderInput(BaseOperationInput):
    operation: Literal['place', 'cancel']
    order_id: str = Field(description='The order.')


async def place(order_id: str) -> str:
    """Place an order once the item is in stock."""
    await get_injector().call('stock', {'operation': 'count', 'sku': order_id})
    return 'placed'


async def cancel(order_id: str) -> str:
    """Cancel an order."""
    return 'cancelled'


create_agentool(
    'stock',
    StockInput,
    RoutingConfig(operation_map={'count': Route(tool='count', read_only=True), 'restock': 'restock'}),
    [count, restock],
    description='Stock <em>levels</em> and **restocking** DESCRIPTION_MARK',
    tags=['inventory'],
    examples=[{'input': {'operation': 'count', 'sku': 'A1'}, 'output': 3}],
)


def create_orders() -> None:
    create_agentool(
        'orders',
        OrderInput,
        RoutingConfig(operation_map={'place': 'place', 'cancel': Route(tool='cancel', deprecated=True)}),
        [place, cancel],
        description='Orders.',
        dependencies=['stock'],
    )
'''

UNDESCRIBABLE = '''
from typing import Literal

from agentool import BaseOperationInput, RoutingConfig, get_registry
from agentool.core.registry import AgenToolConfig


class Opaque:
    """No JSON schema can be written for this."""


class GoInput(BaseOperationInput):
    operation: Literal['go']


async def go() -> Opaque:
    return Opaque()


routing = RoutingConfig(operation_map={'go': 'go'})
get_registry().register(
    'opaque', AgenToolConfig(input_schema=GoInput, routing_config=routing, tools=[go], output_type=Opaque)
)
'''

PAGE = """# Ordering

Our stock tool, straight from the code:

::: agentool stock

And one operation:

::: agentool orders.place

```text
::: agentool not-expanded-in-code
```
"""


@pytest.fixture(autouse=True)
def forget_site_modules() -> Iterator[None]:
    yield
    for name in ('shop_tools', 'empty_tools', 'opaque_tools'):
        sys.modules.pop(name, None)


def _site(root: Path, *, theme: str = 'material', plugin: dict[str, Any] | None = None) -> Path:
    (root / 'docs').mkdir(parents=True)
    (root / 'docs' / 'index.md').write_text(PAGE)
    (root / 'shop_tools.py').write_text(MODULE)
    (root / 'empty_tools.py').write_text('"""Registers nothing."""\n')
    (root / 'opaque_tools.py').write_text(UNDESCRIBABLE)
    options = plugin or {'modules': ['shop_tools'], 'callables': ['shop_tools:create_orders']}
    config = {
        'site_name': 'Shop',
        'theme': {'name': theme},
        'nav': [{'Ordering': 'index.md'}, {'Tools': 'agentools/index.md'}],
        'plugins': ['search', {'agentool': options}],
    }
    (root / 'mkdocs.yml').write_text(json.dumps(config))  # JSON is YAML
    return root


def _build(root: Path, *, strict: bool = True) -> Any:
    config = load_config(config_file=str(root / 'mkdocs.yml'), strict=strict, site_dir=str(root / 'site'))
    build(config)
    return config


def _build_errors(root: Path, caplog: pytest.LogCaptureFixture) -> str:
    """The errors a strict build that fails logs (MkDocs logs a plugin's error, then aborts)."""
    with pytest.raises(Abort):
        _build(root)
    return '\n'.join(record.getMessage() for record in caplog.records if record.levelno >= logging.ERROR)


def _html(root: Path, page: str) -> str:
    return (root / 'site' / page).read_text()


@pytest.mark.parametrize('theme', ['material', 'mkdocs'])
def test_a_strict_build_publishes_a_page_per_agentool_an_index_and_the_documents(tmp_path: Path, theme: str) -> None:
    root = _site(tmp_path, theme=theme)
    _build(root)
    stock = _html(root, 'agentools/stock/index.html')
    assert '<h1 id="stock">stock</h1>' in stock
    for text in ('<strong>count</strong>', '<strong>restock</strong>', '<code>sku</code>', '<code>amount</code>'):
        assert text in stock
    assert '<strong>Hints:</strong> read-only' in stock
    assert '<h2 id="input-schema">Input Schema</h2>' in stock
    assert '<h2 id="examples">Examples</h2>' in stock
    assert '<h3 id="restock">restock</h3>' in stock  # its request schema
    assert 'Used by: <a href="../orders/">orders</a>' in stock
    orders = _html(root, 'agentools/orders/index.html')  # registered by the callable
    assert '<strong>cancel</strong>' in orders
    assert '<strong>Deprecated.</strong>' in orders
    assert 'Depends on: <a href="../stock/">stock</a>' in orders
    # Escaped: the description's HTML and Markdown, and a docstring's script, are shown as text.
    assert 'Stock &lt;em&gt;levels&lt;/em&gt; and **restocking**' in stock
    assert 'Count items of *sku* &lt;script&gt;alert(1)&lt;/script&gt;.' in stock
    assert '<script>alert' not in stock
    assert '<em>levels' not in stock
    index = _html(root, 'agentools/index.html')
    assert '<pre class="mermaid">graph LR' in index
    assert 'a0 --&gt; a1' in index  # orders depends on stock
    assert '<a href="stock/">stock</a>' in index
    assert '<code>cancel</code> (deprecated)' in index
    assert 'href="orders/"' in index  # in the nav too: the index became a section
    catalog = json.loads(_html(root, 'agentools/catalog.json'))
    assert [entry['name'] for entry in catalog['agentools']] == ['orders', 'stock']
    spec = json.loads(_html(root, 'agentools/openapi.json'))
    validate(spec)
    assert '/agentools/orders/place' in spec['paths']
    page = _html(root, 'index.html')
    assert '<h2 id="stock">stock</h2>' in page  # the directive, in place
    assert 'Count items of *sku* &lt;script&gt;alert(1)&lt;/script&gt;.' in page
    assert 'OrderInput (place)' in page  # the operation's request schema
    assert '::: agentool not-expanded-in-code' in page


def test_selectors_choose_agentools_and_operations_and_a_name_is_escaped_everywhere(tmp_path: Path) -> None:
    root = _site(
        tmp_path,
        plugin={
            'modules': ['shop_tools'],
            'callables': ['shop_tools:create_orders'],
            'exclude': ['*.cancel', 'tag:inventory'],
            'output': 'reference/tools',
            'title': 'Our tools',
            'page_title': 'Tool {name}',
        },
    )
    (root / 'shop_tools.py').write_text(MODULE.replace("'orders',\n", "'<i>orders</i>&',\n"))
    (root / 'docs' / 'index.md').write_text('# Ordering\n\n::: agentool <i>orders</i>&.place\n')
    (root / 'mkdocs.yml').write_text((root / 'mkdocs.yml').read_text().replace('agentools/', 'reference/tools/'))
    _build(root)
    site = root / 'site' / 'reference' / 'tools'
    assert sorted(path.name for path in site.iterdir()) == ['catalog.json', 'i-orders-i', 'index.html', 'openapi.json']
    page = (site / 'i-orders-i' / 'index.html').read_text()
    assert '<strong>place</strong>' in page
    assert '<strong>cancel</strong>' not in page
    assert '<title>Tool &lt;i&gt;orders&lt;/i&gt;&amp; - Shop</title>' in page
    assert '<i>orders' not in page
    spec = json.loads((site / 'openapi.json').read_text())
    quoted = '/agentools/%3Ci%3Eorders%3C%2Fi%3E%26'
    assert sorted(spec['paths']) == [quoted, f'{quoted}/place']
    assert '<h1 id="our-tools">Our tools</h1>' in (site / 'index.html').read_text()
    home = _html(root, 'index.html')
    assert '<i>orders' not in home
    assert 'Tool &lt;i&gt;orders&lt;/i&gt;&amp;' in home  # its nav entry, titled by page_title


MISCONFIGURED = {
    'unimportable module': (
        {'modules': ['shop_tools', 'no_such_module']},
        "plugins.agentool.modules: cannot import module 'no_such_module': ModuleNotFoundError",
    ),
    'module registering nothing': (
        {'modules': ['shop_tools', 'empty_tools']},
        "plugins.agentool.modules: module 'empty_tools' registers no agentool when imported",
    ),
    'callable registering nothing': (
        {'modules': ['shop_tools'], 'callables': ['empty_tools:__doc__.strip']},
        "plugins.agentool.callables: calling 'empty_tools:__doc__.strip' registered no agentool",
    ),
    'callable that raises': (
        {'modules': ['shop_tools'], 'callables': ['shop_tools:place']},
        "plugins.agentool.callables: calling 'shop_tools:place' failed: TypeError: ",
    ),
    'callable that is not module:function': (
        {'modules': ['shop_tools'], 'callables': ['shop_tools.create_orders']},
        "plugins.agentool.callables: 'shop_tools.create_orders' is not module:function",
    ),
    'selector matching nothing': (
        {'modules': ['shop_tools'], 'include': ['stok']},
        "plugins.agentool.include: include selector 'stok' matches no registered agentool, operation or tag; "
        "did you mean 'stock'",
    ),
    'agentool the catalog cannot describe': (
        {'modules': ['shop_tools', 'opaque_tools']},
        "plugins.agentool.modules: agentool 'opaque' (registered by module opaque_tools) cannot be described by "
        "the catalog: ConfigurationError: agentool 'opaque': its output type Opaque has no JSON schema",
    ),
    'directive naming no agentool': (
        {'modules': ['shop_tools']},  # `orders` is registered by the callable, not listed here
        "a page: index.md: ::: agentool 'orders.place': no agentool or operation of that name is in the catalog",
    ),
}


@pytest.mark.parametrize('case', list(MISCONFIGURED))
def test_each_misconfiguration_fails_the_strict_build_naming_its_cause_and_option(
    tmp_path: Path, case: str, caplog: pytest.LogCaptureFixture
) -> None:
    options, message = MISCONFIGURED[case]
    assert f'agentool plugin: {message}' in _build_errors(_site(tmp_path, plugin=options), caplog)


def test_without_strict_a_misconfiguration_is_a_warning_and_the_rest_is_published(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    root = _site(tmp_path, plugin={'modules': ['shop_tools', 'no_such_module'], 'exclude': ['nothing_here']})
    with caplog.at_level(logging.WARNING):
        _build(root, strict=False)
    warnings = [record.getMessage() for record in caplog.records if record.levelno == logging.WARNING]
    assert any("plugins.agentool.modules: cannot import module 'no_such_module'" in w for w in warnings)
    assert any("plugins.agentool.exclude: exclude selector 'nothing_here'" in w for w in warnings)
    assert '<h1 id="stock">stock</h1>' in _html(root, 'agentools/stock/index.html')


def test_every_build_imports_the_modules_afresh_and_serve_watches_them(tmp_path: Path) -> None:
    root = _site(tmp_path, plugin={'modules': ['shop_tools']})
    (root / 'docs' / 'index.md').write_text('# Ordering\n')
    _build(root)
    assert 'DESCRIPTION_MARK' in _html(root, 'agentools/stock/index.html')
    module = root / 'shop_tools.py'
    module.write_text(module.read_text().replace('DESCRIPTION_MARK', 'changed since the last build'))
    config = _build(root)
    assert 'changed since the last build' in _html(root, 'agentools/stock/index.html')
    plugin = config.plugins['agentool']
    assert isinstance(plugin, AgenToolPlugin)
    watched: list[str] = []
    plugin.on_serve(SimpleNamespace(watch=watched.append), config=config, builder=None)  # pyright: ignore[reportArgumentType]
    assert watched == [str(module)]


@pytest.mark.parametrize(
    ('option', 'value', 'message'),
    [
        ('output', '../outside', 'plugins.agentool.output must be a folder inside the docs'),
        ('page_title', '{name.upper}{0}', 'page_title'),
    ],
)
def test_an_unusable_output_folder_or_title_format_is_refused(
    tmp_path: Path, caplog: pytest.LogCaptureFixture, option: str, value: str, message: str
) -> None:
    root = _site(tmp_path, plugin={'modules': ['shop_tools'], option: value})
    assert message in _build_errors(root, caplog)


def test_a_list_option_given_one_string_is_a_config_error(tmp_path: Path) -> None:
    root = _site(tmp_path, plugin={'modules': 'shop_tools'})
    with pytest.raises(Abort):
        load_config(config_file=str(root / 'mkdocs.yml'), strict=True)


def test_the_directive_skips_fenced_code(tmp_path: Path) -> None:
    from agentool.mkdocs._directive import expand

    text = '\n````md\n```\n::: agentool a\n````\n::: agentool b\n'
    reported: list[str] = []
    assert expand(text, {}, reported.append).count('::: agentool') == 1
    assert reported == ["::: agentool 'b': no agentool or operation of that name is in the catalog"]
