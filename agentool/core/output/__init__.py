"""Output: what an agent's output spec stands for, and a tool's return value as the run's final answer.

- `_spec`: what value an output spec (`NativeOutput(M)`, `[M, str]`, `ToolOutput(M)`) stands for;
- `_fit`: whether a value fits an output JSON schema (its own type first, then its JSON shape);
- `_produce`: whether a tool's return annotation can ever give a value an output type accepts;
- `_response`: the final `ModelResponse` in the output mode a run asks for (tool call, native, prompted, text).

The rest of agentool imports these names from here, never from the private modules.
"""

from ._fit import resolve
from ._produce import can_produce
from ._response import admits_none, json_data, json_output_text, output_parts, output_response
from ._spec import check_output_type, output_types, output_value_type

__all__ = (
    'can_produce',
    'check_output_type',
    'output_types',
    'output_value_type',
    'resolve',
    'output_response',
    'output_parts',
    'admits_none',
    'json_output_text',
    'json_data',
)
