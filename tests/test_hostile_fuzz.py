"""Hostile input fuzzed on every surface: each answer is a result or a typed `AgenToolError`, bounded.

Families: megabyte names (agentool, operation, field), control characters, non-finite numbers,
huge integers, deep nesting, oversized payloads. Surfaces: `agent.run` (lean and graph), the
model string `Agent('agentool:NAME')`, `injector.call`, the CLI's `call` (its `main()`, in
process), an in-memory MCP client, the LLM toolset (those from tests/surface_callers.py) and the
test double. Bounds: an error message at most 2,000 characters, the CLI's whole output for a failed
call under 2,000, an MCP error reply (message and data, or a failed call's text) under 4,000.

Then the JSON boundary fuzzed for four input shapes (flat, nested, union, free): every prompt is a
typed output or an `AgenToolError`, a huge prompt is refused holding at most one copy of it, deep
nesting fails cleanly. Last, a payload is accepted by one surface if and only if it is accepted by
all: for every example agentool, hypothesis draws valid payloads, the invalid kinds of
`agentool.testing.strategies` and near misses (a field dropped, set to null, or one the operation
does not use added) and sends each through seven surfaces.

The same typed error on each surface for a fixed list of bad inputs is tests/test_hostile_input.py.
Short by default (the suite runs four times in CI); `AGENTOOL_FUZZ=1` (`make fuzz`) runs many more
examples with bigger payloads. Run with `-s` to see, per surface, the cases, the refusals, the
longest error text and the slowest refusal.
"""

from __future__ import annotations

import contextlib
import io
import json
import os
import time
import tracemalloc
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator
from dataclasses import dataclass, field
from datetime import date
from enum import StrEnum
from typing import Any, Literal

import anyio
import anyio.to_thread
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from mcp import Client, MCPError
from pydantic import BaseModel, Field, JsonValue, ValidationError
from pydantic_ai import Agent, RunContext
from pydantic_ai.models.test import TestModel
from pydantic_ai.toolsets import ToolsetTool
from pydantic_ai.usage import RunUsage
from pydantic_core import from_json

from agentool import (
    AgenToolError,
    AgenToolToolset,
    BaseOperationInput,
    InputTooLargeError,
    InvalidInputError,
    RoutingConfig,
    create_agentool,
    get_injector,
    get_registry,
    use_registry,
)
from agentool.cli import main
from agentool.core.manager import MANAGER_TOOL_NAME
from agentool.errors import DriftError
from agentool.mcp import create_mcp_server
from agentool.testing import AgentDouble, Call, Output, OutputFrom, Script
from agentool.testing.strategies import invalid_inputs, valid_inputs
from examples.calculator import create_calculator
from examples.sessions import create_sessions
from examples.storage import MEMORY, SQLiteStore, create_storage
from tests.surface_callers import ARGS_SURFACES, TEXT_SURFACES, Outcome, Refused, llm_tool_call
from tests.todo_agentool import create_todo

HEAVY = os.environ.get('AGENTOOL_FUZZ') == '1'
"""`make fuzz`: many more examples, bigger payloads, deeper nesting."""
EXAMPLES = 60 if HEAVY else 3
"""Examples per family and surface."""
MB = 1024 * 1024
LIMIT = 2 * MB
"""The hostile agentools' `max_input_bytes`: a megabyte operation name is parsed, a bigger payload refused."""
MESSAGE_BOUND = 2_000
CLI_BOUND = 2_000
MCP_BOUND = 4_000

# --- the agentools under attack ----------------------------------------------------------------------


class HostileInput(BaseOperationInput):
    operation: Literal['echo', 'count']
    text: str = ''
    n: int = 0
    x: float = 0.0
    data: JsonValue = None


def echo(text: str = '', n: int = 0, x: float = 0.0) -> str:
    """Answer with the sizes of what it got (never the values, which may be huge)."""
    return f'{len(text)} {n.bit_length()} {x!r}'


