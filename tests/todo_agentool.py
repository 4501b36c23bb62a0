"""A small todo agentool built the way the docs recommend: optional per-operation fields, routes
without transforms, typed deps (`TodoDeps`) with a database the injector provides.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Literal

from pydantic import BaseModel, Field
from pydantic_ai import Agent, RunContext

from agentool import BaseOperationInput, RoutingConfig, create_agentool
from agentool.core.injector import get_injector


class TodoInput(BaseOperationInput):
    operation: Literal['add', 'complete', 'list'] = Field(description='What to do.')
    id: int | None = Field(default=None, description='The todo (complete).')
    title: str | None = Field(default=None, description='What to do (add).')


class Todo(BaseModel):
    id: int
    title: str
    done: bool = False


@dataclass
class TodoDB:
    items: dict[int, Todo] = field(default_factory=dict[int, Todo])


@dataclass
class TodoDeps:
    db: TodoDB


async def todo_add(ctx: RunContext[TodoDeps], title: str) -> list[Todo]:
    """Add a todo."""
    todo = Todo(id=len(ctx.deps.db.items) + 1, title=title)
    ctx.deps.db.items[todo.id] = todo
    return [todo]


async def todo_complete(ctx: RunContext[TodoDeps], id: int) -> list[Todo]:
    """Mark a todo done."""
    todo = ctx.deps.db.items.get(id)
    if todo is None:
        return []
    todo.done = True
    return [todo]


async def todo_list(ctx: RunContext[TodoDeps]) -> list[Todo]:
    """Every todo."""
    return list(ctx.deps.db.items.values())


def create_todo(*, provide: bool = True) -> Agent[Any, list[Todo]]:
    """Register `todo` (and, with `provide`, a `TodoDB` for its deps) with the registry and injector in effect."""
    if provide:
        get_injector().provide(TodoDB, TodoDB, scope='run', replace=True)
    return create_agentool(
        'todo',
        TodoInput,
        RoutingConfig(operation_map={'add': 'todo_add', 'complete': 'todo_complete', 'list': 'todo_list'}),
        [todo_add, todo_complete, todo_list],
        deps_type=TodoDeps,
        replace=True,
    )
