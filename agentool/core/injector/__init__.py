"""The injector: run agentools by name, wire their dependencies, swap any of them in tests.

This package sits on the routing core (`agentool.core`: registry, manager, model, capability) and
is imported by nothing there (the core's own surfaces reach it through `core._deps_source`, which
`_injected` plugs). A call goes down through its modules, each entered once, never back up:

1. `_scope` (with `_frame`): which injector is in effect; `_injected` is how the surfaces that
   start without one (toolset, MCP, manager tool, the plain model-string form) ask it for deps.
2. `_injector`: `call`, `run`, handles (`handle`): enters the run's frame (`_frame`; a cycle is
   `_graph`'s error) and runs the manager with the deps the wiring supplies.
3. `_targets`: what answers for the name (the registered agent or an override) and the input as
   JSON text, worked out once per registration.
4. `_wiring`: registration, checks, and `_supply`, the deps of a call given none: the instance the
   injector keeps, else built per run from a plan (`_deps`); `MissingDepsError` from `_missing`.
5. `_resources`: providers by type and the run scope that owns what factories made.

`serialization` holds the guide's JSON helpers.
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
