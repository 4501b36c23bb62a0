"""What `agentool call` does with its input: read it (size first) and run the agentool on it."""

from __future__ import annotations

import sys
from typing import Any

from ..core.registry import AgenToolRegistry, get_registry
from ..errors import InputTooLargeError

__all__ = ('read_stdin', 'call', 'plain_agent')


def read_stdin(name: str, limit: int) -> str:
    """Standard input, read no further than one byte past the agentool's `max_input_bytes`, size checked first.

    JSON that is not UTF-8 gets the manager's typed error.
    """
    stream = getattr(sys.stdin, 'buffer', None)
    if stream is None:  # a text stream without bytes underneath (replaced in a program calling `main`)
        return sys.stdin.read(limit + 1)
    data: bytes = stream.read(limit + 1)
    if len(data) > limit:
        raise InputTooLargeError(
            f'input to agentool {name!r} on standard input is over the limit of {limit} bytes (max_input_bytes)',
            agentool=name,
            size=len(data),
            limit=limit,
        )
    try:
        return data.decode('utf-8')
    except UnicodeDecodeError:
        get_registry().get_manager(name).validate_json(data)  # raises the typed `InvalidJSONError`
        raise


async def call(registry: AgenToolRegistry, name: str, prompt: str, output_type: Any) -> Any:
    """Run agentool `name` through its agent, with the deps the injector builds (as on every surface)."""
    from ..core.injector import get_injector

    injector = get_injector()
    if name not in injector:  # registered without `create_agentool`
        return (await plain_agent(registry, name, output_type).run(prompt)).output
    registry.get_manager(name).validate_json(prompt)  # bad input is reported before any resource is made
    return (await injector.get(name).run(prompt)).output


def plain_agent(registry: AgenToolRegistry, name: str, output_type: Any) -> Any:
    from pydantic_ai import Agent

    from ..core.agent.capability import AgenToolCapability
    from ..core.model import AgenToolModel

    model = AgenToolModel(name, registry=registry)
    capability = AgenToolCapability(name, registry=registry)
    return Agent(model, output_type=str if output_type is None else output_type, capabilities=[capability])
