"""A session agentool that keeps its sessions in the storage agentool, wired by the injector.

Operations: `create`, `get`, `renew`, `delete`. A session has an id, a user, JSON data and
timezone-aware `created_at` / `expires_at` times; it expires when the clock reaches `expires_at`.
Outputs are typed (`SessionsResult`). Like storage, absence is data: getting or renewing a missing
or expired session gives `status='missing'` / `'expired'` and no session.

Its typed deps (`SessionsDeps`) are filled by the injector: `storage`, a handle on the storage
agentool (every call goes back through the injector, so `injector.override(storage=...)` reaches
through), and `clock`, a `Clock` resource (the real UTC clock unless one is provided by type:
`injector.provide(Clock, instance=my_clock)`). Storage itself needs its store from the injector:

```python {test="skip"}
injector = get_injector()
injector.provide(SQLiteStore, instance=SQLiteStore(path))  # one store, shared by every run
created = await injector.call('sessions', {'operation': 'create', 'user': 'ada'})
```
"""

from __future__ import annotations

import secrets
from collections.abc import AsyncGenerator, Mapping
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import Annotated, Any, Literal, Self, TypeAlias, TypeVar

from pydantic import (
    AfterValidator,
    AwareDatetime,
    BaseModel,
    ConfigDict,
    Field,
    JsonValue,
    ValidationError,
    model_validator,
)
from pydantic_ai import Agent, RunContext

from agentool import (
    AgenToolHandle,
    BaseOperationInput,
    ConfigurationError,
    DepsUnavailableError,
    OutputError,
    Route,
    RoutingConfig,
    create_agentool,
    get_injector,
)
from examples.storage import DeleteResult, ReadResult, StorageResult, WriteResult

__all__ = (
    'DEFAULT_TTL_SECONDS',
    'KEY_PREFIX',
    'MAX_TTL_SECONDS',
    'Clock',
    'Session',
    'SessionCreateResult',
    'SessionDeleteResult',
    'SessionGetResult',
    'SessionRenewResult',
    'SessionStatus',
    'SessionsDeps',
    'SessionsInput',
    'SessionsResult',
    'create_sessions',
    'sessions',
)

DEFAULT_TTL_SECONDS = 3600
"""How long a session lives after `create` or `renew`, unless `ttl_seconds` says otherwise."""
MAX_TTL_SECONDS = 30 * 24 * 3600
KEY_PREFIX = 'session:'
"""Sessions are stored under `KEY_PREFIX + id` in the storage agentool."""

_R = TypeVar('_R', bound=BaseModel)

_UTCDatetime: TypeAlias = Annotated[AwareDatetime, AfterValidator(lambda value: value.astimezone(UTC))]

# --- typed input and outputs ---------------------------------------------------------------------

_FIELDS: dict[str, tuple[frozenset[str], frozenset[str]]] = {
    # operation: (required fields, allowed fields) besides `operation`
    'create': (frozenset({'user'}), frozenset({'user', 'data', 'ttl_seconds'})),
    'get': (frozenset({'session_id'}), frozenset({'session_id'})),
    'renew': (frozenset({'session_id'}), frozenset({'session_id', 'ttl_seconds'})),
    'delete': (frozenset({'session_id'}), frozenset({'session_id'})),
}


class SessionsInput(BaseOperationInput):
    """Input of the sessions agentool; each operation takes exactly the fields it uses."""

    operation: Literal['create', 'get', 'renew', 'delete'] = Field(description='What to do.')
    session_id: str | None = Field(
        default=None, min_length=1, max_length=128, description='The session (get, renew, delete).'
    )
    user: str | None = Field(default=None, min_length=1, max_length=256, description='Who the session is for (create).')
    data: dict[str, JsonValue] = Field(default_factory=dict[str, JsonValue], description='JSON data to keep (create).')
    ttl_seconds: int = Field(
        default=DEFAULT_TTL_SECONDS, gt=0, le=MAX_TTL_SECONDS, description='Lifetime from now (create, renew).'
    )

    @model_validator(mode='after')
    def _fields_fit_operation(self) -> Self:
        required, allowed = _FIELDS[self.operation]
        given = self.model_fields_set - {'operation'}
        if missing := sorted(required - given):
            raise ValueError(f'operation {self.operation!r} requires field {missing[0]!r}')
        if unused := sorted(given - allowed):
            raise ValueError(f'operation {self.operation!r} does not take field {unused[0]!r}')
        if any(getattr(self, name) is None for name in required):
            raise ValueError(f'operation {self.operation!r} requires a string {sorted(required)[0]!r}, not null')
        return self


