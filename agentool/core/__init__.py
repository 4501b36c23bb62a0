"""The routing core the architecture guide names: what an agentool is and how one request runs.

The guide's component names are importable from here (`from agentool.core import AgenToolRegistry`).
"""

from .definition import AgenToolConfig, RoutingConfig, ToolMetadata
from .manager import AgenToolManager
from .model import AgenToolModel
from .registry import AgenToolRegistry

__all__ = ('AgenToolConfig', 'AgenToolManager', 'AgenToolModel', 'AgenToolRegistry', 'RoutingConfig', 'ToolMetadata')
