"""Output: what an output spec stands for and what can produce it, whether a value fits an output
schema, and the final `ModelResponse` in any output mode."""

from ._fit import resolve
from ._response import admits_none, inner_schema, json_data, json_output_text, output_parts, output_response
from ._spec import can_produce, check_output_type, output_members, output_types, output_value_type

__all__ = (
    'can_produce',
    'check_output_type',
    'output_members',
    'output_types',
    'output_value_type',
    'resolve',
    'output_response',
    'output_parts',
    'admits_none',
    'inner_schema',
    'json_output_text',
    'json_data',
)
