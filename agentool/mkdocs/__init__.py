"""The MkDocs plugin: a project's agentools as catalog pages, kept true on every docs build.

Install with `pip install 'agentool[docs]'` and add `- agentool` under `plugins:` in `mkdocs.yml`
with the modules (or functions) that register the agentools. See the guide "Tool catalogs in your
docs".
"""

from .plugin import AgenToolPlugin, AgenToolPluginConfig

__all__ = ('AgenToolPlugin', 'AgenToolPluginConfig')
