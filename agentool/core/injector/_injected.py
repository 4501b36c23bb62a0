"""Deps alike on every surface: what a surface passes when its caller gave no deps.

`agent.run` without `deps=` (through the manager tool of the agent `create_agentool` returns),
`injector.call`, the CLI's `call` and the MCP server all build an agentool's deps the same way:
the injector in effect supplies its `deps_type`: the instance it keeps (handles, provided
instances, field defaults), or deps built in a run scope closed when the call ends when a factory
makes part of them (or the injector subclass's own `create_deps`). When it
cannot, and the `deps_type` does not admit `None`, `MissingDepsError` says what is missing and
how to provide it; a tool that declared a deps type is never handed `None`.
"""

from __future__ import annotations

from collections.abc import AsyncGenerator
from contextlib import asynccontextmanager
from typing import Any

from ...errors import AgenToolNotFoundError
from .._deps_source import plug_injector_deps
from .._gate import plug_gate_table
from ._deps import declares_deps
from ._missing import admits_none, missing_deps_error
from ._scope import get_injector

__all__ = ('injected_deps',)


@asynccontextmanager
async def injected_deps(name: str, deps_type: Any) -> AsyncGenerator[Any]:
    """The deps of agentool `name` (declared `deps_type`), built by the injector in effect for one call.

    Yields `None` when `deps_type` declares no deps, or admits `None` and cannot be built. The
    resources made for them are closed when the block ends (joined to a run in progress).

    Raises:
        MissingDepsError: `deps_type` cannot be built and does not admit `None`.
    """
    if not declares_deps(deps_type):
        yield None
        return
    injector = get_injector()
    async with injector.run_scope():
        try:
            # The builder `injector.call` and `injector.run` use (a subclass's own `create_deps` too):
            # what it raises, `MissingDepsError` included, reaches the caller as they raise it.
            deps = await injector.acreate_deps(name)
        except AgenToolNotFoundError as error:
            if name in injector:  # not about this agentool: the builder's own error
                raise
            # Only here: the agent was registered with another injector than the one in effect.
            if not admits_none(deps_type):
                raise missing_deps_error(name, deps_type, error) from error
            deps = None
        yield deps


plug_injector_deps(injected_deps)  # the core's own surfaces (the plain model-string form) build deps with it
plug_gate_table(lambda: get_injector().serial_calls)  # `concurrent_safe=False`: one call at a time per injector
