"""MkDocs hook: the tool catalog page, generated at build time from the example agentools.

Every module in `examples/` is imported (except `demo.py` and private `_*.py` modules) inside a
fresh registry (`agentool.use_registry()`); whatever agentools they register are documented with
the registry's catalog API. A new example module therefore appears here with no docs edit. The
page is `catalog.md`; the OpenAPI document and the JSON catalog are published next to it.
"""

from __future__ import annotations

import importlib
import json
import sys
from pathlib import Path

from mkdocs.config.defaults import MkDocsConfig
from mkdocs.exceptions import PluginError
from mkdocs.structure.files import File, Files

from agentool import use_registry

PACKAGE = 'examples'
SKIP = frozenset({'demo'})
PAGE = 'catalog.md'
OPENAPI = 'catalog/openapi.json'
JSON_CATALOG = 'catalog/catalog.json'


def example_modules(root: Path, package: str = PACKAGE) -> list[str]:
    """The modules of `package` (a directory under `root`) to document, sorted."""
    return sorted(
        f'{package}.{path.stem}'
        for path in (root / package).glob('*.py')
        if path.stem not in SKIP and not path.stem.startswith('_')
    )


def render(modules: list[str]) -> dict[str, str]:
    """Import `modules` into a fresh registry; return the generated files' contents by path."""
    with use_registry() as registry:
        for module in modules:
            sys.modules.pop(module, None)  # import afresh, so a rebuild registers into this registry
        for module in modules:
            try:
                importlib.import_module(module)
            except Exception as error:
                raise PluginError(
                    f'docs catalog: importing {module} failed: {type(error).__name__}: {error}'
                ) from error
        sources = ', '.join(f'`{module}`' for module in modules) or 'none'
        page = '\n'.join(
            [
                '# Tool catalog',
                '',
                'This page is generated when the docs are built, from the agentools registered by the modules '
                f"in `{PACKAGE}/` ({sources}), with the registry's catalog API. Also published: the "
                f'[OpenAPI 3.0 document]({OPENAPI}) and the [JSON catalog]({JSON_CATALOG}).',
                '',
                '## Dependencies',
                '',
                '```mermaid',
                registry.generate_mermaid_graph().rstrip(),
                '```',
                '',
                registry.generate_markdown_docs(title=None),
            ]
        )
        spec = registry.generate_api_spec(title='agentool examples', description='The example agentools.')
        return {
            PAGE: page,
            OPENAPI: json.dumps(spec, indent=2),
            JSON_CATALOG: json.dumps(registry.export_catalog(), indent=2),
        }


def on_files(files: Files, config: MkDocsConfig) -> Files:
    root = Path(config.config_file_path).resolve().parent
    if str(root) not in sys.path:
        sys.path.insert(0, str(root))
    for path, content in render(example_modules(root)).items():
        files.append(File.generated(config, path, content=content))
    return files
