"""Compatibility alias of `agentool.catalog.data`, where the catalog renderers live now."""

from ..catalog.data import *  # noqa: F403
from ..catalog.data import __all__ as __all__
