"""The docs: code blocks run, the site builds strictly, the catalog pages are generated.

A page's Python blocks run in order in one namespace, their `#>` outputs checked (pytest-examples;
`{test="skip"}` skips, `{requires="module.path"}` waits for the module); those tests are marked `seam`.
Also: fenced lines fit 88 columns as the reader sees them; a failing block is a failure naming its
lines, never an INTERNALERROR (one took an xdist worker down); the README's quickstart and CLI
commands run as copied, writing nothing.
"""

from __future__ import annotations

import importlib.util
import json
import os
import re
import subprocess
import sys
from collections import defaultdict
from pathlib import Path
from typing import Any

import pytest
from pytest_examples import CodeExample, EvalExample, find_examples

from tests._doc_blocks import run_block
from tests.agentools import ROOT, python_env, run_python

DOCS = ROOT / 'docs'


def _pages() -> dict[str, list[CodeExample]]:
    pages: dict[str, list[CodeExample]] = defaultdict(list)
    for example in find_examples(DOCS, ROOT / 'README.md'):
        pages[example.path.relative_to(ROOT).as_posix()].append(example)
    return dict(sorted(pages.items()))


PAGES = _pages()


def _runnable(example: CodeExample) -> bool:
    settings = example.prefix_settings()
    if settings.get('test') == 'skip':
        return False
    required = settings.get('requires')
    return required is None or importlib.util.find_spec(required) is not None


@pytest.mark.seam
def test_every_page_with_code_is_collected() -> None:
    assert {'README.md', 'docs/quickstart.md', 'docs/concepts/registry.md'} <= set(PAGES)


OWN_PROCESS = frozenset({'docs/guides/evaluating-offline.md'})
"""Pages that set process-wide state (a global tracer provider, which changes how agentools trace),
run in a pytest process of their own."""
_CHILD = 'AGENTOOL_DOCS_PAGE'


@pytest.mark.seam
@pytest.mark.parametrize('page', list(PAGES))
def test_page_code_blocks_run(page: str, eval_example: EvalExample, request: pytest.FixtureRequest) -> None:
    if page in OWN_PROCESS and os.environ.get(_CHILD) != page and any(map(_runnable, PAGES[page])):
        env = {**os.environ, _CHILD: page, 'PYTHONPATH': str(ROOT)}
        command = [sys.executable, '-m', 'pytest', request.node.nodeid, '-q', '-n', '0', '-p', 'no:randomly']
        out = subprocess.run(command, cwd=ROOT, env=env, capture_output=True, text=True)
        assert out.returncode == 0, out.stdout[-4000:]
        return
    namespace: dict[str, Any] = {}
    ran = 0
    for example in PAGES[page]:
        if _runnable(example):
            namespace = run_block(eval_example, example, namespace)
            ran += 1
    if not ran:
        pytest.skip(f'every block of {page} is marked to be skipped')


def _load_hook(name: str) -> Any:
    spec = importlib.util.spec_from_file_location(f'docs_hook_{name}', DOCS / 'hooks' / f'{name}.py')
    assert spec is not None
    assert spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _fences(page: Path, language: str) -> list[str]:
    return re.findall(rf'^```{language}\n(.*?)^```$', page.read_text(), flags=re.MULTILINE | re.DOTALL)


@pytest.mark.seam
def test_the_plugin_guide_example_builds_strictly_as_written(tmp_path: Path) -> None:
    """The guide's `mkdocs.yml` and `shop_tools.py`, in a site of their own, with the guide's directive page."""
    from mkdocs.commands.build import build
    from mkdocs.config import load_config

    guide = DOCS / 'guides' / 'tool-catalogs.md'
    config, *_ = _fences(guide, 'yaml')
    module, *_ = _fences(guide, 'python')
    page, *_ = _fences(guide, 'md')
    (tmp_path / 'docs').mkdir()
    (tmp_path / 'docs' / 'index.md').write_text('# Home\n\n' + page)
    (tmp_path / 'shop_tools.py').write_text(module)
    (tmp_path / 'mkdocs.yml').write_text('site_name: Shop\n' + config)
    try:
        build(load_config(config_file=str(tmp_path / 'mkdocs.yml'), strict=True, site_dir=str(tmp_path / 'site')))
    finally:
        sys.modules.pop('shop_tools', None)
    tools = tmp_path / 'site' / 'tools'
    assert sorted(path.name for path in tools.iterdir()) == [
        'catalog.json',
        'index.html',
        'openapi.json',
        'orders',
        'stock',
    ]
    assert '<h2 id="stock">stock</h2>' in (tmp_path / 'site' / 'index.html').read_text()
    assert 'Depends on: <a href="../stock/">stock</a>' in (tools / 'orders' / 'index.html').read_text()


