"""Hostile input on every surface, fuzzed: each answer is a result or a typed `AgenToolError`, bounded.

Families: megabyte names (agentool, operation, field), control characters, non-finite numbers,
huge integers, deep nesting, oversized payloads. Surfaces: `agent.run` (lean and graph), the
model string `Agent('agentool:NAME')`, `injector.call`, the CLI's `call` (its `main()`, in
process), an in-memory MCP client, the LLM toolset and the test double. Bounds: an error
message at most 2,000 characters, the CLI's whole output for a failed call under 2,000, an MCP
error reply (message and data, or a failed call's text) under 4,000.

Short by default (the suite runs four times in CI); `AGENTOOL_FUZZ=1` (`make fuzz`) runs many more
examples with bigger payloads. Run with `-s` to see, per surface, the cases, the refusals, the
longest error text and the slowest refusal.
"""

from __future__ import annotations

import builtins
import io
import json
import os
import re
import time
from collections.abc import Awaitable, Callable, Iterator
from contextlib import redirect_stderr, redirect_stdout
from dataclasses import dataclass, field
from typing import Any, Literal

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from mcp import Client, MCPError
from pydantic import JsonValue
from pydantic_ai import Agent
from pydantic_ai.messages import ModelMessage, ModelResponse, TextPart, ToolCallPart, ToolReturnPart
from pydantic_ai.models.function import AgentInfo, FunctionModel
from pydantic_core import from_json

from agentool import AgenToolError, AgenToolToolset, BaseOperationInput, RoutingConfig, create_agentool, get_injector
from agentool.cli import main
from agentool.mcp import create_mcp_server
from agentool.testing import AgentDouble, Call, Output, Script

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


async def answer(surface: str, case: Case, attempt: Callable[[], Awaitable[Any]]) -> None:
    """Run `attempt`: a result passes, an `AgenToolError` must be bounded, anything else fails the test."""
    started = time.perf_counter()
    try:
        await attempt()
    except AgenToolError as error:
        refused: AgenToolError | None = error
    else:
        refused = None
    if refused is None:
        seen(surface, case)
        return
    message = str(refused)
    seen(surface, case, text=message, started=started)
    assert len(message) <= MESSAGE_BOUND, f'{surface}: {type(refused).__name__} of {len(message)} chars for {case!r}'


FUZZ = settings(
    max_examples=EXAMPLES,
    deadline=None,
    database=None,
    derandomize=not HEAVY,  # the short run is the same every time; `make fuzz` explores
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow, HealthCheck.data_too_large],
)

# --- the surfaces -------------------------------------------------------------------------------------------


@every_family
@FUZZ
@given(data=st.data())
async def test_agent_run_lean(family: str, data: st.DataObject) -> None:
    case = data.draw(cases(family))
    await answer('agent.run (lean)', case, lambda: get_injector().get('hostile').run(case.prompt))


@every_family
@FUZZ
@given(data=st.data())
async def test_agent_run_graph(family: str, data: st.DataObject) -> None:
    case = data.draw(cases(family))
    await answer('agent.run (graph)', case, lambda: get_injector().get('hostile_graph').run(case.prompt))


@every_family
@FUZZ
@given(data=st.data())
async def test_model_string(family: str, data: st.DataObject) -> None:
    case = data.draw(cases(family))

    async def attempt() -> Any:
        return await Agent(f'agentool:{case.name}', output_type=str).run(case.prompt)

    await answer('Agent("agentool:NAME")', case, attempt)


@every_family
@FUZZ
@given(data=st.data())
async def test_injector_call(family: str, data: st.DataObject) -> None:
    case = data.draw(cases(family))
    await answer('injector.call', case, lambda: get_injector().call(case.name, case.prompt))


FOREIGN = re.compile(r'^agentool: error: (\w+): ')
"""How the CLI reports an exception that is not an agentool error: by its class name."""


