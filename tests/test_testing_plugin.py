"""The pytest plugin: registered through its entry point, opt-in fixtures, restored after each test.

Its cassette option, marker and fixtures: record once, replay in CI by default.

Strict cassettes: unused exchanges fail the test, one file per test id, no library frames in failures.
Cassette errors say what to type where the user is: the pytest command for a model the plugin's
fixture made (its mode from `--agentool-record-mode`), the `CassetteModel` mode for one made in code.
"""

from __future__ import annotations

import json
import re
from importlib.metadata import entry_points
from pathlib import Path

import pytest
from pydantic_ai import Agent
from pydantic_ai.messages import ModelMessage, ModelResponse, TextPart
from pydantic_ai.models.function import AgentInfo, FunctionModel

from agentool import AgenToolRegistry, get_injector, get_registry, use_registry
from agentool.cli import main
from agentool.testing import Cassette
from agentool.testing.commands import unused_path

pytest_plugins = ('pytester',)

# Inner test modules run by pytester, in this process, with the plugin loaded from its entry point.
ISOLATION = """
from agentool import BaseOperationInput, RoutingConfig, create_agentool, get_registry
from agentool.core.injector import get_injector
from typing import Literal

class EchoInput(BaseOperationInput):
    operation: Literal['echo']
    text: str

def echo(text: str) -> str:
    return text

def make():
    return create_agentool('echo', EchoInput, RoutingConfig(operation_map={'echo': 'echo'}), [echo])

def test_registers(agentool_injector, agentool_registry):
    assert get_registry() is agentool_registry and len(agentool_registry) == 0
    assert get_injector() is agentool_injector and agentool_injector.registry is agentool_registry
    make()
    assert 'echo' in agentool_registry and 'echo' in agentool_injector

def test_starts_empty_again(agentool_injector):
    assert 'echo' not in get_registry() and 'echo' not in agentool_injector
    make()  # no DuplicateNameError: the previous test's agentool is gone
"""

BLOCKING = """
from typing import Any
import pytest
from pydantic_ai import Agent
from pydantic_ai.models import Model, check_allow_model_requests
from agentool.testing import AgentDouble, Output, Script

class RealModel(Model):
    # What a provider model does first in every request.
    async def request(self, messages: Any, model_settings: Any, model_request_parameters: Any) -> Any:
        check_allow_model_requests()
        raise AssertionError('a real request was sent')

    @property
    def model_name(self) -> str:
        return 'real'

    @property
    def system(self) -> str:
        return 'real'

def test_blocked(agentool_no_model_requests):
    agent = Agent(RealModel())
    with pytest.raises(RuntimeError, match='ALLOW_MODEL_REQUESTS is False'):
        agent.run_sync('hi')
    with agent.override(model=AgentDouble(Script(Output('doubled')))):
        assert agent.run_sync('hi').output == 'doubled'
"""

DEFAULTS = """
from pydantic_ai import models
from agentool import get_registry
seen = []

def test_one():
    seen.append(get_registry())
    assert models.ALLOW_MODEL_REQUESTS is False

def test_two():
    seen.append(get_registry())
    assert seen[0] is not seen[1]
"""

PATHS = """
import pytest

@pytest.mark.parametrize('city', ['Paris', 'São Paulo'])
def test_where(agentool_recording_path, request, city):
    assert agentool_recording_path.parent == request.path.parent / 'recordings'
    assert agentool_recording_path.suffix == '.json'
    assert ' ' not in agentool_recording_path.name and '[' not in agentool_recording_path.name
    assert not agentool_recording_path.exists()
"""


def test_the_plugin_is_registered_through_its_entry_point() -> None:
    (entry,) = entry_points(group='pytest11', name='agentool')
    assert entry.value == 'agentool.testing.plugin'