@pytest.mark.seam
def test_api_hook_lists_public_modules_only() -> None:
    modules = _load_hook('api').public_modules(ROOT)
    assert {'agentool.core.registry', 'agentool.catalog.data', 'agentool.cli', 'agentool.errors'} <= set(modules)
    assert not [m for m in modules if any(part.startswith('_') for part in m.split('.'))]
    assert 'agentool.core.definition.config' in modules  # a concept package's public module


@pytest.mark.seam
def test_api_index_summarises_each_module_and_the_nav_groups_them_by_package() -> None:
    hook = _load_hook('api')
    modules = hook.public_modules(ROOT)
    index = hook.index_page(ROOT, modules)
    assert '| [`agentool.errors`](agentool.errors.md) | The one exception hierarchy of agentool. |' in index
    assert index.count('| [`') == len(modules)
    assert all(hook.summary(ROOT, module) for module in modules)  # every public module says what it is
    assert [hook.group(m) for m in ('agentool.cli', 'agentool.core.registry', 'agentool.core.injector.handle')] == [
        'agentool',
        'agentool.core',
        'agentool.core',
    ]

    class Config(dict[str, Any]):
        config_file_path = str(ROOT / 'mkdocs.yml')

    config = hook.on_config(Config(nav=[{'Overview': 'index.md'}, {'API reference': 'api/index.md'}]))
    (reference,) = [item['API reference'] for item in config['nav'] if 'API reference' in item]
    assert reference[0] == 'api/index.md'
    groups = {name: pages for item in reference[1:] for name, pages in item.items()}
    first, *subpackages = groups
    assert first == 'agentool'  # the top-level modules first, then each subpackage in order
    assert subpackages == sorted(subpackages)
    assert {'agentool.catalog', 'agentool.core', 'agentool.testing'} <= set(groups)
    assert {'agentool.core.registry': 'api/agentool.core.registry.md'} in groups['agentool.core']
    assert sum(len(pages) for pages in groups.values()) == len(modules)


def _example_agentools() -> list[str]:
    """Names the example modules register, found independently of the docs hook."""
    code = (
        'import importlib, json, sys\n'
        'from agentool import get_registry\n'
        'for module in sys.argv[1:]:\n'
        '    importlib.import_module(module)\n'
        'from examples.durable import create_order\n'
        'from examples.support_assistant import create_tickets\n'
        'create_order()\n'
        'create_tickets()\n'
        'print(json.dumps(get_registry().list_names()))\n'
    )
    modules = [f'examples.{p.stem}' for p in (ROOT / 'examples').glob('*.py') if p.stem not in ('demo', '__init__')]
    out = subprocess.run(
        [sys.executable, '-c', code, *modules], cwd=ROOT, capture_output=True, text=True, check=True, timeout=120
    )
    return sorted(json.loads(out.stdout))


def _files(folder: Path) -> list[tuple[str, int]]:
    return sorted((path.as_posix(), path.stat().st_mtime_ns) for path in folder.rglob('*'))


def _makefile_docs_env() -> dict[str, str]:
    """The environment `make docs` and `make docs-serve` export (`docs docs-serve: export NAME = VALUE`)."""
    found = re.findall(r'^docs docs-serve: export (\w+) = (\S+)$', (ROOT / 'Makefile').read_text(), re.MULTILINE)
    assert found, 'the Makefile no longer exports an environment for its docs targets'
    return dict(found)


