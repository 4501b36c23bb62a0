"""The injector: run agentools by name, wire their dependencies, swap any of them in tests.

It sits on the routing core, which finds the injector in effect through `core.request`; its
modules are mapped in docs/architecture.md.
"""

from ._injector import AgenToolInjector, get_injector, use_injector
from ._wiring import ResourceScope
from .serialization import serialize_to_json_string, validate_json_string

__all__ = (
    'AgenToolInjector',
    'ResourceScope',
    'get_injector',
    'use_injector',
    'serialize_to_json_string',
    'validate_json_string',
)
