"""Compatibility alias of `agentool.catalog.markdown`, where the catalog renderers live now."""

from ..catalog.markdown import *  # noqa: F403
from ..catalog.markdown import __all__ as __all__
