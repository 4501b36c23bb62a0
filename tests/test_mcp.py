"""The MCP server: tools listed with schemas and hints, called through an in-memory MCP client.

Last, the stdio transport's line limits: a line's size is checked before parsing and never buffered past the
limit (a 50 MB line was parsed before it was refused, peak 241 MB; a 120 MB line with no newline was buffered
whole); such a line is skipped as it arrives, answered with a JSON-RPC error, and the server goes on.
"""

from __future__ import annotations

import json
import logging
import subprocess
import sys
import threading
from collections.abc import Generator
from contextlib import contextmanager
from pathlib import Path
from typing import Any, Literal

import pytest

from tests.agentools import ROOT, python_env, run_python

pytest.importorskip('mcp')

from mcp import Client, MCPError, StdioServerParameters
from mcp.types import Tool

from agentool import BaseOperationInput, RoutingConfig, create_agentool
from agentool.errors import ConfigurationError, InvalidToolNameError, SelectorError, ServingError
from agentool.mcp import META_KEY, create_mcp_server, run_server, serve
from agentool.mcp_http import HttpOptions
from examples.calculator import create_calculator
from tests.mcp_asgi import INITIALIZE
from tests.notes_agentool import Notes, create_notes


@pytest.fixture(params=['auto', 'legacy'])
def mode(request: pytest.FixtureRequest) -> str:
    """`auto` dispatches in process; `legacy` runs the JSON-RPC handshake over memory streams."""
    return request.param


@pytest.fixture
def client(mode: str) -> Client:
    """A client (enter it with `async with`) of a server for `notes` and `calculator`."""
    create_notes()
    create_calculator()
    notes: Notes = {'k': 'v'}
    server = create_mcp_server(deps=lambda name: notes if name == 'notes' else None)
    return Client(server, mode=mode)  # pyright: ignore[reportArgumentType]


async def tools_by_name(client: Client) -> dict[str, Tool]:
    return {tool.name: tool for tool in (await client.list_tools()).tools}


async def test_one_tool_per_operation_with_hints_and_schemas(client: Client) -> None:
    async with client:
        tools = await tools_by_name(client)
        calculator = ['calculator_add', 'calculator_subtract', 'calculator_multiply', 'calculator_divide']
        # notes.old is deprecated, so not served by default
        assert list(tools) == [*calculator, 'notes_get', 'notes_put', 'notes_dump', 'notes_check']
        get, put = tools['notes_get'], tools['notes_put']
        hints = [
            (t.annotations.read_only_hint, t.annotations.destructive_hint, t.annotations.idempotent_hint)
            for t in (get, put)
            if t.annotations
        ]
        assert hints == [(True, False, True), (False, True, False)]  # (read only, destructive, idempotent)
        assert put.input_schema['required'] == ['key', 'text']
        assert list(put.input_schema['properties']) == ['key', 'text', 'copies']
        assert put.input_schema['properties']['text']['description'] == 'The note text.'
        assert put.output_schema == {
            'type': 'object',
            'properties': {'result': {'type': 'string'}},
            'required': ['result'],
        }
        assert tools['notes_dump'].output_schema is None  # its output may be truncated, so no schema can promise it
        assert put.description == 'Write a note.'
        assert put.meta is not None
        assert put.meta[META_KEY] == {
            'agentool': 'notes',
            'operation': 'put',
            'concurrent_safe': False,
            'max_output_chars': None,
            'tags': [],
            'deprecated': False,
        }


async def test_calls_return_text_and_structured_content(client: Client) -> None:
    async with client:
        result = await client.call_tool('calculator_divide', {'a': 1, 'b': 4})
        assert not result.is_error
        assert result.structured_content == {'result': 0.25}
        assert [block.model_dump()['text'] for block in result.content] == ['0.25']
        written = await client.call_tool('notes_put', {'key': 'n', 'text': 'ab', 'copies': 2})
        read = await client.call_tool('notes_get', {'key': 'n'})
        assert (written.structured_content, read.structured_content) == ({'result': 'stored n'}, {'result': 'abab'})


