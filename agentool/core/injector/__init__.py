"""The injector: run agentools by name, wire their dependencies, swap any of them in tests.

This package sits on the routing core (`agentool.core`: registry, manager, model, capability) and
is imported by nothing there. It holds the injector (`_injector`), the scope helpers that say which
injector is in effect (`_scope`, `_frame`), typed deps and agentool handles (`_deps`, `handle`),
resources by type with run scope (`_resources`), what runs for a name (`_targets`: agents,
overrides, the direct path's context in `_context`), the dependency-graph checks (`_graph`) and
the guide's JSON helpers (`serialization`).
"""

from . import _injected  # noqa: F401  # pyright: ignore[reportUnusedImport]  # plugs the core's deps source
from ._injector import AgenToolInjector
from ._resources import ResourceScope
from ._scope import get_injector, use_injector
from .serialization import serialize_to_json_string, validate_json_string

__all__ = (
    'AgenToolInjector',
    'ResourceScope',
    'get_injector',
    'use_injector',
    'serialize_to_json_string',
    'validate_json_string',
)
