"""The injector: run agentools by name, wire their dependencies, swap any of them in tests.

This package sits on the routing core and is imported by nothing there: the core's surfaces find
the injector in effect through `core.request`. Its modules:

1. `_injector`: which injector is in effect (`get_injector`); `call`, `run`, registration and
   checks; what the one operation sequence (`agentool.core.operation`) asks of the injector:
   `enter` (the run's frame) and `deps_for` (the deps of a call given none, whose lifetime
   `_supply` decides; `call_deps`, their public form).
2. `_targets`: what answers for a name (the registered agent or an override), worked out once.
3. `_wiring`: typed deps (handles: `handle`), the providers they are built from and the scopes
   that own what factories made; `_graph`: dependency-graph checks.

`serialization`: an input as JSON text (`serialize_input`), with the guide's two JSON helpers.
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
