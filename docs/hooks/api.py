"""MkDocs hook: the API reference, one mkdocstrings page per public module of `agentool`.

Modules are found on disk (nothing is imported); private modules (`_name`) and compatibility
aliases of moved modules are skipped. The `API reference` entry of the nav becomes a section
listing them, so a new module is documented with no docs edit.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, cast

from mkdocs.config.defaults import MkDocsConfig
from mkdocs.structure.files import File, Files

PACKAGE = 'agentool'
NAV_TITLE = 'API reference'
INDEX = 'api/index.md'


def public_modules(root: Path) -> list[str]:
    """Dotted names of the public modules of `PACKAGE`, sorted (packages' `__init__` excluded)."""
    names: list[str] = []
    for path in sorted((root / PACKAGE).rglob('*.py')):
        parts = path.relative_to(root).with_suffix('').parts
        alias = path.read_text().startswith('"""Compatibility alias')  # old paths re-exporting a moved module
        if not any(part.startswith('_') for part in parts) and not alias:
            names.append('.'.join(parts))
    return names


def _page(module: str) -> str:
    return f'api/{module}.md'


def _modules(config: MkDocsConfig) -> list[str]:
    return public_modules(Path(config.config_file_path).resolve().parent)


def on_config(config: MkDocsConfig) -> MkDocsConfig:
    nav = cast('list[Any]', config['nav'] or [])
    for index, item in enumerate(nav):
        if isinstance(item, dict) and NAV_TITLE in item:
            pages: list[Any] = [INDEX, *({module: _page(module)} for module in _modules(config))]
            nav[index] = {NAV_TITLE: pages}
    return config


def on_files(files: Files, config: MkDocsConfig) -> Files:
    modules = _modules(config)
    listing = '\n'.join(f'- [`{module}`]({module}.md)' for module in modules)
    index = (
        '# API reference\n\nGenerated from the docstrings of every public module of `agentool`. '
        'Most names are importable from `agentool` itself.\n\n' + listing + '\n'
    )
    files.append(File.generated(config, INDEX, content=index))
    for module in modules:
        files.append(File.generated(config, _page(module), content=f'# `{module}`\n\n::: {module}\n'))
    return files
