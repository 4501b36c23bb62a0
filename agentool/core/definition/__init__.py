"""What an agentool is: its configuration (`config`), and what agentool reads from it once, at creation:
tool signatures and metadata (`_signature`), each operation's requirements (`_requirements`) and
compiled routes (`_routes`). The rest of agentool imports these names from here.
"""

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
from ._signature import (
    UNREADABLE,
    UNRESOLVABLE,
    ToolSignature,
    docstring_summary,
    extract_tool_metadata,
    infer_output_type,
    read_signature,
    tool_name,
    type_name,
)
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
    'extract_tool_metadata',
    'infer_output_type',
    'docstring_summary',
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
)
