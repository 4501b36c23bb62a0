"""Infinite and NaN numbers never reach a tool through a free-form field, unless the field opts in.

The finding: `{"operation": "size", "value": NaN}` handed the tool `nan` through an `Any` field on
every surface, though `float` fields refuse it.
"""

from __future__ import annotations

import json
from typing import Annotated, Any, Literal

import pytest
from pydantic import JsonValue

from agentool import AllowInfNan, BaseOperationInput, RoutingConfig, create_agentool
from agentool.core.injector import AgenToolInjector
from agentool.errors import InputValidationError
from agentool.mcp_http import HttpOptions
from tests.mcp_asgi import open_session, running, send


class SizeInput(BaseOperationInput):
    operation: Literal['size']
    value: Any = None
    data: dict[str, JsonValue] | None = None
    items: list[Any] | None = None
    raw: Annotated[Any, AllowInfNan()] = None


async def size(value: Any = None, data: Any = None, items: Any = None, raw: Any = None) -> str:
    return repr((value, data, items, raw))


@pytest.fixture(autouse=True)
def sizer(injector: AgenToolInjector) -> None:
    """The `sizer` agentool, in this test's own registry and injector (conftest's)."""
    create_agentool('sizer', SizeInput, RoutingConfig(operation_map={'size': 'size'}), [size])


HOSTILE = [
    ('{"operation": "size", "value": NaN}', ['value'], 'nan'),
    ('{"operation": "size", "value": -Infinity}', ['value'], '-inf'),
    ('{"operation": "size", "data": {"a": [1, {"b": Infinity}]}}', ['data', 'a', 1, 'b'], 'inf'),
    ('{"operation": "size", "items": [0, NaN]}', ['items', 1], 'nan'),
]


@pytest.mark.parametrize(('prompt', 'loc', 'shown'), HOSTILE)
async def test_injector_call_and_agent_run_refuse_non_finite_numbers(
    injector: AgenToolInjector, prompt: str, loc: list[Any], shown: str
) -> None:
    for attempt in (lambda: injector.call('sizer', prompt), lambda: injector.get('sizer').run(prompt)):
        with pytest.raises(InputValidationError) as raised:
            await attempt()
        assert [(e['type'], e['loc'], e['input']) for e in raised.value.errors] == [('finite_number', loc, shown)]
        json.dumps(raised.value.details, allow_nan=False)  # the error itself is plain JSON


async def test_a_parsed_dict_is_checked_too(injector: AgenToolInjector) -> None:
    with pytest.raises(InputValidationError, match='finite number'):
        await injector.call('sizer', {'operation': 'size', 'value': [float('nan')]})


async def test_mcp_refuses_non_finite_numbers(injector: AgenToolInjector) -> None:
    # Raw JSON, as a client sends it: an MCP client library would turn NaN into null first.
    client = ('127.0.0.1', 40001)
    async with running(HttpOptions()) as app:
        session = await open_session(app, client)
        answers: dict[str, dict[str, Any]] = {}
        for value in ('NaN', 'Infinity', '1.5'):
            body = (
                '{"jsonrpc": "2.0", "id": 7, "method": "tools/call", '
                f'"params": {{"name": "sizer_size", "arguments": {{"value": [{value}]}}}}}}'
            )
            answers[value] = (await send(app, client, raw=body.encode(), session=session)).rpc()['result']
    for value in ('NaN', 'Infinity'):
        assert answers[value]['isError'] is True
        assert 'Input should be a finite number' in answers[value]['content'][0]['text']
    assert answers['1.5']['isError'] is False


async def test_a_field_that_opts_in_takes_them(injector: AgenToolInjector) -> None:
    assert await injector.call('sizer', '{"operation": "size", "raw": NaN}') == '(None, None, None, nan)'
    assert SizeInput.__agentool_free_fields__ == ('value', 'data', 'items')


async def test_finite_numbers_and_other_values_pass(injector: AgenToolInjector) -> None:
    prompt = '{"operation": "size", "value": {"x": [1.5, "NaN", null, true]}, "data": {"n": 1e308}}'
    assert await injector.call('sizer', prompt) == "({'x': [1.5, 'NaN', None, True]}, {'n': 1e+308}, None, None)"


def test_a_deeply_nested_value_is_walked_without_recursion() -> None:
    deep: Any = float('nan')
    for _ in range(5000):
        deep = [deep]
    with pytest.raises(Exception, match='finite number'):
        SizeInput.model_validate({'operation': 'size', 'value': deep})
