"""agentool: deterministic, typed tool routing on pydantic-ai.

`import agentool` checks the installed pydantic-ai release (`agentool._compat`), then installs the
`agentool:NAME` model-string hook (`agentool.model_strings`); `docs/architecture.md` maps the layers.
"""

from __future__ import annotations

# First: importing it checks the pydantic-ai release before any module uses pydantic-ai's APIs.
from . import (
    _compat,  # noqa: F401  # pyright: ignore[reportUnusedImport]
    model_strings,
)
from .base import AllowInfNan, BaseOperationInput
from .catalog import Catalog, CatalogDetails, CatalogEntry, CatalogField, CatalogOperation, CatalogTool, DependencyGraph
from .core.agent import AgenToolAgent
from .core.agent.capability import AgenToolCapability
from .core.agent.capability import manager_tool as manager_tool
from .core.agent.capability import manager_toolset as manager_toolset
from .core.injector import AgenToolInjector, ResourceScope, get_injector, use_injector
from .core.injector.handle import AgenToolHandle, Uses
from .core.manager import MANAGER_TOOL_NAME, AgenToolManager
from .core.model import AgenToolModel
from .core.registry import (
    AgenToolConfig,
    AgenToolRegistry,
    ConfigProblem,
    Route,
    RoutingConfig,
    ToolMetadata,
    get_registry,
    use_registry,
)
from .dispatch import CommandRule, DispatchCapability, DispatchRule, JsonRule, PredicateRule
from .errors import (
    AgenToolError,
    AgenToolNotFoundError,
    ConfigurationError,
    DependencyCycleError,
    DependencyError,
    DepsUnavailableError,
    DispatchError,
    DispatchOutputError,
    DispatchTargetError,
    DuplicateNameError,
    InjectorValidationError,
    InputTooLargeError,
    InputValidationError,
    InvalidInputError,
    InvalidJSONError,
    InvalidToolNameError,
    InvalidUpdateError,
    MissingDepsError,
    MissingExtraError,
    NotAnObjectError,
    OutputError,
    PydanticAIVersionError,
    RoutingError,
    SelectorError,
    ToolArgumentError,
    ToolFailedError,
    ToolNameConflictError,
    ToolRetryError,
    TransformError,
    UnknownOperationError,
)
from .factory import create_agentool
from .factory import extract_tool_metadata as extract_tool_metadata
from .factory import infer_output_type as infer_output_type
from .filters import ExposedOperation, is_exposed, select_operations
from .model_strings import register_agentool_models
from .telemetry import dispatch_span as dispatch_span
from .telemetry import operation_span as operation_span
from .toolset import AgenToolToolset

# The user's API, by group. The `as` imports above stay importable from here but are listed in their homes.
__all__ = (
    # defining an agentool
    'AgenToolConfig',
    'AllowInfNan',
    'BaseOperationInput',
    'ConfigProblem',
    'Route',
    'RoutingConfig',
    'ToolMetadata',
    'create_agentool',
    # running one
    'MANAGER_TOOL_NAME',
    'AgenToolAgent',
    'AgenToolCapability',
    'AgenToolManager',
    'AgenToolModel',
    'register_agentool_models',
    # registry and injector
    'AgenToolHandle',
    'AgenToolInjector',
    'AgenToolRegistry',
    'ResourceScope',
    'Uses',
    'get_injector',
    'get_registry',
    'use_injector',
    'use_registry',
    # catalogs
    'Catalog',
    'CatalogDetails',
    'CatalogEntry',
    'CatalogField',
    'CatalogOperation',
    'CatalogTool',
    'DependencyGraph',
    # agentools as tools of other agents, and dispatch in front of them
    'AgenToolToolset',
    'CommandRule',
    'DispatchCapability',
    'DispatchRule',
    'ExposedOperation',
    'JsonRule',
    'PredicateRule',
    'is_exposed',
    'select_operations',
    # errors
    'AgenToolError',
    'AgenToolNotFoundError',
    'ConfigurationError',
    'DependencyCycleError',
    'DependencyError',
    'DepsUnavailableError',
    'DispatchError',
    'DispatchOutputError',
    'DispatchTargetError',
    'DuplicateNameError',
    'InjectorValidationError',
    'InputTooLargeError',
    'InputValidationError',
    'InvalidInputError',
    'InvalidJSONError',
    'InvalidToolNameError',
    'InvalidUpdateError',
    'MissingDepsError',
    'MissingExtraError',
    'NotAnObjectError',
    'OutputError',
    'PydanticAIVersionError',
    'RoutingError',
    'SelectorError',
    'ToolArgumentError',
    'ToolFailedError',
    'ToolNameConflictError',
    'ToolRetryError',
    'TransformError',
    'UnknownOperationError',
)

__version__ = '0.1.0'

model_strings.install()
