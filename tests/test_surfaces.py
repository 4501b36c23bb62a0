"""Nothing unchecked reaches a tool, and deps are built alike, on every surface.

The todo agentool (`tests/todo_agentool.py`) is the scenario: optional per-operation
fields, routes without transforms, typed deps with a database the injector provides.
"""

from __future__ import annotations

import json
import subprocess
import sys
from datetime import UTC, datetime
from typing import Annotated, Any, Literal
from uuid import UUID, uuid4

import pytest
from mcp import Client
from pydantic import BaseModel, Field
from pydantic_ai import Agent
from pydantic_ai.messages import ModelMessage, ModelResponse, TextPart, ToolCallPart, ToolReturnPart
from pydantic_ai.models.function import AgentInfo, FunctionModel

from agentool import AgenToolAgent, AgenToolCapability, BaseOperationInput, RoutingConfig, create_agentool, get_registry
from agentool.core.injector import AgenToolInjector, get_injector
from agentool.core.manager import MANAGER_TOOL_NAME
from agentool.errors import InputValidationError, MissingDepsError
from agentool.mcp import create_mcp_server
from tests._lean_diff import differential
from tests.agentools import ROOT
from tests.todo_agentool import Todo, create_todo


def cli(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, '-m', 'agentool', '--import', 'tests.todo_cli', *args],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=120,
    )


def test_cli_call_refuses_an_operation_without_its_field() -> None:
    # Before the fix: exit 0 and `null` (the tool ran with id=None); `add` reached the store.
    complete = cli('call', 'todo', '{"operation": "complete"}')
    add = cli('call', 'todo', '{"operation": "add"}')
    fine = cli('call', 'todo', '{"operation": "add", "title": "milk"}')
    assert complete.returncode == 1, complete.stdout
    assert "invalid input for agentool 'todo' operation 'complete': field 'id': Field required" in complete.stderr
    assert add.returncode == 1
    assert "field 'title': Field required" in add.stderr
    assert fine.returncode == 0, fine.stderr
    assert json.loads(fine.stdout) == [{'id': 1, 'title': 'milk', 'done': False}]


def test_the_published_schema_is_what_is_enforced() -> None:
    create_todo()
    operations = get_registry().get_operations('todo')
    assert operations is not None
    schema = operations['complete']['request_schema']
    assert schema['required'] == ['operation', 'id']
    assert schema['properties']['id'] == {'type': 'integer', 'title': 'Id', 'description': 'The todo (complete).'}
    # null is refused as the schema says: the tool's `id: int` cannot take it.
    with pytest.raises(InputValidationError) as caught:
        get_registry().get_manager('todo').validate_json('{"operation": "complete", "id": null}')
    assert [(e['type'], e['loc']) for e in caught.value.errors] == [('none_forbidden', ['id'])]


async def test_every_failing_field_at_once() -> None:
    agent = create_todo()
    with pytest.raises(InputValidationError) as caught:
        await agent.run('{"operation": "add", "id": "x"}')
    assert [(e['type'], e['loc']) for e in caught.value.errors] == [
        ('int_parsing', ['id']),
        ('extra_forbidden', ['id']),
        ('missing', ['title']),
    ]


async def test_agent_run_without_deps_builds_them_like_injector_call() -> None:
    agent = create_todo()
    assert (await agent.run('{"operation": "add", "title": "a"}')).output == [Todo(id=1, title='a')]
    # Again: a later run (which a lean agent could answer without the graph) builds them too.
    assert (await agent.run('{"operation": "add", "title": "a"}')).output == [Todo(id=1, title='a')]
    assert await get_injector().call('todo', {'operation': 'add', 'title': 'b'}) == [Todo(id=1, title='b')]


async def test_deps_that_cannot_be_built_are_a_typed_error_on_every_surface() -> None:
    agent = create_todo(provide=False)  # nothing provides TodoDB
    with pytest.raises(MissingDepsError) as caught:
        await agent.run('{"operation": "list"}')
    assert 'TodoDB' in str(caught.value)
    assert 'injector.provide' in str(caught.value)
    assert caught.value.details['deps_type'] == 'TodoDeps'
    async with Client(create_mcp_server()) as client:  # pyright: ignore[reportArgumentType]
        result = await client.call_tool('todo_list', {})
    assert result.is_error
    assert 'MissingDepsError' in result.content[0].model_dump()['text']


