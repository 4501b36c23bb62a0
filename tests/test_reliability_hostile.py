"""Hostile input on every surface, fuzzed: each answer is a result or a typed `AgenToolError`, bounded.

Families: megabyte names (agentool, operation, field), control characters, non-finite numbers,
huge integers, deep nesting, oversized payloads. Surfaces: `agent.run` (lean and graph), the
model string `Agent('agentool:NAME')`, `injector.call`, the CLI's `call` (its `main()`, in
process), an in-memory MCP client, the LLM toolset (those from tests/surface_callers.py) and the
test double. Bounds: an error
message at most 2,000 characters, the CLI's whole output for a failed call under 2,000, an MCP
error reply (message and data, or a failed call's text) under 4,000.

The same typed error on each surface for a fixed list of bad inputs is tests/test_hostile_input.py.
Short by default (the suite runs four times in CI); `AGENTOOL_FUZZ=1` (`make fuzz`) runs many more
examples with bigger payloads. Run with `-s` to see, per surface, the cases, the refusals, the
longest error text and the slowest refusal.
"""

from __future__ import annotations

import json
import os
import time
from collections.abc import Awaitable, Callable, Iterator
from dataclasses import dataclass, field
from typing import Any, Literal

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from pydantic import JsonValue
from pydantic_ai import Agent
from pydantic_core import from_json

from agentool import AgenToolError, AgenToolToolset, BaseOperationInput, RoutingConfig, create_agentool
from agentool.testing import AgentDouble, Call, Output, Script
from tests.surface_callers import ARGS_SURFACES, TEXT_SURFACES, Outcome, Refused, llm_tool_call

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
