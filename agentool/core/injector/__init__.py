"""The injector: run agentools by name, wire their dependencies, swap any of them in tests.

It sits on the routing core, which finds the injector in effect through `core.request`.
`_injector` holds `AgenToolInjector` (`call`, `run`, registration, checks, and `enter`/`deps_for`
for the operation sequence), `_targets` what answers for a name, `_wiring` typed deps and the
resources they are built from, `_graph` dependency-graph checks, and `serialization` an input as
JSON text (with the guide's two JSON helpers).
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
