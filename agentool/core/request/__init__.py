"""How one request runs: the pieces the manager and every surface share on the way to a tool.

- `_input_errors`, `_json`: the typed errors for input an agentool refuses, and the JSON helpers
  that name what was wrong;
- `_call_args`: the manager tool's name and the arguments of the call a deterministic run makes;
- `_tool_errors`: a tool's `ModelRetry` or exception as the typed error a run raises;
- `_context`: the `RunContext` of the injector's direct path (a copy of one built per agentool);
- `_in_effect`: the run's frame (a context variable, a `Frame`), the injector in effect, found
  without importing the injector, and leaving a frame (`leave`, where a run's scope is closed);
- `_missing_deps`: deps that cannot be had (`None` when the deps type admits it, else the error);
- `_gate`: a `concurrent_safe=False` tool's calls one at a time per injector;
- `durability`: the seam a durable run takes operation calls over by.

The rest of agentool imports these names from here, never from the private modules.
"""

from ._call_args import MANAGER_TOOL_NAME, call_args, operation_name
from ._context import context_template, direct_context
from ._gate import SerialGate
from ._in_effect import (
    COMPANION,
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
from ._tool_errors import ToolRaised, failed_error, output_retry_error, retry_error
from .durability import active_dispatcher, dispatcher_reset, dispatcher_scope, is_durable

__all__ = (
    # input refused
    'invalid_input',
    'invalid_json',
    'not_an_object',
    'unknown_operation',
    'unparsable_json',
    'json_type',
    'json_validator',
    'loc',
    # the manager tool's call and its errors
    'MANAGER_TOOL_NAME',
    'call_args',
    'operation_name',
    'ToolRaised',
    'failed_error',
    'output_retry_error',
    'retry_error',
    # the run's context, frame and deps
    'context_template',
    'direct_context',
    'COMPANION',
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
    # durable execution
    'active_dispatcher',
    'dispatcher_reset',
    'dispatcher_scope',
    'is_durable',
)
