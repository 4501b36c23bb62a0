"""The injector: run agentools by name, wire their dependencies, swap any of them in tests.

This package sits on the routing core (`agentool.core`: registry, manager, model, agent) and
is imported by nothing there: the core's own surfaces find the injector in effect through
`core.request` (`_in_effect` (the task-local frame, else the registry's default injector)). A call goes down
through its modules, each entered once, never back up:

1. `_scope`: which injector is in effect (the core's `Frame`, else the registry's default).
2. `_injector`: `call`, `run`, handles (`handle`), registration and checks; what the one
   operation sequence (`agentool.core.operation`) asks of the injector running a call: `enter`
   (the run's frame; a cycle is `_graph`'s error) and `deps_for` (the deps of a call given none,
   on every surface; `call_deps` is their public form).
3. `_targets`: what answers for the name (the registered agent or an override) and the input as
   JSON text, worked out once per registration.
4. `_lifetime`: `DepsLifetime.supply`, the one place that decides how long the deps of a call
   given none live (as long as the injector, one run, or none), from plans (`_deps`).
5. `_resources`: providers by type and the scopes that own what factories made (a run's, the injector's).

`serialization`: an input as JSON text (`serialize_input`), with the guide's two JSON helpers.
"""

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
