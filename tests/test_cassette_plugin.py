"""The pytest plugin's cassette option, marker and fixtures: record once, replay in CI by default."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from pydantic_ai import Agent
from pydantic_ai.messages import ModelMessage, ModelResponse, TextPart
from pydantic_ai.models.function import AgentInfo, FunctionModel

pytest_plugins = ('pytester',)

INI = '[pytest]\nasyncio_default_fixture_loop_scope = function\nasyncio_mode = auto\n'

# A "real" model that counts its calls in a file, so the outer test sees whether it was called.
RECORDED = """
from pathlib import Path
import pytest
from pydantic_ai import Agent
from pydantic_ai.messages import ModelResponse, TextPart
from pydantic_ai.models.function import FunctionModel

CALLS = Path(__file__).parent / 'calls.txt'

def real(messages, info):
    with CALLS.open('a') as stream:
        stream.write('x')
    return ModelResponse(parts=[TextPart('sunny')])

async def test_weather(agentool_cassette, agentool_cassette_path, agentool_record_mode):
    assert agentool_cassette_path == Path(__file__).parent / 'cassettes' / 'test_weather' / 'test_weather.json'
    agent = Agent(instructions='Weather.')
    result = await agent.run('Paris?', model=agentool_cassette(FunctionModel(real)))
    assert result.output == 'sunny'

@pytest.mark.agentool_cassette(mode='once', name='pinned')
async def test_marked(agentool_cassette, agentool_cassette_path, agentool_record_mode):
    assert agentool_cassette_path.name == 'pinned.json'
    assert agentool_record_mode in ('once', 'all')
    result = await Agent().run('Lyon?', model=agentool_cassette(FunctionModel(real), name='second'))
    assert result.output == 'sunny'
    assert agentool_cassette_path.with_name('pinned.second.json').exists()
"""


def _run(pytester: pytest.Pytester, *args: str) -> tuple[int, int, str]:
    result = pytester.runpytest_inprocess('-p', 'no:cacheprovider', *args)
    outcomes = result.parseoutcomes()
    calls = pytester.path / 'calls.txt'
    return outcomes.get('passed', 0), outcomes.get('failed', 0), calls.read_text() if calls.exists() else ''


def test_default_mode_is_none_then_once_records_then_none_replays(pytester: pytest.Pytester) -> None:
    # One pytester session per step: each costs seconds, so the steps share one test.
    pytester.makeini(INI + 'agentool_record_mode = none\n')
    pytester.makepyfile(test_weather=RECORDED)
    # CI default ('none'): no cassette yet, so the unmarked test fails with a typed error; the
    # marked one records under its own mode.
    passed, failed, calls = _run(pytester)
    assert (passed, failed, calls) == (1, 1, 'x')
    # One run with the option records what is missing...
    assert _run(pytester, '--agentool-record-mode=once')[:2] == (2, 0)
    assert len((pytester.path / 'calls.txt').read_text()) == 2
    cassette = pytester.path / 'cassettes' / 'test_weather' / 'test_weather.json'
    assert json.loads(cassette.read_text())['version'] == 2
    # ...and from then on every run replays, the model untouched.
    assert _run(pytester) == (2, 0, 'xx')


# An echo model: a test replaying another test's file would get that test's prompt back.
COLLIDING = """
import pytest
from pydantic_ai import Agent
from pydantic_ai.messages import ModelResponse, TextPart
from pydantic_ai.models.function import FunctionModel

def echo(messages, info):
    return ModelResponse(parts=[TextPart(messages[0].parts[-1].content)])

async def test_x_a(agentool_cassette):
    assert (await Agent().run('plain', model=agentool_cassette(FunctionModel(echo)))).output == 'plain'

@pytest.mark.parametrize('case', ['a'])
async def test_x(agentool_cassette, case):
    assert (await Agent().run(case, model=agentool_cassette(FunctionModel(echo)))).output == case
"""


def test_a_plain_test_and_a_parametrized_id_mapping_alike_get_two_files(pytester: pytest.Pytester) -> None:
    pytester.makeini(INI)
    pytester.makepyfile(test_collide=COLLIDING)
    assert _run(pytester, '--agentool-record-mode=once')[:2] == (2, 0)
    assert _run(pytester)[:2] == (2, 0)
    names = {p.name for p in (pytester.path / 'cassettes' / 'test_collide').iterdir()}
    assert 'test_x_a.json' in names  # a plain name keeps its file name
    (hashed,) = names - {'test_x_a.json'}
    assert re.fullmatch(r'test_x_a-[0-9a-f]{8}\.json', hashed)  # `test_x[a]` has a hash of its id


ALONE = """
import pytest
from pydantic_ai import Agent
from pydantic_ai.messages import ModelResponse, TextPart
from pydantic_ai.models.function import FunctionModel

def echo(messages, info):
    return ModelResponse(parts=[TextPart(messages[0].parts[-1].content)])