async def test_invalid_arguments_are_an_error_result_naming_the_field(client: Client) -> None:
    async with client:
        result = await client.call_tool('notes_put', {'key': 'n', 'copies': 0, 'operation': 'get'})
        assert result.is_error
        (block,) = result.content
        assert block.model_dump()['text'] == (
            "invalid arguments for tool 'notes_put' (agentool 'notes', operation 'put'): "
            "field 'operation': Extra inputs are not permitted; field 'text': Field required; "
            "field 'copies': Input should be greater than or equal to 1"
        )
        result = await client.call_tool('notes_put', {'key': 'n', 'text': 't', 'copies': 0})
        assert "field 'copies': Input should be greater than or equal to 1" in result.content[0].model_dump()['text']


async def test_a_tool_exception_is_an_error_result_and_is_logged(
    client: Client, caplog: pytest.LogCaptureFixture
) -> None:
    async with client:
        with caplog.at_level(logging.ERROR, logger='agentool.mcp'):
            result = await client.call_tool('calculator_divide', {'a': 1, 'b': 0})
        assert result.is_error
        assert result.content[0].model_dump()['text'] == (
            "tool 'calculator_divide' (agentool 'calculator', operation 'divide') failed: "
            'ZeroDivisionError: float division by zero'
        )
        (record,) = [r for r in caplog.records if r.name == 'agentool.mcp']
        assert record.exc_info is not None
        assert record.exc_info[0] is ZeroDivisionError


async def test_an_unknown_tool_is_a_protocol_error(client: Client) -> None:
    async with client:
        with pytest.raises(MCPError, match="unknown tool 'notes_old'"):
            await client.call_tool('notes_old', {'key': 'k'})


async def test_long_output_is_truncated_with_a_marker(client: Client) -> None:
    async with client:
        await client.call_tool('notes_put', {'key': 'long', 'text': 'x' * 50})
        result = await client.call_tool('notes_dump', {})
        text = result.content[0].model_dump()['text']
        assert text.startswith('{"k": "v", "long": "')
        assert text.endswith('(max_output_chars=20)]')
        assert '[... truncated: showing 20 of' in text
        assert result.structured_content is None


async def test_include_exclude_and_naming_options() -> None:
    create_notes()
    server = create_mcp_server(include=['notes.old', 'tag:reader'], exclude=['notes.get'], prefix='kb_', separator='-')
    async with Client(server) as client:
        tools = await tools_by_name(client)
        assert list(tools) == ['kb_notes-old']
        assert tools['kb_notes-old'].description == '(Deprecated) The old reader.'
        result = await client.call_tool('kb_notes-old', {'key': 'k'})
        assert result.structured_content == {'result': 'k'}
    with pytest.raises(SelectorError):
        create_mcp_server(include=['nots'])


@pytest.mark.parametrize(
    ('options', 'option'),
    [
        ({'name': 123}, 'name'),
        ({'name': None}, 'name'),
        ({'instructions': 5}, 'instructions'),
        ({'deps': 'x'}, 'deps'),
        ({'tracer': 'x'}, 'tracer'),
        ({'tracer': object()}, 'tracer'),
        ({'instructions': 1}, 'instructions'),
    ],
)
def test_bad_options_are_refused_at_construction_naming_the_option(options: dict[str, Any], option: str) -> None:
    create_notes()
    with pytest.raises(ConfigurationError, match=f'{option} must be') as caught:
        create_mcp_server(**options)
    assert caught.value.details['option'] == option
    assert caught.value.details['value'] == repr(options[option])


def test_a_prefix_making_invalid_tool_names_is_refused_at_construction() -> None:
    create_notes()
    with pytest.raises(InvalidToolNameError, match="tool name 'my tool notes_get'") as caught:
        create_mcp_server(include=['notes.get'], prefix='my tool ')
    assert caught.value.details['tool_name'] == 'my tool notes_get'


