"""Where the core's own surfaces get the deps of a run given none, without importing the injector.

The plain model-string form (`Agent('agentool:NAME')`, whose model runs the operation itself) and
`AgenToolCapability`'s manager tool live in the core, which the injector package builds on and so
cannot import. The injector package plugs its builder in here when it is imported (`import agentool`
always imports it), so those forms get the same deps, from the same injector, as every other surface.
A slot holding one function, set once: no state of its own.
"""

from __future__ import annotations

from collections.abc import Callable
from contextlib import AbstractAsyncContextManager
from typing import Any

__all__ = ('DepsProvider', 'plug_injector_deps', 'injector_deps')

DepsProvider = Callable[[str, Any], AbstractAsyncContextManager[Any]]
"""Builds the deps of agentool `name` (first argument; its `deps_type` second) for one call, when a
run gave none. The injector's (`agentool.core.injector._injected.injected_deps`) is plugged in here."""

_plugged: list[DepsProvider] = []


def plug_injector_deps(provider: DepsProvider) -> None:
    """Make `provider` the builder of deps for the core's surfaces (the injector package does, once)."""
    _plugged[:] = [provider]


def injector_deps() -> DepsProvider | None:
    """The plugged builder, or `None` when the injector package was never imported."""
    return _plugged[0] if _plugged else None