def test_fixtures_isolate_block_and_locate_and_restore_everything(pytester: pytest.Pytester) -> None:
    from pydantic_ai import models

    outer = get_registry()
    _project(pytester, test_isolation=ISOLATION, test_blocking=BLOCKING, test_paths=PATHS, test_defaults=DEFAULTS)
    reports = pytester.inline_run('-p', 'no:cacheprovider')
    passed, skipped, failed = reports.listoutcomes()
    assert sorted(r.nodeid.split('::')[-1] for r in passed) == [
        'test_blocked',
        'test_registers',
        'test_starts_empty_again',
        'test_where[Paris]',
        'test_where[S\\xe3o Paulo]',  # pytest escapes non-ASCII test ids
    ]
    # Without the ini options nothing is isolated or blocked: the plugin changes no test on its own.
    assert (skipped, sorted(r.nodeid.split('::')[-1] for r in failed)) == ([], ['test_one', 'test_two'])
    assert get_registry() is outer
    assert 'echo' not in outer
    assert models.ALLOW_MODEL_REQUESTS is True


def test_ini_options_apply_isolation_and_blocking_to_every_test(pytester: pytest.Pytester) -> None:
    _project(pytester, 'agentool_isolate = true\nagentool_block_model_requests = true\n', test_defaults=DEFAULTS)
    pytester.inline_run('-p', 'no:cacheprovider').assertoutcome(passed=2)


def test_the_registry_fixture_brings_a_fresh_injector(agentool_registry: AgenToolRegistry) -> None:
    assert get_registry() is agentool_registry
    inside = get_injector()
    with use_registry():
        assert get_injector() is not inside
    assert get_injector() is inside


INI = '[pytest]\nasyncio_default_fixture_loop_scope = function\nasyncio_mode = auto\n'

# What most inner modules start with: a model answering 'sunny' and one echoing the prompt.
HEADER = """
import pytest
from pydantic_ai import Agent
from pydantic_ai.messages import ModelResponse, TextPart
from pydantic_ai.models.function import FunctionModel

def real(messages, info):
    return ModelResponse(parts=[TextPart('sunny')])

def echo(messages, info):
    return ModelResponse(parts=[TextPart(messages[0].parts[-1].content)])
"""


def _project(pytester: pytest.Pytester, ini: str = '', **modules: str) -> None:
    """An inner project: the shared ini (plus `ini`) and the test modules given."""
    pytester.makeini(INI + ini)
    pytester.makepyfile(**modules)


def _pytest(pytester: pytest.Pytester, *args: str) -> pytest.RunResult:
    return pytester.runpytest_inprocess('-p', 'no:cacheprovider', *args)


def _output(pytester: pytest.Pytester, *args: str, **outcomes: int) -> str:
    """What an inner run printed, once it ended with exactly the `outcomes` given."""
    result = _pytest(pytester, *args)
    result.assert_outcomes(**outcomes)
    return result.stdout.str()


# A "real" model that counts its calls in a file, so the outer test sees whether it was called.
RECORDED = f"""{HEADER}
from pathlib import Path

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
    result = _pytest(pytester, *args)
    outcomes = result.parseoutcomes()
    calls = pytester.path / 'calls.txt'
    return outcomes.get('passed', 0), outcomes.get('failed', 0), calls.read_text() if calls.exists() else ''


def test_default_mode_is_none_then_once_records_then_none_replays(pytester: pytest.Pytester) -> None:
    # One pytester session per step: each costs seconds, so the steps share one test.
    _project(pytester, 'agentool_record_mode = none\n', test_weather=RECORDED)
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
COLLIDING = f"""{HEADER}
async def test_x_a(agentool_cassette):
    assert (await Agent().run('plain', model=agentool_cassette(FunctionModel(echo)))).output == 'plain'

@pytest.mark.parametrize('case', ['a'])
async def test_x(agentool_cassette, case):
    assert (await Agent().run(case, model=agentool_cassette(FunctionModel(echo)))).output == case
