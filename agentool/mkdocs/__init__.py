"""The MkDocs plugin: a project's agentools as catalog pages, kept true on every docs build.

Needs the `docs` extra; the guide is "Tool catalogs in your docs".
"""

from .plugin import AgenToolPlugin, AgenToolPluginConfig

__all__ = ('AgenToolPlugin', 'AgenToolPluginConfig')
