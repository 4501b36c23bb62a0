"""How one request runs: the pieces the manager and every surface share on the way to a tool.

The rest of agentool imports these names from here, never from the private modules.
"""

from ._call_args import MANAGER_TOOL_NAME, call_args, operation_name
from ._context import context_template, direct_context
from ._gate import SerialGate
from ._in_effect import (
    Entry,
    Frame,
    GateTable,
    InjectorInEffect,
    frame,
    injector_in_effect,
    leave,
)
from ._input_errors import invalid_input, invalid_json, not_an_object, unknown_operation, unparsable_json
from ._json import json_type, json_validator, loc
from ._missing_deps import declares_deps, deps_admit_none, missing_deps_error, type_label
from ._tool_errors import ToolRaised, failed_error, output_retry_error, retried_error, retry_error
from .durability import active_dispatcher, dispatching, is_durable

__all__ = (
    'invalid_input',
    'invalid_json',
    'not_an_object',
    'unknown_operation',
    'unparsable_json',
    'json_type',
    'json_validator',
    'loc',
    'MANAGER_TOOL_NAME',
    'call_args',
    'operation_name',
    'ToolRaised',
    'failed_error',
    'output_retry_error',
    'retry_error',
    'retried_error',
    'context_template',
    'direct_context',
    'Entry',
    'Frame',
    'GateTable',
    'InjectorInEffect',
    'frame',
    'injector_in_effect',
    'leave',
    'declares_deps',
    'deps_admit_none',
    'missing_deps_error',
    'type_label',
    'SerialGate',
    'active_dispatcher',
    'dispatching',
    'is_durable',
)