@every_family
@FUZZ
@given(data=st.data())
def test_cli_call(family: str, data: st.DataObject) -> None:
    case = data.draw(cases(family))
    out, err = io.StringIO(), io.StringIO()
    started = time.perf_counter()
    with redirect_stdout(out), redirect_stderr(err):
        status = main(['call', case.name, case.prompt])
    if status == 0:
        seen('CLI call', case)
        return
    text = out.getvalue() + err.getvalue()
    seen('CLI call', case, text=text, started=started)
    assert status == 1, f'exit status {status} for {case!r}: {text[:500]}'
    foreign = FOREIGN.match(err.getvalue())
    assert not (foreign and isinstance(getattr(builtins, foreign.group(1), None), type)), text[:500]
    assert len(text) < CLI_BOUND, f'CLI output of {len(text)} chars for {case!r}'


@every_family
@FUZZ
@given(data=st.data(), served=st.sampled_from(NAMES))
async def test_mcp_in_memory(family: str, data: st.DataObject, served: str) -> None:
    case = data.draw(cases(family))
    arguments = case.args
    if arguments is None:  # no JSON client could send it (NaN, too deep for the client, ...)
        return
    tool = case.tool() if case.name != 'hostile' else case.tool(served)
    started = time.perf_counter()
    async with Client(create_mcp_server()) as client:  # pyright: ignore[reportArgumentType]
        try:
            result = await client.call_tool(tool, arguments)
        except MCPError as error:
            reply = error.error.message + json.dumps(error.error.data, ensure_ascii=False)
            seen('MCP', case, text=reply, started=started)
            assert len(reply) < MCP_BOUND, f'MCP error reply of {len(reply)} chars for {case!r}'
            return
    if not result.is_error:
        seen('MCP', case)
        return
    reply = ''.join(str(part.model_dump().get('text', '')) for part in result.content)
    seen('MCP', case, text=reply, started=started)
    assert len(reply) < MCP_BOUND, f'MCP failed-call text of {len(reply)} chars for {case!r}'


def _known_tool(case: Case) -> str:
    """The tool an LLM calls: one the toolset lists (pydantic-ai answers an unknown name itself)."""
    return case.tool('hostile') if case.operation in ('echo', 'count') else 'hostile_echo'


@every_family
@FUZZ
@given(data=st.data())
async def test_llm_toolset(family: str, data: st.DataObject) -> None:
    case = data.draw(cases(family))
    returned: list[Any] = []

    def llm(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        if len(messages) == 1:  # the tool call's arguments are JSON text, as a model sends them
            return ModelResponse(parts=[ToolCallPart(_known_tool(case), case.args_text)])
        returned.extend(part.content for part in messages[-1].parts if isinstance(part, ToolReturnPart))
        return ModelResponse(parts=[TextPart('done')])

    agent = Agent(FunctionModel(llm), toolsets=[AgenToolToolset(include=['hostile'])])
    started = time.perf_counter()
    await answer('LLM toolset', case, lambda: agent.run('go'))  # counts the run; its refusal is the retry below
    errors = [item for content in returned if isinstance(content, list) for item in content]  # pyright: ignore[reportUnknownVariableType]
    if not errors:  # the tool ran
        return
    messages = [str(error.get('msg', '')) if isinstance(error, dict) else str(error) for error in errors]  # pyright: ignore[reportUnknownMemberType,reportUnknownArgumentType,reportUnknownVariableType]
    seen('LLM toolset retries', case, text='\n'.join(messages), started=started)
    for message in messages:  # a refusal goes back to the model as a list of errors, each bounded
        assert len(message) <= MESSAGE_BOUND, f'toolset retry of {len(message)} chars for {case!r}'


@every_family
@FUZZ
@given(data=st.data())
async def test_test_double(family: str, data: st.DataObject) -> None:
    case = data.draw(cases(family))
    arguments = case.args
    if arguments is None:
        return
    agent = Agent('test', output_type=str, toolsets=[AgenToolToolset(include=['hostile'])])
    double = AgentDouble(Script(Call(_known_tool(case), arguments), Output('done')))

    async def attempt() -> Any:
        with agent.override(model=double):
            return await agent.run('go')

    await answer('test double', case, attempt)
