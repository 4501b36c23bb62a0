"""Deps alike on every surface: what a surface passes when its caller gave no deps.

`agent.run` without `deps=` (through the manager tool of the agent `create_agentool` returns),
`injector.call`, the CLI's `call` and the MCP server all build an agentool's deps the same way:
the injector in effect builds its `deps_type` (handles, provided resources, field defaults) in a
run scope closed when the call ends. When it cannot, and the `deps_type` does not admit `None`,
`MissingDepsError` says what is missing and how to provide it; a tool that declared a deps type
is never handed `None`.
"""

from __future__ import annotations

from collections.abc import AsyncGenerator
from contextlib import asynccontextmanager
from typing import Any

from pydantic import TypeAdapter, ValidationError

from ...errors import AgenToolNotFoundError, DependencyError, MissingDepsError
from ._deps import declares_deps
from ._resources import type_label
from ._scope import get_injector

__all__ = ('injected_deps', 'admits_none', 'missing_deps_error')


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
            deps = await injector.acreate_deps(name)
        except (DependencyError, AgenToolNotFoundError) as error:
            if not admits_none(deps_type):
                raise missing_deps_error(name, deps_type, error) from error
            deps = None
        yield deps


def admits_none(deps_type: Any) -> bool:
    """Whether `None` is a valid value of `deps_type` (say `Store | None`)."""
    try:
        TypeAdapter[Any](deps_type).validate_python(None)
    except ValidationError:
        return False
    except Exception:  # a type pydantic cannot read: it does not say None is fine
        return False
    return True


def missing_deps_error(name: str, deps_type: Any, cause: Exception) -> MissingDepsError:
    """The error for deps of `name` that were not given and cannot be built, naming what is missing."""
    reason = str(cause.args[0]) if cause.args else type(cause).__name__
    if isinstance(cause, AgenToolNotFoundError):
        reason = f'{name!r} is registered with no injector (define it with create_agentool)'
    label = type_label(deps_type)
    return MissingDepsError(
        f'agentool {name!r} declares deps_type {label}, no deps were given and the injector cannot build them: '
        f'{reason}. Pass deps=... (agent.run, injector.call, create_mcp_server(deps=...)), or let the injector '
        'build them (injector.provide(TYPE, factory) for what is missing)',
        agentool=name,
        deps_type=label,
        reason=reason,
    )
