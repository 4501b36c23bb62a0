"""Compatibility alias of `agentool.catalog.openapi`, where the catalog renderers live now."""

from ..catalog.openapi import *  # noqa: F403
from ..catalog.openapi import __all__ as __all__