"""


def test_a_plain_test_and_a_parametrized_id_mapping_alike_get_two_files(pytester: pytest.Pytester) -> None:
    _project(pytester, test_collide=COLLIDING)
    assert _run(pytester, '--agentool-record-mode=once')[:2] == (2, 0)
    assert _run(pytester)[:2] == (2, 0)
    names = {p.name for p in (pytester.path / 'cassettes' / 'test_collide').iterdir()}
    assert 'test_x_a.json' in names  # a plain name keeps its file name
    (hashed,) = names - {'test_x_a.json'}
    assert re.fullmatch(r'test_x_a-[0-9a-f]{8}\.json', hashed)  # `test_x[a]` has a hash of its id


ALONE = f"""{HEADER}
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
    _project(pytester, test_old=ALONE, test_owned=OWNED)
    assert _run(pytester, '--agentool-record-mode=once')[:2] == (3, 0)
    # Alone, `test_w[paris]` is `test_w_paris.json`, as cassettes were always named.
    assert sorted(p.name for p in (pytester.path / 'cassettes' / 'test_old').iterdir()) == ['test_w_paris.json']
    # Beside a plain `test_w_paris`, which keeps that name, the bracketed id takes a hashed one.
    owned = sorted(p.name for p in (pytester.path / 'cassettes' / 'test_owned').iterdir())
    assert len(owned) == 2
    assert 'test_w_paris.json' in owned
    assert [name for name in owned if name.startswith('test_w_paris-')]
    _pytest(pytester).assert_outcomes(passed=3)


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
    _project(pytester, test_long=LONG)
    _pytest(pytester).assert_outcomes(passed=2)
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
    _project(pytester, test_math=REPLACED)
    _pytest(pytester).assert_outcomes(passed=3)
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


TESTS = """
import os
import pytest
from pydantic_ai import Agent
from pydantic_ai.messages import ModelResponse, TextPart, ToolCallPart
from pydantic_ai.models.function import FunctionModel
from agentool.errors import CassetteError
from agentool.testing import CassetteModel, CassetteTools

PROMPT = os.environ.get('PROMPT', 'Paris?')

def real(messages, info):
    return ModelResponse(parts=[TextPart('sunny')])

async def test_weather(agentool_cassette):
    assert (await Agent().run(PROMPT, model=agentool_cassette(FunctionModel(real)))).output == 'sunny'

async def test_tool(agentool_cassette):
    model = agentool_cassette(FunctionModel(calls_lookup))
    agent = Agent()

    @agent.tool_plain
    def lookup(city: str) -> str:
        return 'sunny'

    assert (await agent.run('Paris?', model=model, capabilities=[CassetteTools(model)])).output == 'sunny'

def calls_lookup(messages, info):
    if len(messages) == 1:
        return ModelResponse(parts=[ToolCallPart('lookup', {'city': PROMPT})])
    return ModelResponse(parts=[TextPart('sunny')])

async def test_no_model(agentool_cassette):
    await Agent().run(PROMPT, model=agentool_cassette(None))

def test_in_code(tmp_path):
    with pytest.raises(CassetteError) as caught:
        CassetteModel(None, cassette=tmp_path / 'c.json')
    print('IN CODE:', caught.value)
"""


