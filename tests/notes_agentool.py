"""The `notes` agentool the bridge tests share: routes carrying every kind of operation metadata."""

from __future__ import annotations

import json
from typing import Literal

from pydantic import Field
from pydantic_ai import ModelRetry, RunContext

from agentool import BaseOperationInput, Route, RoutingConfig, create_agentool

Notes = dict[str, str]


class NotesInput(BaseOperationInput):
    operation: Literal['get', 'put', 'dump', 'check', 'old'] = Field(description='What to do.')
    key: str | None = Field(default=None, description='The note key.')
    text: str | None = Field(default=None, description='The note text.')
    copies: int = Field(default=1, ge=1, description='How many times to repeat the text.')


def get(ctx: RunContext[Notes], key: str) -> str:
    """Read a note."""
    return ctx.deps[key]  # a missing key raises KeyError: a tool exception


async def put(ctx: RunContext[Notes], key: str, text: str, copies: int = 1) -> str:
    """Write a note."""
    ctx.deps[key] = text * copies
    return f'stored {key}'


def dump(ctx: RunContext[Notes]) -> str:
    """Every note as JSON."""
    return json.dumps(ctx.deps, sort_keys=True)


def check(ctx: RunContext[Notes], key: str) -> str:
    """Ask the model to retry until the note exists."""
    if key not in ctx.deps:
        raise ModelRetry(f'no note {key!r} yet; write it first')
    return 'exists'


def old(key: str) -> str:
    """The old reader."""
    return key


def create_notes() -> None:
    create_agentool(
        name='notes',
        input_schema=NotesInput,
        routing_config=RoutingConfig(
            operation_map={
                'get': Route(tool='get', read_only=True, idempotent=True, tags=('reader',)),
                'put': Route(tool='put', destructive=True, concurrent_safe=False),
                'dump': Route(tool='dump', read_only=True, max_output_chars=20),
                'check': Route(tool='check', read_only=True),
                'old': Route(tool='old', deprecated=True),
            }
        ),
        tools=[get, put, dump, check, old],
        deps_type=dict,
        description='Notes by key.',
    )