@pytest.mark.parametrize('city', ['paris'])
async def test_w(agentool_cassette, agentool_cassette_path, city):
    assert (await Agent().run(city, model=agentool_cassette(FunctionModel(echo)))).output == city
"""

# The same, beside a plain test whose name is the mapped name of `test_w[paris]`.
OWNED = f"""{ALONE}
async def test_w_paris(agentool_cassette):
    assert (await Agent().run('plain', model=agentool_cassette(FunctionModel(echo)))).output == 'plain'
"""


def test_a_parametrized_id_keeps_its_plain_name_unless_a_plain_test_has_it(pytester: pytest.Pytester) -> None:
    pytester.makeini(INI)
    pytester.makepyfile(test_old=ALONE, test_owned=OWNED)
    assert _run(pytester, '--agentool-record-mode=once')[:2] == (3, 0)
    # Alone, `test_w[paris]` is `test_w_paris.json`, as cassettes were always named.
    assert sorted(p.name for p in (pytester.path / 'cassettes' / 'test_old').iterdir()) == ['test_w_paris.json']
    # Beside a plain `test_w_paris`, which keeps that name, the bracketed id takes a hashed one.
    owned = sorted(p.name for p in (pytester.path / 'cassettes' / 'test_owned').iterdir())
    assert len(owned) == 2
    assert 'test_w_paris.json' in owned
    assert [name for name in owned if name.startswith('test_w_paris-')]
    pytester.runpytest_inprocess('-p', 'no:cacheprovider').assert_outcomes(passed=3)


LONG = """
from pathlib import Path
import pytest

@pytest.mark.parametrize('case', ['x' * 300, 'y' * 300])
def test_long(agentool_cassette_path, case):
    assert len(agentool_cassette_path.name.encode()) < 255
    with open(Path(__file__).parent / 'names.txt', 'a') as stream:
        stream.write(agentool_cassette_path.name + '\\n')
"""


def test_long_ids_get_short_distinct_file_names(pytester: pytest.Pytester) -> None:
    pytester.makeini(INI)
    pytester.makepyfile(test_long=LONG)
    pytester.runpytest_inprocess('-p', 'no:cacheprovider').assert_outcomes(passed=2)
    names = (pytester.path / 'names.txt').read_text().split()
    assert len(set(names)) == 2


REPLACED = """
from pathlib import Path
import pytest

@pytest.mark.parametrize('question', ['What is 2+2?', 'What is 2*2?', 'plain'])
def test_math(agentool_cassette_path, agentool_recording_path, question):
    with open(Path(__file__).parent / 'names.txt', 'a') as stream:
        stream.write(f'{agentool_cassette_path.name} {agentool_recording_path.name}\\n')
"""


def test_ids_whose_characters_are_replaced_get_distinct_hashed_file_names(pytester: pytest.Pytester) -> None:
    pytester.makeini(INI)
    pytester.makepyfile(test_math=REPLACED)
    pytester.runpytest_inprocess('-p', 'no:cacheprovider').assert_outcomes(passed=3)
    rows = [line.split() for line in (pytester.path / 'names.txt').read_text().splitlines()]
    cassettes = sorted(cassette for cassette, _ in rows)
    assert all(cassette == recording for cassette, recording in rows)  # the same rule for both fixtures
    assert cassettes[-1] == 'test_math_plain.json'  # nothing replaced: its own name
    hashed = cassettes[:2]
    assert all(re.fullmatch(r'test_math_What_is_2_2-[0-9a-f]{8}\.json', name) for name in hashed), hashed
    assert hashed[0] != hashed[1]


def test_a_second_model_on_the_same_file_is_refused_rather_than_overwriting_the_first(tmp_path: Path) -> None:
    from agentool.errors import CassetteError
    from agentool.testing.plugin import CassetteFactory

    def real(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        return ModelResponse(parts=[TextPart('sunny')])

    factory = CassetteFactory(tmp_path / 'test_x.json', 'once')
    first = factory(FunctionModel(real))
    assert Agent().run_sync('Paris?', model=first).output == 'sunny'
    with pytest.raises(CassetteError, match=r"name='\.\.\.'") as caught:
        factory(FunctionModel(real))
    assert caught.value.details == {'path': str(tmp_path / 'test_x.json'), 'reason': 'duplicate'}
    second = factory(FunctionModel(real), name='second')  # its own file
    assert Agent().run_sync('Lyon?', model=second).output == 'sunny'
    assert second.path == tmp_path / 'test_x.second.json'
    assert len(json.loads((tmp_path / 'test_x.json').read_text())['exchanges']) == 1  # nothing overwritten
    with pytest.raises(CassetteError, match='must be a string') as caught:
        factory(FunctionModel(real), name=123)  # type: ignore[arg-type]
    assert caught.value.details['reason'] == 'name'
