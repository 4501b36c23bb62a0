"""`AgenToolPlugin`: the MkDocs plugin that turns a project's agentools into catalog pages.

A misconfiguration names the option: an error under `mkdocs build --strict`, a warning otherwise.
"""

from __future__ import annotations

from pathlib import Path, PurePosixPath
from typing import Any, cast

from mkdocs.config import config_options as options
from mkdocs.config.base import Config
from mkdocs.config.defaults import MkDocsConfig
from mkdocs.exceptions import PluginError
from mkdocs.livereload import LiveReloadServer
from mkdocs.plugins import BasePlugin, get_plugin_logger
from mkdocs.structure.files import File, Files
from mkdocs.structure.pages import Page

from ..catalog.openapi import OPENAPI_VERSIONS
from ._directive import expand
from ._load import Problem, load
from ._site import INDEX, CatalogSite, SiteOptions, build_site

__all__ = ('AgenToolPlugin', 'AgenToolPluginConfig')

_log = get_plugin_logger(__name__)


class AgenToolPluginConfig(Config):
    """The plugin's options in `mkdocs.yml` (under `plugins: - agentool:`)."""

    modules = options.ListOfItems(options.Type(str), default=[])
    """Modules that register agentools when imported (`shop.tools`)."""
    callables = options.ListOfItems(options.Type(str), default=[])
    """Functions that register agentools when called, as `module:function` (`shop.tools:create_tools`)."""
    include = options.Optional(options.ListOfItems(options.Type(str)))
    """Selectors of what to document (as the CLI's and MCP's `--include`); default everything."""
    exclude = options.ListOfItems(options.Type(str), default=[])
    """Selectors of what to leave out; wins over `include`."""
    output = options.Type(str, default='agentools')
    """The folder, inside the docs, that the pages go in."""
    title = options.Type(str, default='Tool catalog')
    """The index page's title (and the OpenAPI document's)."""
    page_title = options.Type(str, default='{name}')
    """Each agentool page's title in the nav and the browser tab; `{name}` is the agentool's name."""
    openapi_version = options.Choice(OPENAPI_VERSIONS, default='3.0.0')


class AgenToolPlugin(BasePlugin[AgenToolPluginConfig]):
    """Catalog pages of a project's agentools, and the `::: agentool NAME` directive."""

    supports_multiple_instances = False

    def __init__(self) -> None:
        self._site: CatalogSite | None = None
        self._sources: list[Path] = []
        self._strict = False

    def on_config(self, config: MkDocsConfig) -> MkDocsConfig | None:
        self._strict = bool(config.strict)
        plugin = self.config
        output, path = plugin.output, PurePosixPath(plugin.output)
        if not output.strip() or path.is_absolute() or '..' in path.parts or '\\' in output or path.as_posix() == '.':
            raise PluginError(
                f'agentool plugin: plugins.agentool.output must be a folder inside the docs (such as agentools); '
                f'got {output!r}'
            )
        try:
            plugin.page_title.format(name='name')
        except (KeyError, IndexError, ValueError, AttributeError) as error:
            raise PluginError(
                f'agentool plugin: page_title {plugin.page_title!r} is not a title format ({error!r}); '
                'use {name} for the agentool name'
            ) from error
        root = Path(config.config_file_path).resolve().parent if config.config_file_path else Path.cwd()
        loaded = load(list(plugin.modules), list(plugin.callables), root=root)
        self._sources = loaded.sources
        self._report(loaded.problems)
        site_options = SiteOptions(
            include=None if plugin.include is None else list(plugin.include),
            exclude=list(plugin.exclude),
            output=path.as_posix(),
            title=plugin.title,
            page_title=plugin.page_title,
            openapi_version=plugin.openapi_version,
        )
        self._site = build_site(loaded, site_options)
        self._report(self._site.problems)
        nav = cast('list[Any] | None', config.nav)  # pyright: ignore[reportUnknownMemberType]  # untyped in MkDocs
        if nav is not None:
            config.nav = _nav_with_pages(nav, self._site)
        return config

    def on_files(self, files: Files, /, *, config: MkDocsConfig) -> Files | None:
        if self._site is None:
            return files
        for path, content in self._site.files.items():
            if (existing := files.get_file_from_path(path)) is not None:
                raise PluginError(
                    f'agentool plugin: {path} is generated from the agentools, but the docs already have it '
                    f'({existing.abs_src_path}); choose another `output` folder'
                )
            files.append(File.generated(config, path, content=content))
        return files

    def on_page_markdown(self, markdown: str, /, *, page: Page, config: MkDocsConfig, files: Files) -> str | None:
        if self._site is None:
            return markdown

        def report(message: str) -> None:
            self._report([Problem(key='directive', message=f'{page.file.src_uri}: {message}')])

        return expand(markdown, self._site.entries, report)

    def on_serve(self, server: LiveReloadServer, /, *, config: MkDocsConfig, builder: Any) -> LiveReloadServer | None:
        for source in self._sources:  # edits to the agentools' code rebuild the catalog
            server.watch(str(source))
        return server

    def _report(self, problems: list[Problem]) -> None:
        for problem in problems:
            where = 'a page' if problem.key == 'directive' else f'plugins.agentool.{problem.key}'
            message = f'{where}: {problem.message}'
            if self._strict:
                raise PluginError(f'agentool plugin: {message}')
            _log.warning(message)


def _nav_with_pages(nav: list[Any], site: CatalogSite) -> list[Any]:
    """`nav` with the catalog index's entry turned into a section: the index, then a page per agentool."""
    index = f'{site.options.output}/{INDEX}'
    pages: list[Any] = [{site.page_title(name): page} for name, page in site.pages.items()]

    def visit(items: list[Any]) -> list[Any]:
        result: list[Any] = []
        for item in items:
            if item == index:
                item = {site.options.title: index}
            if isinstance(item, dict) and len(item) == 1:  # pyright: ignore[reportUnknownArgumentType]
                ((title, value),) = cast('dict[str, Any]', item).items()
                if value == index:
                    item = {title: [index, *pages]}
                elif isinstance(value, list):
                    item = {title: visit(value)}  # pyright: ignore[reportUnknownArgumentType]
            result.append(item)
        return result

    return visit(nav)