@pytest.mark.seam
def test_strict_build_publishes_a_catalog_of_every_example_agentool(tmp_path: Path) -> None:
    site = tmp_path / 'site'
    kept = _files(ROOT / 'site')  # what `make docs` left in site/, if it ran
    build = subprocess.run(
        [sys.executable, '-m', 'mkdocs', 'build', '--strict', '--quiet', '-d', str(site)],
        cwd=ROOT,
        env={**os.environ, **_makefile_docs_env(), 'PYTHONPATH': str(ROOT)},
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert build.returncode == 0, build.stderr
    # The theme's end-of-life banner is silenced by the environment the Makefile gives mkdocs.
    assert 'end of life' not in build.stderr
    catalog = (site / 'catalog' / 'index.html').read_text()
    expected = _example_agentools()
    assert {'calculator', 'order', 'tickets'} <= set(expected)  # those two registered by a function
    for name in expected:
        assert f'<a href="{name}/">{name}</a>' in catalog, f'agentool {name!r} is missing from the catalog index'
        page = (site / 'catalog' / name / 'index.html').read_text()
        assert f'<h1 id="{name}">{name}<' in page
    assert (site / 'catalog' / 'openapi.json').is_file()
    assert '<pre class="mermaid">graph LR' in catalog
    assert (site / 'api' / 'agentool.core.registry' / 'index.html').is_file()
    assert _files(ROOT / 'site') == kept  # the build went where it was told
    # Offline: Mermaid is served by the site itself, and no page loads anything from a CDN or font host.
    assert (site / 'assets' / 'vendor' / 'mermaid' / 'mermaid.min.js').stat().st_size > 1_000_000
    assert '<script src="../assets/vendor/mermaid/mermaid.min.js"' in (site / 'architecture' / 'index.html').read_text()
    remote = [
        page.relative_to(site).as_posix()
        for page in site.rglob('*.html')
        if any(host in page.read_text() for host in ('unpkg.com', 'cdn.jsdelivr.net', 'fonts.googleapis.com'))
    ]
    assert remote == []
    api_index = (site / 'api' / 'index.html').read_text()
    assert 'Serving an MCP server over Streamable HTTP, safely by default.' in api_index


WIDTH = 88
MARKDOWN = sorted(path.relative_to(ROOT).as_posix() for path in [*(ROOT / 'docs').rglob('*.md'), ROOT / 'README.md'])

_FENCE = re.compile(r'^(?P<indent>[ \t]*)(?P<fence>`{3,}|~{3,})(?P<info>.*)$')


def wide_lines(text: str, width: int = WIDTH) -> list[tuple[int, int]]:
    """(line number, columns) of each line inside a fenced code block wider than `width`."""
    found: list[tuple[int, int]] = []
    opened: tuple[str, str] | None = None  # (indent, fence) of the block we are in
    for number, line in enumerate(text.splitlines(), 1):
        fence = _FENCE.match(line)
        if opened is None:
            if fence:
                opened = (fence['indent'], fence['fence'])
            continue
        indent, opening = opened
        closes = fence and fence['fence'][0] == opening[0] and len(fence['fence']) >= len(opening)
        if closes and fence and not fence['info'].strip():
            opened = None
            continue
        shown = line.removeprefix(indent)
        if len(shown) > width:
            found.append((number, len(shown)))
    return found


def test_wide_lines_are_found_inside_fences_only() -> None:
    wide = 'x' * (WIDTH + 1)
    text = '\n'.join(
        [
            wide,  # prose may be wide: it wraps
            '```python',
            'x' * WIDTH,
            wide,
            '```',
            '- item',
            '',
            '    ````text',
            '    ```',  # a shorter fence inside a longer one does not close it
            '    ' + wide,
            '    ````',
            wide,
        ]
    )
    assert wide_lines(text) == [(4, WIDTH + 1), (10, WIDTH + 1)]
    assert wide_lines('    ```\n    ' + 'x' * WIDTH + '\n    ```') == []  # the fence's own indent is not shown


@pytest.mark.parametrize('page', MARKDOWN)
def test_code_lines_fit_in_88_columns(page: str) -> None:
    wide = wide_lines((ROOT / page).read_text())
    assert not wide, f'{page}: code lines wider than {WIDTH} columns (line, columns): {wide}'


pytest_plugins = ('pytester',)

PAGE = """# A page

```python
def start() -> None:
    raise ExceptionGroup('unhandled errors in a TaskGroup', [TimeoutError('server did not answer')])


start()
```

```python
try:
    raise ExceptionGroup('unhandled errors in a TaskGroup', [TimeoutError('server did not answer')])
except ExceptionGroup as group:
    raise RuntimeError('failed to connect') from group
```
"""

RUNNER = """
from pathlib import Path

import pytest
from pytest_examples import find_examples

from tests._doc_blocks import run_block

BLOCKS = list(find_examples(Path(__file__).parent / 'page.md'))


@pytest.mark.parametrize('index', range(len(BLOCKS)))
def test_block(eval_example, index):
    run_block(eval_example, BLOCKS[index], {'ExceptionGroup': ExceptionGroup})
"""


def test_a_block_raising_an_exception_group_fails_with_its_errors_shown(pytester: pytest.Pytester) -> None:
    pytester.makefile('.md', page=PAGE)
    pytester.makepyfile(test_page=RUNNER)
    result = pytester.runpytest_subprocess('-p', 'no:cacheprovider', '-p', 'no:randomly', '-n', '0')
    text = result.stdout.str() + result.stderr.str()
    assert 'INTERNALERROR' not in text
    assert 'StopIteration' not in text
    result.assert_outcomes(failed=2)
    assert 'server did not answer' in text  # the error inside the group
    assert 'the block at page.md:3 raised ExceptionGroup' in text
    assert 'page.md:8 in <module>\n' in text  # the page lines it went through
    assert 'page.md:5 in start' in text
    assert 'the block at page.md:11 raised RuntimeError: failed to connect' in text
    assert 'page.md:15 in <module>' in text


def test_a_plain_failure_names_its_line_of_the_page(pytester: pytest.Pytester) -> None:
    pytester.makefile('.md', page='# A page\n\n```python\nraise ValueError("plain")\n```\n')
    pytester.makepyfile(test_page=RUNNER)
    result = pytester.runpytest_subprocess('-p', 'no:cacheprovider', '-p', 'no:randomly', '-n', '0')
    text = result.stdout.str() + result.stderr.str()
    assert 'INTERNALERROR' not in text
    result.assert_outcomes(failed=1)
    assert 'the block at page.md:3 raised ValueError: plain' in text
    assert 'page.md:4 in <module>' in text


def _readme_quickstart() -> str:
    readme = (ROOT / 'README.md').read_text()
    found = re.search(r'## Quickstart\n.*?```python\n(.*?)```', readme, re.DOTALL)
    assert found is not None
    return found.group(1)


def test_the_readme_quickstart_runs_as_copied_in_a_fresh_interpreter_and_writes_nothing(tmp_path: Path) -> None:
    run_python(_readme_quickstart() + "print('ran')\n", cwd=tmp_path)
    assert list(tmp_path.iterdir()) == []


@pytest.mark.parametrize(
    ('command', 'expected'),
    [
        (['list'], 'storage'),
        (['show', 'storage'], 'storage 1.0.0'),
        (['schema', 'storage'], '"additionalProperties": false'),
        (['catalog'], '"total_agentools": 1'),
    ],
)
def test_the_readme_cli_commands_answer_and_write_nothing_to_the_working_directory(
    command: list[str], expected: str, tmp_path: Path
) -> None:
    done = subprocess.run(
        [sys.executable, '-m', 'agentool', '--import', 'examples.storage', *command],
        env=python_env(),
        cwd=tmp_path,
        capture_output=True,
        text=True,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    assert expected in done.stdout
    assert list(tmp_path.iterdir()) == []


def test_the_quickstart_cli_call(tmp_path: Path) -> None:
    done = subprocess.run(
        [
            sys.executable,
            '-m',
            'agentool',
            '--import',
            'examples.calculator',
            'call',
            'calculator',
            '{"operation": "add", "a": 5, "b": 3}',
        ],
        env=python_env(),
        cwd=tmp_path,
        capture_output=True,
        text=True,
        check=False,
    )
    assert (done.returncode, done.stdout.strip()) == (0, '8.0'), done.stderr
    assert list(tmp_path.iterdir()) == []
