"""Compatibility alias of `agentool.core.injector.handle`, where agentool handles live now."""

from .injector.handle import *  # noqa: F403
from .injector.handle import __all__ as __all__