def count(data: JsonValue = None) -> str:
    """Answer with the kind of value it got (a deep value is never walked)."""
    return type(data).__name__


NAMES = ('hostile', 'hostile_graph')


@pytest.fixture(autouse=True)
def agentools() -> None:
    routes = RoutingConfig(operation_map={'echo': 'echo', 'count': 'count'})
    create_agentool('hostile', HostileInput, routes, [echo, count], output_type=str, max_input_bytes=LIMIT)
    create_agentool(
        'hostile_graph', HostileInput, routes, [echo, count], output_type=str, max_input_bytes=LIMIT, lean=False
    )


# --- the cases ---------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Case:
    """One hostile input: the agentool name a surface is given, the operation, and the fields as JSON text."""

    family: str
    name: str = 'hostile'
    operation: str = 'echo'
    body: str = ''
    """The fields (without the operation) as the inside of a JSON object: `"x": NaN`."""

    @property
    def prompt(self) -> str:
        operation = json.dumps(self.operation, ensure_ascii=False)
        return '{"operation": ' + operation + (', ' + self.body if self.body else '') + '}'

    @property
    def args_text(self) -> str:
        return '{' + self.body + '}'

    @property
    def args(self) -> dict[str, Any] | None:
        """The fields as a dict, for surfaces whose clients send JSON (`None`: no JSON client could send them)."""
        try:
            value = from_json(self.args_text)
        except ValueError:
            return None
        if not isinstance(value, dict) or _non_finite(value):  # a JSON client writes NaN as null
            return None
        return value  # pyright: ignore[reportUnknownVariableType]

    def tool(self, name: str | None = None) -> str:
        return f'{self.name if name is None else name}_{self.operation}'

    def _repr_pretty_(self, printer: Any, cycle: bool) -> None:  # hypothesis's report of a failing case
        printer.text(repr(self))

    def __repr__(self) -> str:  # a megabyte case stays readable in a failure report
        def cut(text: str) -> str:
            return repr(text) if len(text) <= 60 else f'{text[:40]!r}...({len(text)} chars)'

        return f'Case({self.family}, name={cut(self.name)}, operation={cut(self.operation)}, body={cut(self.body)})'


def _non_finite(value: Any) -> bool:
    pending = [value]
    while pending:
        item = pending.pop()
        if isinstance(item, float) and (item != item or item in (float('inf'), float('-inf'))):
            return True
        if isinstance(item, dict):
            pending.extend(item.values())  # pyright: ignore[reportUnknownArgumentType,reportUnknownMemberType]
        elif isinstance(item, list):
            pending.extend(item)  # pyright: ignore[reportUnknownArgumentType]
    return False


SIZES = [1_000, 100_000, MB, *([8 * MB] if HEAVY else [])]
CONTROL = st.characters(categories=['Cc', 'Cf', 'Zl', 'Zp']) | st.sampled_from(['\x00', '\r\n', '\n', '\t', '\x1b'])
WORDS = st.text(alphabet=st.characters(codec='utf-8', categories=['L', 'N']), min_size=1, max_size=6)


