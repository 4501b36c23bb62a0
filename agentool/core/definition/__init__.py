"""What an agentool is: its configuration, and what agentool reads from it once, at creation.

- `config`: the plain data that defines an agentool (`RoutingConfig`, `Route`, `AgenToolConfig`, …);
- `_signature`: each tool's signature, read once so the call path does no introspection;
- `_requirements`: what each operation needs from its input, the one rule every surface enforces;
- `_routes`: the configuration checked and compiled into one `CompiledRoute` per operation;
- `_metadata`: a tool function's metadata and the output type its routes imply.

The rest of agentool imports these names from here, never from the private modules.
"""

from ._metadata import docstring_summary, extract_tool_metadata, infer_output_type
from ._requirements import (
    FieldsSource,
    Requirements,
    json_key,
    loads,
    merge_errors,
    operation_requirements,
    probe_transform,
)
from ._routes import (
    CompiledRoute,
    attach_requirements,
    check_routes,
    configuration_error,
    requirements_of,
    tool_list,
    unfillable_defaults,
)
from ._signature import UNREADABLE, UNRESOLVABLE, ToolSignature, read_signature, tool_name, type_name
from .config import (
    DEFAULT_MAX_INPUT_BYTES,
    AgenToolConfig,
    ConfigProblem,
    Route,
    RouteSpec,
    RoutingConfig,
    ToolMetadata,
    Transform,
    check_config,
    check_routing,
    check_tools,
    now,
)

__all__ = (
    # config
    'AgenToolConfig',
    'RoutingConfig',
    'Route',
    'RouteSpec',
    'Transform',
    'ToolMetadata',
    'ConfigProblem',
    'DEFAULT_MAX_INPUT_BYTES',
    'now',
    'check_routing',
    'check_tools',
    'check_config',
    # signatures
    'ToolSignature',
    'read_signature',
    'tool_name',
    'type_name',
    'UNRESOLVABLE',
    'UNREADABLE',
    # requirements
    'FieldsSource',
    'Requirements',
    'operation_requirements',
    'probe_transform',
    'json_key',
    'merge_errors',
    'loads',
    # routes
    'CompiledRoute',
    'check_routes',
    'attach_requirements',
    'requirements_of',
    'unfillable_defaults',
    'configuration_error',
    'tool_list',
    # metadata
    'extract_tool_metadata',
    'infer_output_type',
    'docstring_summary',
)
