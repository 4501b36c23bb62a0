"""MkDocs hook: the API reference, one mkdocstrings page per public module of `agentool`.

Modules are found on disk (nothing is imported); private modules (`_name`) are skipped. The
`API reference` entry of the nav becomes a section with
the index page and one collapsed group per package (`agentool`, `agentool.core`, ...), and the
index lists every module with the first line of its docstring, so a new module is documented with
no docs edit.
"""

from __future__ import annotations

import ast
from itertools import groupby
from pathlib import Path
from typing import Any, cast

from mkdocs.config.defaults import MkDocsConfig
from mkdocs.structure.files import File, Files

PACKAGE = 'agentool'
NAV_TITLE = 'API reference'
INDEX = 'api/index.md'


DOCUMENTED_PACKAGES = frozenset({'agentool.cli'})
"""Packages whose `__init__` is the module of record (the command line declares itself there)."""


def public_modules(root: Path) -> list[str]:
    """Dotted names of the public modules of `PACKAGE`, sorted (packages' `__init__` excluded,
    but for `DOCUMENTED_PACKAGES`)."""
    names: list[str] = []
    for path in sorted((root / PACKAGE).rglob('*.py')):
        parts = path.relative_to(root).with_suffix('').parts
        if parts[-1] == '__init__' and '.'.join(parts[:-1]) in DOCUMENTED_PACKAGES:
            parts = parts[:-1]
        if not any(part.startswith('_') for part in parts):
            names.append('.'.join(parts))
    return names


def summary(root: Path, module: str) -> str:
    """The first line of `module`'s docstring, read from its source (empty when it has none)."""
    path = root / Path(*module.split('.'))
    source = (path / '__init__.py' if path.is_dir() else path.with_suffix('.py')).read_text(encoding='utf-8')
    docstring = ast.get_docstring(ast.parse(source)) or ''
    return docstring.strip().split('\n', 1)[0]


def group(module: str) -> str:
    """The nav group of `module`: its subpackage of `PACKAGE` (`agentool.core`), or `PACKAGE` itself."""
    parts = module.split('.')
    return '.'.join(parts[:2]) if len(parts) > 2 else PACKAGE


def _page(module: str) -> str:
    return f'api/{module}.md'


def _root(config: MkDocsConfig) -> Path:
    return Path(config.config_file_path).resolve().parent


def _modules(config: MkDocsConfig) -> list[str]:
    return public_modules(_root(config))


def _grouped(modules: list[str]) -> list[tuple[str, list[str]]]:
    ordered = sorted(modules, key=lambda m: (group(m) != PACKAGE, group(m), m))
    return [(name, list(members)) for name, members in groupby(ordered, key=group)]


def _cell(text: str) -> str:
    return text.replace('|', '\\|')


def index_page(root: Path, modules: list[str]) -> str:
    """The API reference's index: per group, each module linked with its one-line summary."""
    lines = [
        '# API reference',
        '',
        'Generated from the docstrings of every public module of `agentool`. '
        'Most names are importable from `agentool` itself.',
    ]
    for name, members in _grouped(modules):
        lines += ['', f'## `{name}`', '', '| Module | What it is |', '| --- | --- |']
        lines += [f'| [`{m}`]({m}.md) | {_cell(summary(root, m))} |' for m in members]
    return '\n'.join(lines) + '\n'


def on_config(config: MkDocsConfig) -> MkDocsConfig:
    nav = cast('list[Any]', config['nav'] or [])
    for index, item in enumerate(nav):
        if isinstance(item, dict) and NAV_TITLE in item:
            pages: list[Any] = [INDEX]
            for name, members in _grouped(_modules(config)):
                pages.append({name: [{module: _page(module)} for module in members]})
            nav[index] = {NAV_TITLE: pages}
    return config


def on_files(files: Files, config: MkDocsConfig) -> Files:
    modules = _modules(config)
    files.append(File.generated(config, INDEX, content=index_page(_root(config), modules)))
    for module in modules:
        files.append(File.generated(config, _page(module), content=f'# `{module}`\n\n::: {module}\n'))
    return files