def _cannot_import(module: str, cause: str) -> tuple[dict[str, Any], type[Exception], str, dict[str, str]]:
    details = {'module': module, 'cause': cause}
    return {'modules': [module]}, ConfigurationError, f'cannot import module {module!r}: {cause}', details


HTTP_X = "http must be an HttpOptions or None; got 'x'"
STDIO = "http options only apply to transport='streamable-http'"
BOGUS = {'option': 'bogus', 'value': '1'}
PIGEON = {'option': 'transport', 'value': "'carrier-pigeon'", 'supported': ['stdio', 'streamable-http']}


@pytest.mark.parametrize(
    ('options', 'error', 'message', 'details'),
    [
        _cannot_import('no_such_module_xyz', 'ModuleNotFoundError'),
        _cannot_import('agentool_no_such_module_xyz', 'ModuleNotFoundError'),
        _cannot_import('', 'ValueError'),
        _cannot_import('.relative', 'TypeError'),
        (
            {'modules': 'json'},
            ConfigurationError,
            "modules must be a list of strings; got 'json'",
            {'option': 'modules', 'value': "'json'"},
        ),
        # refused before importing anything, listing the options it does take
        (
            {'modules': ['no_such_module_xyz'], 'bogus': 1},
            ConfigurationError,
            r"unknown option 'bogus'(?s:.*)tracer",
            BOGUS,
        ),
        ({'bogus': 1}, ConfigurationError, "unknown option 'bogus'", BOGUS),
        ({'name': 123}, ConfigurationError, 'name must be a string; got 123', {'option': 'name', 'value': '123'}),
        ({'transport': 'streamable-http', 'http': 'x'}, ServingError, HTTP_X, {'option': 'http', 'value': "'x'"}),
        (
            {'http': 'localhost'},
            ServingError,
            "http must be an HttpOptions or None; got 'localhost'",
            {'option': 'http', 'value': "'localhost'"},
        ),
        (
            {'transport': 'carrier-pigeon'},
            ConfigurationError,
            r"transport must be one of .*; got 'carrier-pigeon'",
            PIGEON,
        ),
        # HTTP options with the stdio transport would be silently ignored: refused, as the CLI refuses them.
        (
            {'transport': 'stdio', 'http': HttpOptions(port=0)},
            ServingError,
            STDIO,
            {'option': 'http', 'transport': 'stdio'},
        ),
    ],
)
def test_serve_refuses_bad_modules_options_and_transports_before_serving(
    options: dict[str, Any], error: type[Exception], message: str, details: dict[str, Any]
) -> None:
    with pytest.raises(error, match=message) as caught:
        serve(**options)
    assert caught.value.details == details  # pyright: ignore[reportAttributeAccessIssue]