def test_errors_name_the_pytest_option_for_a_fixture_model_and_the_mode_in_code(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    _project(pytester, test_words=TESTS)
    text = _output(pytester, '-s', 'test_words.py', passed=1, failed=3)
    assert 'record it first (pytest test_words.py::test_weather --agentool-record-mode=once)' in text
    assert 'IN CODE:' in text
    assert 'record it first (CassetteModel in mode "once" or "all", or Recorder)' in text

    # What the message says to type records the test; then it replays.
    _output(pytester, 'test_words.py::test_weather', '--agentool-record-mode=once', passed=1)
    _output(pytester, 'test_words.py::test_weather', passed=1)

    monkeypatch.setenv('PROMPT', 'Rome?')
    changed = _output(pytester, 'test_words.py::test_weather', failed=1)
    assert (
        'Re-record with pytest test_words.py::test_weather --agentool-record-mode=all '
        '(or --agentool-record-mode=new_episodes) if the change is intended.'
    ) in changed
    assert 'mode "all"' not in changed

    # A tool call the cassette does not hold (its result dropped from the file): the option that records it.
    _output(pytester, 'test_words.py::test_tool', '--agentool-record-mode=once', passed=1)
    cassette = pytester.path / 'cassettes' / 'test_words' / 'test_tool.json'
    data = json.loads(cassette.read_text())
    assert [call['tool'] for call in data['tool_calls']] == ['lookup']
    data['tool_calls'] = []
    cassette.write_text(json.dumps(data))
    unrecorded = _output(pytester, 'test_words.py::test_tool', failed=1)
    assert 'record it with pytest test_words.py::test_tool --agentool-record-mode=all' in unrecorded
    no_model = _output(pytester, 'test_words.py::test_no_model', '--agentool-record-mode=once', failed=1)
    assert 'pass the real model to the agentool_cassette fixture' in no_model


IDS = """
import pytest

@pytest.mark.parametrize('city', ["Paris; rm -rf ~"])
async def test_city(agentool_cassette, city):
    agentool_cassette(None)
"""


def test_a_test_id_that_needs_quoting_is_quoted_for_the_shell(pytester: pytest.Pytester) -> None:
    _project(pytester, test_ids=IDS)
    out = _output(pytester, failed=1)
    assert "(pytest 'test_ids.py::test_city[Paris; rm -rf ~]' --agentool-record-mode=once)" in out


TWO_PROMPTS = f"""{HEADER}
import os

PROMPTS = os.environ.get('PROMPTS', 'Paris?,Rome?').split(',')

async def test_weather(agentool_cassette):
    model = agentool_cassette(FunctionModel(real))
    for prompt in PROMPTS:
        assert (await Agent().run(prompt, model=model)).output == 'sunny'

@pytest.mark.agentool_cassette(allow_unused=True)
async def test_allowed(agentool_cassette):
    model = agentool_cassette(FunctionModel(real))
    for prompt in PROMPTS:
        assert (await Agent().run(prompt, model=model)).output == 'sunny'
"""


def test_a_replay_leaving_an_exchange_unused_fails_and_prune_drops_it(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    _project(pytester, test_weather=TWO_PROMPTS)
    _output(pytester, '--agentool-record-mode=once', passed=2)
    monkeypatch.setenv('PROMPTS', 'Paris?')
    text = _output(pytester, passed=2, errors=1)
    assert '1 recorded exchange(s) were never used' in text
    assert "exchange 2 (prompt 'Rome?'): 'sunny'" in text  # the prompt that made it, and its answer
    assert 'pytest test_weather.py::test_weather --agentool-record-mode=all' in text
    assert 'agentool/testing/' not in text  # no library frames
    cassette = pytester.path / 'cassettes' / 'test_weather' / 'test_weather.json'
    assert main(['cassette', 'prune', str(cassette)]) == 0
    assert 'dropped 1 unused exchange(s), kept 1' in capsys.readouterr().out
    assert len(Cassette.load(cassette).exchanges) == 1
    _pytest(pytester).assert_outcomes(passed=2)


def test_the_ini_option_allows_unused_exchanges(pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch) -> None:
    _project(pytester, 'agentool_allow_unused_exchanges = true\n', test_weather=TWO_PROMPTS)
    _pytest(pytester, '--agentool-record-mode=once').assert_outcomes(passed=2)
    monkeypatch.setenv('PROMPTS', 'Paris?')
    _pytest(pytester).assert_outcomes(passed=2)


PARAMETRIZED = f"""{HEADER}
@pytest.mark.parametrize('question', ['What is 2+2?', 'What is 2*2?', 'plain'])
async def test_math(agentool_cassette, agentool_cassette_path, question):
    result = await Agent().run(question, model=agentool_cassette(FunctionModel(echo)))
    assert result.output == question
    print('PATH', agentool_cassette_path.name)
"""


def test_ids_differing_in_punctuation_get_their_own_files(pytester: pytest.Pytester) -> None:
    _project(pytester, test_math=PARAMETRIZED)
    for mode in ('once', 'none', 'all', 'none'):
        _pytest(pytester, f'--agentool-record-mode={mode}').assert_outcomes(passed=3)
    names = sorted(p.name for p in (pytester.path / 'cassettes' / 'test_math').iterdir())
    assert len(names) == 3
    assert 'test_math_plain.json' in names  # a safe id keeps its plain name
    hashed = [n for n in names if n.startswith('test_math_What_is_2_2-')]
    assert len(hashed) == 2


FAILING = f"""{HEADER}
from pathlib import Path
from agentool.testing import CassetteModel, trajectory

async def test_mismatch(tmp_path):
    path = tmp_path / 'c.json'
    await Agent().run('Paris?', model=CassetteModel(FunctionModel(real), cassette=path, mode='once'))
    await Agent().run('Rome?', model=CassetteModel(None, cassette=path))

async def test_missing():
    CassetteModel(None, cassette=Path('nowhere.json'))

async def test_assertion(tmp_path):
    result = await Agent().run('Paris?', model=FunctionModel(real))
    trajectory(result).assert_called('weather')
"""


def test_cassette_errors_and_failed_assertions_show_no_library_frames(pytester: pytest.Pytester) -> None:
    _project(pytester, test_failing=FAILING)
    text = _output(pytester, failed=3)
    assert 'user prompt changed: ["Paris?"] recorded, ["Rome?"] sent' in text
    assert "tool 'weather' was not called" in text
    assert 'agentool/testing/' not in text


SHARED = f"""{HEADER}
async def test_two_agents(agentool_cassette, agentool_record_mode):
    # Recorded through one model; replayed through two on the same file: what either used is used.
    first = agentool_cassette(FunctionModel(real))
    second = first if agentool_record_mode == 'once' else agentool_cassette(None)
    assert (await Agent().run('Paris?', model=first)).output == 'sunny'
    assert (await Agent().run('Rome?', model=second)).output == 'sunny'
"""


def test_models_sharing_a_file_count_their_exchanges_together(pytester: pytest.Pytester) -> None:
    _project(pytester, test_shared=SHARED)
    _pytest(pytester, '--agentool-record-mode=once').assert_outcomes(passed=1)
    _pytest(pytester).assert_outcomes(passed=1)


def test_prune_refuses_a_list_older_than_its_cassette(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    cassette = tmp_path / 'c.json'
    Cassette().save(cassette)
    assert main(['cassette', 'prune', str(cassette)]) == 0
    assert 'nothing to prune' in capsys.readouterr().out
    unused_path(cassette).write_text(json.dumps([{'index': 0, 'fingerprint': 'f'}]))
    assert main(['cassette', 'prune', str(cassette)]) == 1
    assert 'is not an unused-exchange list' in capsys.readouterr().err


def test_prune_refuses_a_boolean_index(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """JSON `true` is not exchange 1 (Python's `bool` is an `int`): the list is refused, nothing pruned."""
    cassette = tmp_path / 'c.json'
    exchange = {'fingerprint': 'f', 'request': {}, 'response': {}}
    Cassette.model_validate({'exchanges': [exchange, {**exchange, 'fingerprint': 'g'}]}).save(cassette)
    unused_path(cassette).write_text(json.dumps([{'index': True, 'fingerprint': 'g'}]))
    assert main(['cassette', 'prune', str(cassette)]) == 1
    assert 'is not an unused-exchange list' in capsys.readouterr().err
    assert len(json.loads(cassette.read_text())['exchanges']) == 2