class _Result(BaseModel):
    model_config = ConfigDict(frozen=True, extra='forbid')


class Session(_Result):
    """A session as stored: its times are timezone-aware (UTC)."""

    id: str
    user: str
    data: dict[str, JsonValue]
    created_at: _UTCDatetime
    expires_at: _UTCDatetime

    def expired(self, now: datetime) -> bool:
        """Whether the session has expired at `now`."""
        return now >= self.expires_at


SessionStatus: TypeAlias = Literal['active', 'expired', 'missing']
"""`active`: the session is valid (and, for `renew`, was renewed); otherwise why there is none."""


class SessionCreateResult(_Result):
    """The new session."""

    operation: Literal['create'] = 'create'
    session: Session


class SessionGetResult(_Result):
    """The session, when it is active."""

    operation: Literal['get'] = 'get'
    session_id: str
    status: SessionStatus
    session: Session | None = None


class SessionRenewResult(_Result):
    """The renewed session; only an active session can be renewed."""

    operation: Literal['renew'] = 'renew'
    session_id: str
    status: SessionStatus
    session: Session | None = None


class SessionDeleteResult(_Result):
    """A delete; `deleted` is false when there was no such session (an expired one is deleted)."""

    operation: Literal['delete'] = 'delete'
    session_id: str
    deleted: bool


SessionsResult: TypeAlias = SessionCreateResult | SessionGetResult | SessionRenewResult | SessionDeleteResult
"""The output of the sessions agentool; the `operation` field says which member it is."""

# --- deps -----------------------------------------------------------------------------------------


class Clock:
    """The time source of sessions: the real UTC clock. Provide another `Clock` to control time."""

    def now(self) -> datetime:
        """The current time, timezone-aware."""
        return datetime.now(UTC)


@dataclass(frozen=True, kw_only=True)
class SessionsDeps:
    """What the sessions tools use; the injector fills both fields."""

    storage: AgenToolHandle[StorageResult]
    """The storage agentool (the field's name is the agentool's name)."""
    clock: Clock = field(default_factory=Clock)
    """The injector's `Clock` when one is provided, else the real clock."""


@asynccontextmanager
async def _deps(ctx: RunContext[SessionsDeps | None]) -> AsyncGenerator[SessionsDeps]:
    try:
        given = ctx.deps
    except DepsUnavailableError:  # the plain Agent('agentool:sessions') form carries no deps
        given = None
    if given is not None:
        yield given
        return
    # Run without deps (the agent create_sessions returned, run directly): the injector builds them,
    # in a run scope so any resource a factory makes for them is closed afterwards.
    injector = get_injector()
    async with injector.run_scope():
        yield await injector.acreate_deps('sessions')


def _now(deps: SessionsDeps) -> datetime:
    now = deps.clock.now()
    if now.tzinfo is None or now.utcoffset() is None:
        raise ConfigurationError(
            f'agentool sessions: the clock {deps.clock!r} returned a naive datetime; clocks must be timezone-aware',
            agentool='sessions',
            clock=type(deps.clock).__qualname__,
        )
    return now.astimezone(UTC)


async def _storage(deps: SessionsDeps, expected: type[_R], input: Mapping[str, Any]) -> _R:
    result = await deps.storage(input)
    if not isinstance(result, expected):  # only a misbehaving override of storage gets here
        raise OutputError(
            f'agentool sessions: storage answered {input["operation"]!r} with {type(result).__name__}, '
            f'expected {expected.__name__}',
            agentool='sessions',
            dependency='storage',
            operation=input['operation'],
        )
    return result


