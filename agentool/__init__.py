"""agentool: deterministic, typed tool routing on pydantic-ai.

`import agentool` first checks that the installed pydantic-ai is a supported release (raising
`PydanticAIVersionError` if not; see `agentool._compat`), then installs one documented hook (see
`agentool.model_strings`) so that `Agent('agentool:NAME')` resolves; nothing else happens at
import. The test-double kit lives in `agentool.testing` and the MCP server in `agentool.mcp`;
neither is imported here.

Layers, bottom up (imports point down; `docs/architecture.md` has the map): `errors`, `base`; the
routing core `agentool.core`; `telemetry`; the injector `agentool.core.injector`; the catalog
renderers `agentool.catalog`; `factory`; the bridges (`toolset`, `filters`, `mcp`, `model_strings`);
`agentool.dispatch` (rules in front of any agent); `agentool.testing`; the CLI.
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
from .core.capability import AgenToolCapability, manager_tool, manager_toolset
from .core.handle import AgenToolHandle, Uses
from .core.injector import AgenToolInjector, ResourceScope, get_injector, use_injector
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
from .factory import create_agentool, extract_tool_metadata, infer_output_type
from .filters import ExposedOperation, is_exposed, select_operations
from .model_strings import register_agentool_models
from .telemetry import dispatch_span, operation_span
from .toolset import AgenToolToolset

__all__ = (
    'MANAGER_TOOL_NAME',
    'AgenToolAgent',
    'AgenToolCapability',
    'AgenToolConfig',
    'AgenToolError',
    'AgenToolHandle',
    'AgenToolInjector',
    'AgenToolManager',
    'AgenToolModel',
    'AgenToolNotFoundError',
    'AgenToolRegistry',
    'ConfigProblem',
    'AgenToolToolset',
    'AllowInfNan',
    'BaseOperationInput',
    'Catalog',
    'CatalogDetails',
    'CatalogEntry',
    'CatalogField',
    'CatalogOperation',
    'CatalogTool',
    'CommandRule',
    'ConfigurationError',
    'DependencyCycleError',
    'DependencyError',
    'DependencyGraph',
    'DepsUnavailableError',
    'MissingDepsError',
    'DispatchCapability',
    'DispatchError',
    'DispatchOutputError',
    'DispatchRule',
    'DispatchTargetError',
    'DuplicateNameError',
    'InvalidUpdateError',
    'ExposedOperation',
    'InjectorValidationError',
    'InputTooLargeError',
    'InputValidationError',
    'InvalidInputError',
    'InvalidJSONError',
    'JsonRule',
    'MissingExtraError',
    'PydanticAIVersionError',
    'NotAnObjectError',
    'OutputError',
    'PredicateRule',
    'ResourceScope',
    'Route',
    'RoutingConfig',
    'RoutingError',
    'SelectorError',
    'ToolArgumentError',
    'ToolFailedError',
    'ToolMetadata',
    'ToolNameConflictError',
    'InvalidToolNameError',
    'ToolRetryError',
    'TransformError',
    'UnknownOperationError',
    'Uses',
    'create_agentool',
    'extract_tool_metadata',
    'get_injector',
    'get_registry',
    'infer_output_type',
    'is_exposed',
    'dispatch_span',
    'manager_tool',
    'manager_toolset',
    'operation_span',
    'select_operations',
    'register_agentool_models',
    'use_injector',
    'use_registry',
)

__version__ = '0.1.0'

model_strings.install()
