"""Compatibility alias of `agentool.catalog.graph`, where the catalog renderers live now."""

from ..catalog.graph import *  # noqa: F403
from ..catalog.graph import __all__ as __all__