async def _load(deps: SessionsDeps, session_id: str) -> Session | None:
    key = KEY_PREFIX + session_id
    read = await _storage(deps, ReadResult, {'operation': 'read', 'key': key})
    if not read.found:
        return None
    try:
        return Session.model_validate(read.data)
    except ValidationError as error:
        # Typed, not a bare ValidationError: pydantic-ai would take that for a retry request.
        raise OutputError(
            f'agentool sessions: the record stored under {key!r} is not a session: {error}',
            agentool='sessions',
            dependency='storage',
            key=key,
        ) from error


async def _save(deps: SessionsDeps, session: Session) -> None:
    data = session.model_dump(mode='json')
    await _storage(deps, WriteResult, {'operation': 'write', 'key': KEY_PREFIX + session.id, 'data': data})


# --- the agentool -------------------------------------------------------------------------------------


async def session_create(
    ctx: RunContext[SessionsDeps | None],
    user: str,
    data: dict[str, JsonValue] | None = None,
    ttl_seconds: int = DEFAULT_TTL_SECONDS,
) -> SessionCreateResult:
    """Create a session for a user, valid for ttl_seconds."""
    async with _deps(ctx) as deps:
        now = _now(deps)
        session = Session(
            id=secrets.token_urlsafe(16),
            user=user,
            data=dict(data or {}),
            created_at=now,
            expires_at=now + timedelta(seconds=ttl_seconds),
        )
        await _save(deps, session)
    return SessionCreateResult(session=session)


async def session_get(ctx: RunContext[SessionsDeps | None], session_id: str) -> SessionGetResult:
    """Get a session; an expired or unknown one gives its status and no session."""
    async with _deps(ctx) as deps:
        session = await _load(deps, session_id)
        if session is None:
            return SessionGetResult(session_id=session_id, status='missing')
        if session.expired(_now(deps)):
            return SessionGetResult(session_id=session_id, status='expired')
    return SessionGetResult(session_id=session_id, status='active', session=session)


async def session_renew(
    ctx: RunContext[SessionsDeps | None], session_id: str, ttl_seconds: int = DEFAULT_TTL_SECONDS
) -> SessionRenewResult:
    """Extend an active session to expire ttl_seconds from now."""
    async with _deps(ctx) as deps:
        session = await _load(deps, session_id)
        if session is None:
            return SessionRenewResult(session_id=session_id, status='missing')
        now = _now(deps)
        if session.expired(now):
            return SessionRenewResult(session_id=session_id, status='expired')
        renewed = session.model_copy(update={'expires_at': now + timedelta(seconds=ttl_seconds)})
        await _save(deps, renewed)
    return SessionRenewResult(session_id=session_id, status='active', session=renewed)


async def session_delete(ctx: RunContext[SessionsDeps | None], session_id: str) -> SessionDeleteResult:
    """Delete a session, expired or not."""
    async with _deps(ctx) as deps:
        deleted = await _storage(deps, DeleteResult, {'operation': 'delete', 'key': KEY_PREFIX + session_id})
    return SessionDeleteResult(session_id=session_id, deleted=deleted.deleted)


def create_sessions(*, replace: bool = False) -> Agent[SessionsDeps | None, SessionsResult]:
    """Create and register the `sessions` agentool (it calls the `storage` agentool).

    Its agent runs with or without deps: without, the injector in effect builds them.
    """
    return create_agentool(
        name='sessions',
        input_schema=SessionsInput,
        routing_config=RoutingConfig(
            operation_map={
                'create': Route(tool='session_create'),
                'get': Route(tool='session_get', read_only=True, idempotent=True),
                'renew': Route(tool='session_renew', destructive=True),
                'delete': Route(tool='session_delete', idempotent=True, destructive=True),
            }
        ),
        tools=[session_create, session_get, session_renew, session_delete],
        deps_type=SessionsDeps,
        dependencies=['storage'],
        description='User sessions with expiry, kept in the storage agentool.',
        tags=['sessions', 'example'],
        examples=[
            {'input': {'operation': 'create', 'user': 'ada', 'data': {'theme': 'dark'}, 'ttl_seconds': 900}},
            {'input': {'operation': 'get', 'session_id': 'Wc3pQ2cW9m4Xb1l0T6Jx7A'}},
        ],
        replace=replace,
    )


sessions = create_sessions(replace=True)
"""The sessions agent, registered in the registry in effect when this module is imported."""