def test_serve_refuses_a_module_that_raises_on_import(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    (tmp_path / 'raising_on_import.py').write_text('raise RuntimeError("bad at import")\n')
    monkeypatch.syspath_prepend(str(tmp_path))
    with pytest.raises(
        ConfigurationError, match="cannot import module 'raising_on_import': RuntimeError: bad at import"
    ):
        serve(modules=['raising_on_import'])


@pytest.mark.parametrize(
    ('options', 'error', 'message'),
    [
        ({'transport': 'stdio', 'http': HttpOptions()}, ServingError, 'only apply to'),
        ({'transport': 'carrier-pigeon'}, ConfigurationError, r"transport must be one of .*; got 'carrier-pigeon'"),
    ],
)
async def test_run_server_refuses_http_options_with_stdio_and_an_unknown_transport(
    options: dict[str, Any], error: type[Exception], message: str
) -> None:
    with pytest.raises(error, match=message):
        await run_server(create_mcp_server(), **options)


async def test_cli_serves_over_stdio(tmp_path: Path) -> None:
    args = ['-m', 'agentool', '--import', 'examples.calculator', 'mcp', '--include', 'calculator.add']
    env = {**python_env(), 'PYTHONDONTWRITEBYTECODE': '1'}
    params = StdioServerParameters(command=sys.executable, args=args, env=env, cwd=tmp_path)
    async with Client(params) as client:
        assert [tool.name for tool in (await client.list_tools()).tools] == ['calculator_add']
        result = await client.call_tool('calculator_add', {'a': 2, 'b': 3})
        assert result.structured_content == {'result': 5.0}
    assert not any(tmp_path.iterdir())  # noqa: ASYNC240


def test_agentool_imports_without_the_mcp_extra(tmp_path: Path) -> None:
    script = (
        'import sys\n'
        'class Block:\n'
        '    def find_spec(self, name, path=None, target=None):\n'
        "        if name == 'mcp' or name.startswith('mcp.'):\n"
        "            raise ImportError('blocked for the test')\n"
        'sys.meta_path.insert(0, Block())\n'
        'import agentool, agentool.mcp, agentool.toolset\n'
        'from agentool.errors import MissingExtraError\n'
        'try:\n'
        '    agentool.mcp.create_mcp_server()\n'
        'except MissingExtraError as error:\n'
        "    assert isinstance(error, ImportError) and error.details == {'extra': 'mcp'}, error.details\n"
        '    print(error)\n'
    )
    assert "needs the 'mcp' extra: pip install 'agentool[mcp]'" in run_python(script, cwd=tmp_path)


async def test_the_deps_function_is_asked_only_for_a_tool_that_takes_a_context() -> None:
    create_notes()
    asked: list[str] = []

    def failing(name: str) -> Notes:
        asked.append(name)
        raise RuntimeError('the store is down')

    async with Client(create_mcp_server(include=['notes'], deps=failing)) as client:
        plain = await client.call_tool('notes_old', {'key': 'k'})  # `old(key)` takes no context
        assert not plain.is_error
        assert plain.content[0].model_dump()['text'] == 'k'
        assert asked == []
        reading = await client.call_tool('notes_get', {'key': 'k'})
        assert reading.is_error
        assert 'RuntimeError: the store is down' in reading.content[0].model_dump()['text']
        assert asked == ['notes']


def test_a_deps_function_that_cannot_take_the_agentool_name_is_refused_when_the_server_is_built() -> None:
    create_notes()
    with pytest.raises(ConfigurationError, match=r'deps must be a function called as deps\(agentool\)') as caught:
        create_mcp_server(deps=lambda ctx, agentool: None)  # pyright: ignore[reportArgumentType]  # the toolset's form
    assert caught.value.details['option'] == 'deps'
    create_mcp_server(deps=lambda agentool: None)
    create_mcp_server(deps=lambda *args: None)


@pytest.mark.parametrize('limit', [0, -1, 'x', 1.5, True])
async def test_run_server_refuses_a_line_limit_that_is_not_a_positive_int(limit: Any) -> None:
    with pytest.raises(ServingError, match='max_line_bytes must be a positive int') as caught:
        await run_server(create_mcp_server(), transport='stdio', max_line_bytes=limit)
    assert caught.value.details['option'] == 'max_line_bytes'


HUGE = 30 * 1024 * 1024


@contextmanager
def _server(module: str = 'tests.todo_cli', cwd: Path = ROOT) -> Generator[subprocess.Popen[bytes]]:
    """`agentool mcp` over stdio, serving what `module` registers; killed on leaving."""
    pipe = subprocess.PIPE
    command = [sys.executable, '-m', 'agentool', '--import', module, 'mcp']
    with subprocess.Popen(command, cwd=cwd, stdin=pipe, stdout=pipe, stderr=pipe, env=python_env()) as server:
        try:
            yield server
        finally:
            server.kill()


def _send(server: subprocess.Popen[bytes], data: bytes) -> None:
    assert server.stdin is not None
    for start in range(0, len(data), 1 << 20):
        server.stdin.write(data[start : start + (1 << 20)])
    server.stdin.flush()


def _answer(server: subprocess.Popen[bytes]) -> dict[str, Any]:
    assert server.stdout is not None
    return json.loads(server.stdout.readline())


def _peak_kib(server: subprocess.Popen[bytes]) -> int:
    status = Path(f'/proc/{server.pid}/status').read_text()
    return int(next(line.split()[1] for line in status.splitlines() if line.startswith('VmHWM:')))


@pytest.mark.skipif(not Path('/proc/self/status').exists(), reason='reads the peak memory from /proc')
def test_an_oversized_line_is_refused_unparsed_and_the_server_goes_on() -> None:
    with _server() as server:
        _send(server, json.dumps(INITIALIZE).encode() + b'\n')
        assert _answer(server)['result']['serverInfo']['name'] == 'agentool'
        before = _peak_kib(server)
        _send(server, b'{"jsonrpc": "2.0", "id": 2, "method": "ping", "params": {"x": "' + b'a' * HUGE + b'"}}\n')
        refused = _answer(server)
        assert refused['id'] is None
        assert refused['error']['code'] == -32600
        assert 'is over the limit of 1048576 bytes' in refused['error']['message']
        assert refused['error']['data']['size'] > HUGE
        _send(server, b'{"jsonrpc": "2.0", "id": 3, "method": "ping"}\n')
        assert _answer(server) == {'jsonrpc': '2.0', 'id': 3, 'result': {}}
        assert _peak_kib(server) - before < 10 * 1024  # a 30 MB line held (or parsed) would show here


def test_an_endless_line_is_never_held_whole() -> None:
    with _server() as server:
        _send(server, b'{"jsonrpc": "2.0", "id": 2, "method": "ping", "params": "' + b'b' * HUGE)  # no newline
        assert server.stdin is not None
        server.stdin.close()  # end of input: the refusal comes, then the server ends
        refused = _answer(server)
        assert 'is over the limit' in refused['error']['message']
        assert server.wait(timeout=60) == 0


class PeekInput(BaseOperationInput):
    operation: Literal['peek']


def peek() -> str:
    return repr(sys.stdin.read())


def create_peeker() -> None:
    create_agentool('peeker', PeekInput, RoutingConfig(operation_map={'peek': 'peek'}), [peek])


def test_a_tool_reading_stdin_gets_nothing_of_the_protocol(tmp_path: Path) -> None:
    (tmp_path / 'peeker_module.py').write_text('from tests.test_mcp import create_peeker\n\ncreate_peeker()\n')
    messages = [
        INITIALIZE,
        {'jsonrpc': '2.0', 'method': 'notifications/initialized'},
        {'jsonrpc': '2.0', 'id': 2, 'method': 'tools/call', 'params': {'name': 'peeker_peek', 'arguments': {}}},
        {'jsonrpc': '2.0', 'id': 3, 'method': 'ping'},
    ]
    with _server('peeker_module', tmp_path) as server:
        watchdog = threading.Timer(60, server.kill)  # a stolen message would leave an answer missing
        watchdog.start()
        try:
            _send(server, b''.join(json.dumps(message).encode() + b'\n' for message in messages))
            answers = {answer['id']: answer for answer in (_answer(server) for _ in range(3))}
        finally:
            watchdog.cancel()
    assert answers[2]['result']['content'][0]['text'] == "''"  # the null device, not the client's messages
    assert answers[3] == {'jsonrpc': '2.0', 'id': 3, 'result': {}}


@pytest.mark.parametrize(
    ('line', 'code'),
    [(b'garbage', -32700), (b'{"jsonrpc": "2.0", "id": 5', -32700), (b'[1, 2]', -32600), (b'{"id": 7}', -32600)],
)
def test_a_line_that_is_not_a_message_is_answered_with_a_json_rpc_error(line: bytes, code: int) -> None:
    with _server() as server:
        _send(server, line + b'\n' + json.dumps(INITIALIZE).encode() + b'\n')
        refused = _answer(server)
        assert refused['id'] is None
        assert refused['error']['code'] == code
        assert 'not read' in refused['error']['message']
        assert _answer(server)['id'] == 1  # and the server goes on
