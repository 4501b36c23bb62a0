"""agentool: deterministic, typed tool routing on pydantic-ai.

`import agentool` installs one documented hook (see `agentool.model_strings`) so that
`Agent('agentool:NAME')` resolves; nothing else happens at import.
"""

from __future__ import annotations

from . import model_strings
from .base import BaseOperationInput
from .core.capability import AgenToolCapability, manager_tool, manager_toolset
from .core.manager import MANAGER_TOOL_NAME, AgenToolManager
from .core.model import AgenToolModel
from .core.registry import (
    AgenToolConfig,
    AgenToolRegistry,
    Route,
    RoutingConfig,
    ToolMetadata,
    get_registry,
    use_registry,
)
from .errors import (
    AgenToolError,
    AgenToolNotFoundError,
    ConfigurationError,
    DepsUnavailableError,
    DuplicateNameError,
    InputTooLargeError,
    InputValidationError,
    InvalidInputError,
    InvalidJSONError,
    NotAnObjectError,
    OutputError,
    RoutingError,
    ToolArgumentError,
    ToolRetryError,
    TransformError,
    UnknownOperationError,
)
from .factory import create_agentool, extract_tool_metadata, infer_output_type

__all__ = (
    'AgenToolCapability',
    'AgenToolConfig',
    'AgenToolError',
    'AgenToolManager',
    'AgenToolModel',
    'AgenToolNotFoundError',
    'AgenToolRegistry',
    'BaseOperationInput',
    'ConfigurationError',
    'DepsUnavailableError',
    'DuplicateNameError',
    'InputTooLargeError',
    'InputValidationError',
    'InvalidInputError',
    'InvalidJSONError',
    'MANAGER_TOOL_NAME',
    'NotAnObjectError',
    'OutputError',
    'Route',
    'RoutingConfig',
    'RoutingError',
    'ToolArgumentError',
    'ToolMetadata',
    'ToolRetryError',
    'TransformError',
    'UnknownOperationError',
    'create_agentool',
    'extract_tool_metadata',
    'get_registry',
    'infer_output_type',
    'manager_tool',
    'manager_toolset',
    'use_registry',
)

__version__ = '0.1.0'

model_strings.install()