def _megabyte_names() -> st.SearchStrategy[Case]:
    sizes, chars = st.sampled_from(SIZES), st.sampled_from(['n', 'é', '😀', '\x00'])
    big = st.builds(lambda size, char: char * (size // len(char.encode())), sizes, chars)
    return st.one_of(
        big.map(lambda name: Case('megabyte name', name=name)),
        big.map(lambda name: Case('megabyte operation', operation=name)),
        big.map(lambda name: Case('megabyte field name', body=json.dumps(name, ensure_ascii=False) + ': 1')),
    )


def _control_characters() -> st.SearchStrategy[Case]:
    hostile = st.builds(lambda a, c, b: a + c + b, WORDS, CONTROL, WORDS)
    return st.one_of(
        hostile.map(lambda name: Case('control name', name=name)),
        hostile.map(lambda name: Case('control operation', operation=name)),
        hostile.map(lambda text: Case('control text', body='"text": ' + json.dumps(text))),
        hostile.map(lambda key: Case('control field name', body=json.dumps(key) + ': 1')),
        st.sampled_from(['ho\x00stile', 'hostile\n', 'hostile\r\nx', '\u202ehostile', 'hostile\x1b[2J']).map(
            lambda name: Case('control name', name=name)
        ),
    )


NUMBERS = ['NaN', 'Infinity', '-Infinity', '1e400', '-1e400', '1E999']


def _non_finite_numbers() -> st.SearchStrategy[Case]:
    fields = st.sampled_from(['x', 'n', 'text', 'data'])
    shapes = st.sampled_from(['{}', '[{}]', '{{"a": {}}}', '[1, [{}]]'])
    body = st.builds(
        lambda key, shape, number: f'"{key}": ' + shape.format(number), fields, shapes, st.sampled_from(NUMBERS)
    )
    return st.builds(Case, st.just('non-finite number'), body=body, operation=st.sampled_from(['echo', 'count']))


def _huge_integers() -> st.SearchStrategy[Case]:
    digits = st.sampled_from([19, 20, 400, 4_300, 4_301, 100_000, *([5_000_000] if HEAVY else [])])
    fields = st.sampled_from(['n', 'x', 'text', 'data'])
    body = st.builds(lambda key, k, sign: f'"{key}": {sign}1' + '0' * k, fields, digits, st.sampled_from(['', '-']))
    return st.builds(Case, st.just('huge integer'), body=body, operation=st.sampled_from(['echo', 'count']))


def _deep_nesting() -> st.SearchStrategy[Case]:
    depths = st.sampled_from([64, 1_000, 10_000, *([200_000] if HEAVY else [])])
    openers = st.sampled_from(['[', '{"a": '])
    fields = st.sampled_from(['data', 'text', 'n'])

    def nest(key: str, depth: int, opener: str) -> str:
        closer = ']' if opener == '[' else '}'
        return f'"{key}": ' + opener * depth + '1' + closer * depth

    body = st.builds(nest, fields, depths, openers)
    return st.builds(Case, st.just('deep nesting'), body=body, operation=st.sampled_from(['echo', 'count']))


def _oversized_payloads() -> st.SearchStrategy[Case]:
    sizes = st.sampled_from([LIMIT - 100, LIMIT + 1, *([2 * LIMIT, 40 * MB] if HEAVY else [])])
    body = st.builds(
        lambda size, char: '"text": "' + char * (size // len(char.encode())) + '"', sizes, st.sampled_from('yé')
    )
    return st.builds(Case, st.just('oversized payload'), body=body)


FAMILIES: dict[str, st.SearchStrategy[Case]] = {
    'megabyte names': _megabyte_names(),
    'control characters': _control_characters(),
    'non-finite numbers': _non_finite_numbers(),
    'huge integers': _huge_integers(),
    'deep nesting': _deep_nesting(),
    'oversized payloads': _oversized_payloads(),
}
"""Each surface is fuzzed per family, so every family reaches every surface."""


def cases(family: str) -> st.SearchStrategy[Case]:
    return FAMILIES[family]


every_family = pytest.mark.parametrize('family', list(FAMILIES))

# --- what every answer must be, and what was seen ----------------------------------------------------


@dataclass
class Seen:
    cases: int = 0
    refusals: int = 0
    longest: int = 0
    longest_case: str = ''
    slowest: float = 0.0
    slowest_case: str = ''
    families: dict[str, int] = field(default_factory=dict[str, int])


SEEN: dict[str, Seen] = {}


@pytest.fixture(scope='module', autouse=True)
def report() -> Iterator[None]:
    yield
    for surface, seen in SEEN.items():
        print(  # the fuzz counts, shown with `-s`
            f'\n{surface}: {seen.cases} cases ({seen.refusals} refused), longest error {seen.longest} chars '
            f'({seen.longest_case}), slowest refusal {seen.slowest:.3f} s ({seen.slowest_case}); '
            f'families {dict(sorted(seen.families.items()))}'
        )


def seen(surface: str, case: Case, *, text: str | None = None, started: float | None = None) -> None:
    """Count one answer: a refusal when `text` (the error as the caller gets it) is given."""
    record = SEEN.setdefault(surface, Seen())
    record.cases += 1
    record.families[case.family] = record.families.get(case.family, 0) + 1
    if text is None:
        return
    record.refusals += 1
    if len(text) > record.longest:
        record.longest, record.longest_case = len(text), repr(case)
    if started is not None and (elapsed := time.perf_counter() - started) > record.slowest:
        record.slowest, record.slowest_case = elapsed, repr(case)


FUZZ = settings(
    max_examples=EXAMPLES,
    deadline=None,
    database=None,
    derandomize=not HEAVY,  # the short run is the same every time; `make fuzz` explores
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow, HealthCheck.data_too_large],
)

# --- the surfaces (tests/surface_callers.py), each given a case ---------------------------------------------


def _known_tool(case: Case) -> str:
    """The tool an LLM calls: one the toolset lists (pydantic-ai answers an unknown name itself)."""
    return case.tool('hostile') if case.operation in ('echo', 'count') else 'hostile_echo'


async def _mcp(case: Case, data: st.DataObject) -> Outcome:
    if (arguments := case.args) is None:  # no JSON client could send it (NaN, too deep for the client, ...)
        return None
    name = case.name if case.name != 'hostile' else data.draw(st.sampled_from(NAMES))
    return await ARGS_SURFACES['MCP'](name, case.operation, arguments)


async def _test_double(case: Case, data: st.DataObject) -> Outcome:
    if (arguments := case.args) is None:
        return None
    agent = Agent('test', output_type=str, toolsets=[AgenToolToolset(include=['hostile'])])
    double = AgentDouble(Script(Call(_known_tool(case), arguments), Output('done')))
    try:
        with agent.override(model=double):
            return (await agent.run('go')).output
    except AgenToolError as error:
        return Refused(type(error).__name__, error.message, str(error))


SURFACES: dict[str, Callable[[Case, st.DataObject], Awaitable[Outcome]]] = {
    'agent.run (lean)': lambda case, data: TEXT_SURFACES['agent.run']('hostile', case.prompt),
    'agent.run (graph)': lambda case, data: TEXT_SURFACES['agent.run']('hostile_graph', case.prompt),
    'Agent("agentool:NAME")': lambda case, data: TEXT_SURFACES['model string'](case.name, case.prompt),
    'injector.call': lambda case, data: TEXT_SURFACES['injector.call'](case.name, case.prompt),
    'CLI call': lambda case, data: TEXT_SURFACES['CLI call'](case.name, case.prompt),
    'MCP': _mcp,
    'LLM toolset': lambda case, data: llm_tool_call(_known_tool(case), case.args_text),
    'test double': _test_double,
}
"""Each surface given a case; `None` when the case cannot be put to it (MCP and the double send JSON)."""
BOUNDS = {'CLI call': CLI_BOUND, 'MCP': MCP_BOUND}


@pytest.mark.parametrize('surface', list(SURFACES))
@every_family
@FUZZ
@given(data=st.data())
async def test_every_answer_is_a_result_or_a_bounded_typed_refusal(
    surface: str, family: str, data: st.DataObject
) -> None:
    case = data.draw(cases(family))
    started = time.perf_counter()
    got = await SURFACES[surface](case, data)  # anything but an agentool error fails the test
    if not isinstance(got, Refused):
        seen(surface, case)
        return
    seen(surface, case, text=got.text, started=started)
    if got.errors is not None:  # a toolset refusal goes back to the model as a list of errors, each bounded
        for error in got.errors:
            assert len(str(error.get('msg', ''))) <= MESSAGE_BOUND, f'{surface}: retry {error!r:.300} for {case!r}'
    else:
        bound = BOUNDS.get(surface, MESSAGE_BOUND)
        assert len(got.text) <= bound, f'{surface}: {got.kind} of {len(got.text)} chars for {case!r}'


BIG = (50 if HEAVY else 10) * 1024 * 1024
DEEP = 100_000 if HEAVY else 10_000


class Flat(BaseOperationInput):
    operation: Literal['echo', 'count']
    text: str = ''
    n: int = 0


class Address(BaseModel):
    street: str
    zip: str = Field(pattern=r'^\d{5}$')


class Nested(BaseOperationInput):
    operation: Literal['echo']
    address: Address
    tags: list[str] = Field(default_factory=list[str])
    when: date | None = None


class Color(StrEnum):
    RED = 'red'
    BLUE = 'blue'


class UnionInput(BaseOperationInput):
    operation: Literal['echo', 'count']
    value: int | str | list[int] | dict[str, float] = 0
    color: Color = Color.RED


class FreeOp(BaseModel):
    operation: str
    payload: Any = None


async def echo_fields(**kwargs: Any) -> str:
    return json.dumps(kwargs, default=str)


async def count_fields(**kwargs: Any) -> int:
    return len(kwargs)


SHAPES: dict[str, tuple[type[BaseModel], dict[str, Any]]] = {
    'flat': (
        Flat,
        {'echo': ('echo_fields', lambda x: x.model_dump()), 'count': ('count_fields', lambda x: x.model_dump())},
    ),
    'nested': (Nested, {'echo': ('echo_fields', lambda x: x.model_dump())}),
    'union': (
        UnionInput,
        {'echo': ('echo_fields', lambda x: x.model_dump()), 'count': ('count_fields', lambda x: x.model_dump())},
    ),
    'free': (FreeOp, {'echo': ('echo_fields', lambda x: x.model_dump())}),
}


def _agents() -> dict[str, Agent[Any, Any]]:
    return {
        name: create_agentool(
            name, schema, RoutingConfig(operation_map=routes), [echo_fields, count_fields], output_type=str
        )
        for name, (schema, routes) in SHAPES.items()
    }


# Any code point, lone surrogates (which no UTF-8 text can carry) made common.
characters = st.characters(exclude_categories=()) | st.sampled_from(['\ud800', '\udfff', 'é', '😀', '\x00'])
texts = st.text(alphabet=characters, max_size=20)
json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | texts,
    lambda children: st.lists(children, max_size=4) | st.dictionaries(st.text(max_size=8), children, max_size=4),
    max_leaves=20,
)
field_names = st.sampled_from(['operation', 'text', 'n', 'address', 'tags', 'when', 'value', 'color', 'payload', 'x'])
operations = st.sampled_from(['echo', 'count', 'nope', '', 'ECHO']) | st.text(max_size=5)
objects = st.dictionaries(field_names, json_values, max_size=6).flatmap(
    lambda d: st.just(d) | operations.map(lambda op: {**d, 'operation': op})
)
prompts = (
    st.text(alphabet=characters, max_size=60)
    | json_values.map(json.dumps)
    | objects.map(json.dumps)
    | objects.map(lambda d: json.dumps(d, ensure_ascii=False))
    | objects.map(lambda d: json.dumps(d)[:-1])  # truncated JSON
)


async def _run(agent: Agent[Any, Any], prompt: str) -> None:
    try:
        result = await agent.run(prompt)
    except AgenToolError:
        return
    assert isinstance(result.output, str)


async def _call(name: str, prompt: str) -> None:
    """The direct path (no agent graph) must hold the same line."""
    try:
        output = await get_injector().call(name, prompt)
    except AgenToolError:
        return
    assert isinstance(output, str)


@settings(
    max_examples=3_000 if HEAVY else 150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(prompt=prompts, shape=st.sampled_from(sorted(SHAPES)))
async def test_any_prompt_is_an_output_or_a_typed_error(prompt: str, shape: str) -> None:
    with use_registry():
        agents = _agents()
        await _run(agents[shape], prompt)
        await _call(shape, prompt)


@pytest.mark.parametrize('text', ['x', 'é'])
async def test_refusing_a_huge_prompt_holds_at_most_one_copy_of_it(text: str) -> None:
    """Memory stays bounded by the input: an ASCII prompt is measured in place, other text encoded once."""
    agent = _agents()['flat']
    prompt = json.dumps({'operation': 'echo', 'text': text * BIG}, ensure_ascii=False)
    await _run(agent, '{}')  # first-run allocations (lazy imports, caches) are not the prompt's
    tracemalloc.start()
    try:
        with pytest.raises(InputTooLargeError):
            await agent.run(prompt)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    copy = 0 if prompt.isascii() else len(prompt.encode())
    assert peak < copy + 1024 * 1024


async def test_ten_megabyte_string_within_a_raised_limit_is_handled() -> None:
    agent = create_agentool(
        'big',
        Flat,
        RoutingConfig(operation_map={'echo': 'count_fields', 'count': 'count_fields'}),
        [count_fields],
        max_input_bytes=2 * BIG,
    )
    prompt = json.dumps({'operation': 'echo', 'text': 'x' * BIG})
    assert (await agent.run(prompt)).output == 0


@pytest.mark.parametrize('shape', sorted(SHAPES))
@pytest.mark.parametrize('opener', ['[', '{"a":'])
async def test_ten_thousand_deep_nesting_fails_cleanly(shape: str, opener: str) -> None:
    agent = _agents()[shape]
    closer = ']' if opener == '[' else '}'
    field = 'payload' if shape == 'free' else 'text'
    prompt = '{"operation": "echo", "' + field + '": ' + opener * DEEP + '1' + closer * DEEP + '}'
    with pytest.raises(InvalidInputError):
        await agent.run(prompt)


# Sized for `make test`; `make fuzz` (AGENTOOL_FUZZ=1) runs ten times as many.
PAYLOADS = settings(
    max_examples=500 if os.environ.get('AGENTOOL_FUZZ') == '1' else 50,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much],
)
CREATE: dict[str, Callable[[], Any]] = {
    'calculator': lambda: create_calculator(replace=True),
    'storage': lambda: create_storage(replace=True),
    'sessions': lambda: (create_storage(replace=True), create_sessions(replace=True)),
    'todo': lambda: create_todo(),
}
PROPERTY_SURFACES = ('agent.run', 'model string', 'injector.call', 'cli', 'mcp', 'toolset', 'double')
_INPUT_ERRORS = ('invalid input for agentool', 'input to agentool', 'has no operation')
_NOISE: tuple[Any, ...] = (None, 'x', 0, 1.5, True, [], {'k': 1})


@pytest.fixture
async def fresh_store() -> AsyncIterator[None]:
    store = SQLiteStore(MEMORY)
    get_injector().provide(SQLiteStore, instance=store, replace=True)
    yield
    await store.aclose()


def payloads(name: str) -> st.SearchStrategy[dict[str, Any]]:
    """Valid inputs, invalid ones, and near misses of valid ones, all JSON objects."""
    valid = valid_inputs(name)
    kinds = ('unknown_operation', 'missing_field', 'wrong_type', 'unknown_field')
    invalid = invalid_inputs(name, kinds=kinds).map(json.loads)
    keys = st.deferred(lambda: st.sampled_from(sorted(get_registry().get_manager(name).input_schema.model_fields)))
    dropped = st.tuples(valid, keys).map(lambda pair: {k: v for k, v in pair[0].items() if k != pair[1]})
    changed = st.tuples(valid, keys, st.sampled_from(_NOISE)).map(lambda t: {**t[0], t[1]: t[2]})
    return st.one_of(valid, invalid, dropped, changed)


@dataclass(frozen=True)
class Surfaces:
    """What the surfaces of one agentool need, built once per test."""

    name: str
    plain: Agent[Any, Any]
    server: Any
    tools: dict[str, ToolsetTool[Any]]

    @classmethod
    async def build(cls, name: str) -> Surfaces:
        output_type = get_registry().require(name).output_type
        plain = Agent(f'agentool:{name}', output_type=str if output_type is None else output_type)
        toolset: AgenToolToolset[Any] = AgenToolToolset()
        tools = await toolset.get_tools(RunContext[Any](deps=None, model=TestModel(), usage=RunUsage()))
        return cls(name=name, plain=plain, server=create_mcp_server(), tools=tools)


async def verdicts(surfaces: Surfaces, payload: dict[str, Any]) -> dict[str, bool]:
    """Whether each surface accepted `payload` for the agentool."""
    name = surfaces.name
    text = json.dumps(payload)
    operation = payload.get(get_registry().get_manager(name).operation_field)
    tool = f'{name}_{operation}' if isinstance(operation, str) else None
    agent = get_injector().get(name)
    arguments = {k: v for k, v in payload.items() if k != 'operation'}
    found: dict[str, bool] = {}
    found['agent.run'] = await _through(agent.run(text))
    found['model string'] = await _through(surfaces.plain.run(text))
    found['injector.call'] = await _through(get_injector().call(name, payload))
    found['cli'] = await anyio.to_thread.run_sync(_cli, name, text)
    found['mcp'] = await _mcp_accepts(surfaces.server, tool, arguments)
    found['toolset'] = _toolset(surfaces.tools, tool, arguments)
    found['double'] = await _double(agent, payload)
    return found


async def _through(call: Any) -> bool:
    try:
        await call
    except InvalidInputError:
        return False
    except Exception:  # the tool's own failure: the input got through
        return True
    return True


def _cli(name: str, text: str) -> bool:
    err = io.StringIO()
    with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(err):
        status = main(['call', name, text])
    return status == 0 or not any(marker in err.getvalue() for marker in _INPUT_ERRORS)


async def _mcp_accepts(server: Any, tool: str | None, arguments: dict[str, Any]) -> bool:
    async with Client(server) as client:
        try:
            result = await client.call_tool(tool or 'none', arguments)
        except MCPError:  # no such tool: the operation is unknown
            return False
        except RuntimeError as error:  # the client refused the tool's *output* (say infinity): the input got through
            if 'structured content' not in str(error):
                raise
            return True
    text = result.content[0].model_dump().get('text', '') if result.content else ''
    return not (result.is_error and str(text).startswith('invalid arguments'))


def _toolset(tools: dict[str, ToolsetTool[Any]], tool: str | None, arguments: dict[str, Any]) -> bool:
    if tool not in tools:
        return False
    try:
        tools[tool].args_validator.validate_python(arguments)
    except ValidationError:
        return False
    return True


async def _double(agent: Any, payload: dict[str, Any]) -> bool:
    double = AgentDouble(
        Script(Call(MANAGER_TOOL_NAME, payload), OutputFrom(lambda run: run.result(MANAGER_TOOL_NAME)))
    )
    with agent.override(model=double):
        try:
            await agent.run('go')
        except InvalidInputError:
            return False
        except DriftError as error:  # the agent's own validation refused the call (or, later, the output)
            return error.details.get('tool') != MANAGER_TOOL_NAME
        except Exception:
            return True
    return True


@pytest.mark.usefixtures('fresh_store')
@pytest.mark.parametrize('name', sorted(CREATE))
def test_a_payload_is_accepted_by_one_surface_iff_by_all(name: str) -> None:
    CREATE[name]()
    surfaces = anyio.run(Surfaces.build, name)
    seen = {'accepted': 0, 'refused': 0}

    @PAYLOADS
    @given(payloads(name))
    def check(payload: dict[str, Any]) -> None:
        found = anyio.run(verdicts, surfaces, payload)
        assert len(set(found.values())) == 1, (payload, found)
        seen['accepted' if found['agent.run'] else 'refused'] += 1

    check()
    # Both sides of the property were exercised.
    assert seen['accepted'] > 0, seen
    assert seen['refused'] > 0, seen