async def test_mcp_builds_deps_through_the_injector() -> None:
    # Before the fix: AttributeError: 'NoneType' object has no attribute 'db'.
    create_todo()
    async with Client(create_mcp_server()) as client:  # pyright: ignore[reportArgumentType]
        added = await client.call_tool('todo_add', {'title': 'x'})
        missing = await client.call_tool('todo_complete', {})
    assert not added.is_error, added.content
    assert added.structured_content == {'result': [{'id': 1, 'title': 'x', 'done': False}]}
    assert missing.is_error
    assert "field 'id': Field required" in missing.content[0].model_dump()['text']


class _KV(BaseOperationInput):
    operation: Literal['get', 'put']
    key: str
    value: str | None = None


async def _kv_get(key: str) -> str:
    return f'v:{key}'


async def _kv_put(key: str, value: str) -> str:
    return f'put {key}={value}'


async def test_an_llm_missing_an_operations_field_is_asked_again() -> None:
    # Through the manager tool (the explicit capability form with a real model), an operation's own
    # requirement fails like any other argument: a retry listing the field, not the end of the run.
    create_agentool('kv', _KV, RoutingConfig(operation_map={'get': '_kv_get', 'put': '_kv_put'}), [_kv_get, _kv_put])
    returns: list[ToolReturnPart] = []

    def llm(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        returned = [p for p in messages[-1].parts if isinstance(p, ToolReturnPart)]
        returns.extend(returned)
        if not returned:
            return ModelResponse(parts=[ToolCallPart(MANAGER_TOOL_NAME, {'operation': 'put', 'key': 'k'})])
        if returned[0].outcome == 'retried':
            args = {'operation': 'put', 'key': 'k', 'value': 'x'}
            return ModelResponse(parts=[ToolCallPart(MANAGER_TOOL_NAME, args)])
        return ModelResponse(parts=[TextPart(str(returned[0].content))])

    agent = Agent(FunctionModel(llm), capabilities=[AgenToolCapability('kv')])
    result = await agent.run('store x under k')
    assert result.output == 'put k=x'
    assert [r.outcome for r in returns] == ['retried', 'success']
    assert "operation 'put': field 'value': Field required" in str(returns[0].content)
    # The deterministic model still ends the run with the typed error (it checks before calling).
    with pytest.raises(InputValidationError, match="field 'value': Field required"):
        await Agent('agentool:kv', capabilities=[AgenToolCapability('kv')]).run('{"operation": "put", "key": "k"}')


async def test_a_model_instance_is_the_input_its_caller_set_not_its_defaults() -> None:
    # The guide's injector takes a model (`injector.run('storage', test_input)`); the defaults it
    # fills for fields an operation does not use (`value` for get) must not count as given.
    create_agentool('kv', _KV, RoutingConfig(operation_map={'get': '_kv_get', 'put': '_kv_put'}), [_kv_get, _kv_put])
    injector = get_injector()
    get = _KV(operation='get', key='k')
    assert (await injector.run('kv', get)).output == 'v:k'
    assert await injector.call('kv', get) == 'v:k'
    assert await injector.call('kv', _KV(operation='put', key='k', value='x')) == 'put k=x'
    with pytest.raises(InputValidationError, match="operation 'get' does not use it"):
        await injector.call('kv', _KV(operation='get', key='k', value='x'))


class _Circle(BaseModel):
    kind: Literal['circle'] = 'circle'  # a discriminator with a default: set or not, it must be sent
    r: int


class _Square(BaseModel):
    kind: Literal['square'] = 'square'
    side: int


class _ShapeInput(BaseOperationInput):
    operation: Literal['area']
    shape: Annotated[_Circle | _Square, Field(discriminator='kind')]
    request_id: str = Field(default_factory=lambda: uuid4().hex)


async def _area(shape: _Circle | _Square, request_id: str) -> str:
    return f'{type(shape).__name__} {request_id}'


async def test_a_model_input_keeps_nested_models_and_factory_values_whole() -> None:
    create_agentool('shapes', _ShapeInput, RoutingConfig(operation_map={'area': '_area'}), [_area])
    given = _ShapeInput(operation='area', shape=_Square(side=2))
    assert await get_injector().call('shapes', given) == f'_Square {given.request_id}'  # the caller's id, not a new one


class _Div(BaseOperationInput):
    operation: Literal['div']
    a: float
    b: float


async def _div(a: float, b: float) -> float:
    return a / b if b else (float('inf') if a else float('nan'))


async def test_mcp_reports_an_output_json_cannot_carry_as_an_error_result() -> None:
    # Before: the server sent `null` for the number and the MCP client raised a RuntimeError.
    create_agentool('calc', _Div, RoutingConfig(operation_map={'div': '_div'}), [_div])
    async with Client(create_mcp_server()) as client:  # pyright: ignore[reportArgumentType]
        fine = await client.call_tool('calc_div', {'a': 1, 'b': 2})
        infinite = await client.call_tool('calc_div', {'a': 1, 'b': 0})
        nan = await client.call_tool('calc_div', {'a': 0, 'b': 0})
    assert fine.structured_content == {'result': 0.5}
    for bad in (infinite, nan):
        assert bad.is_error
        text = bad.content[0].model_dump()['text']
        assert "OutputError: agentool 'calc', operation 'div': the output holds an infinite or NaN number" in text


class _Blob(BaseOperationInput):
    operation: Literal['get']


async def _blob() -> Any:
    return object()  # no JSON for it at all


async def test_mcp_names_an_output_that_cannot_be_serialised_as_such() -> None:
    # It used to be reported as an infinite or NaN number.
    create_agentool('blob', _Blob, RoutingConfig(operation_map={'get': '_blob'}), [_blob])
    async with Client(create_mcp_server()) as client:  # pyright: ignore[reportArgumentType]
        result = await client.call_tool('blob_get', {})
    assert result.is_error
    text = result.content[0].model_dump()['text']
    assert "OutputError: agentool 'blob', operation 'get': the output cannot be serialised to JSON" in text


class StrictInput(BaseOperationInput):
    operation: Literal['go']
    at: datetime = Field(strict=True)
    id: UUID = Field(strict=True)


async def strict_go(at: datetime, id: UUID) -> str:
    return f'{at.isoformat()} {id}'


STRICT_ARGS = {'at': '2024-01-01T00:00:00Z', 'id': '00000000-0000-0000-0000-000000000001'}


STRICT_OUTPUT = '2024-01-01T00:00:00+00:00 00000000-0000-0000-0000-000000000001'


async def test_a_strict_field_is_accepted_by_call_from_json_text(injector: AgenToolInjector) -> None:
    create_agentool('strict', StrictInput, RoutingConfig(operation_map={'go': 'strict_go'}), [strict_go])
    assert await injector.call('strict', {'operation': 'go', **STRICT_ARGS}) == STRICT_OUTPUT


async def test_a_strict_field_is_accepted_by_run_as_by_call(injector: AgenToolInjector) -> None:
    create_agentool('strict', StrictInput, RoutingConfig(operation_map={'go': 'strict_go'}), [strict_go])
    agent = injector.get('strict')
    assert isinstance(agent, AgenToolAgent)
    for _ in range(2):  # through the graph, then lean
        assert (await injector.run('strict', {'operation': 'go', **STRICT_ARGS})).output == STRICT_OUTPUT
    assert agent.lean_runs == 1


async def test_mcp_accepts_the_arguments_call_accepts_for_strict_fields(injector: AgenToolInjector) -> None:
    create_agentool('strict', StrictInput, RoutingConfig(operation_map={'go': 'strict_go'}), [strict_go])
    async with Client(create_mcp_server()) as client:  # pyright: ignore[reportArgumentType]
        result = await client.call_tool('strict_go', STRICT_ARGS)
    assert not result.is_error, result.content


async def test_lean_and_graph_runs_of_a_strict_schema_are_indistinguishable(injector: AgenToolInjector) -> None:
    agent = create_agentool('strict', StrictInput, RoutingConfig(operation_map={'go': 'strict_go'}), [strict_go])
    assert isinstance(agent, AgenToolAgent)
    prompt = json.dumps({'operation': 'go', **STRICT_ARGS})
    await agent.run(prompt)  # the first run shows a lean run its shape
    lean = await differential(agent, prompt)
    assert lean.result is not None
    assert lean.result.output == STRICT_OUTPUT
    # The manager tool call carries the validated values (a strict field refuses their text in Python mode).
    call = lean.result.all_messages()[1].parts[0]
    assert isinstance(call, ToolCallPart)
    assert call.args_as_dict() == {'operation': 'go', 'at': datetime(2024, 1, 1, tzinfo=UTC), 'id': UUID(int=1)}
    with pytest.raises(InputValidationError):  # and the text a strict field refuses is still refused
        await agent.run(json.dumps({'operation': 'go', 'at': 5, 'id': STRICT_ARGS['id']}))
