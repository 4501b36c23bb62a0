"""Recorded runs in pydantic-evals: span trees, datasets of cassettes, frozen-tools experiments, drift."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from tests.agentools import ROOT, call_then_answer, make_calc, python_env

pytest.importorskip('pydantic_evals')

from pydantic_ai import Agent
from pydantic_ai.capabilities import Instrumentation
from pydantic_ai.messages import TextPart, ToolCallPart
from pydantic_ai.models.instrumented import InstrumentationSettings
from pydantic_evals.evaluators import EqualsExpected, EvaluatorContext, HasMatchingSpan

from agentool import AgenToolModel, AgenToolToolset
from agentool.errors import ConfigurationError, UnrecordedCallError
from agentool.testing import Cassette, CassetteModel, CassetteTools
from agentool.testing.evals import (
    Drift,
    FrozenTools,
    frozen_tools_task,
    recorded_dataset,
    recorded_prompt,
    replay_recorded,
    span_tree,
)
from tests.evals_agents import (
    PARIS,
    PARIS_WEATHER,
    ROME,
    ROME_WEATHER,
    TRAJECTORIES,
    agent_calls,
    make_agent,
    record,
    scripted,
    tool_spans,
    tracing,
)

pytestmark = pytest.mark.seam  # pydantic-evals pins its pydantic-ai: the matrix leg with the full package runs these


def _scenario(name: str, folder: Path) -> str:
    # A process of its own: the scenario sets the global tracer provider pydantic-evals reads spans from.
    command = [sys.executable, str(ROOT / 'tests' / 'evals_agents.py'), name, str(folder)]
    out = subprocess.run(command, env=python_env(), capture_output=True, text=True)
    assert out.returncode == 0, out.stderr[-3000:]
    return out.stdout


def test_every_agentic_evaluator_scores_a_recording_as_it_scored_the_live_run(tmp_path: Path) -> None:
    out = _scenario('scenario_live_and_replayed_verdicts_agree', tmp_path)
    assert 'retry' in out
    assert 'output_tool' in out


def test_a_dataset_of_recordings_is_evaluated_with_model_requests_blocked(tmp_path: Path) -> None:
    out = _scenario('scenario_a_dataset_of_recordings_evaluates_with_model_requests_blocked', tmp_path)
    assert out.strip() == str(sorted(TRAJECTORIES))


def _read(tree: Any) -> list[tuple[str, Any, Any, str]]:
    """What the evaluators read of a span tree's nodes, as `tool_spans` reads live spans."""
    seen = [
        (
            node.name,
            node.attributes.get('gen_ai.tool.name'),
            node.attributes.get('gen_ai.tool.call.arguments'),
            (node.status or 'unset').upper(),
        )
        for node in tree
        if node.name.startswith(('execute_tool', 'chat', 'invoke_agent'))
    ]
    return sorted(seen, key=repr)


@pytest.mark.parametrize('name', list(TRAJECTORIES))
async def test_the_span_tree_of_a_recording_holds_the_live_runs_spans(name: str, tmp_path: Path) -> None:
    provider, exporter = tracing()
    agent = make_agent()
    await record(agent, name, tmp_path, instrument=InstrumentationSettings(tracer_provider=provider))
    live = tool_spans(exporter.get_finished_spans())
    ran = len(agent_calls[id(agent)])
    tree = await span_tree(agent, tmp_path / f'{name}.json')
    assert _read(tree) == live
    assert len(agent_calls[id(agent)]) == ran  # no tool ran again
    assert any(span[0] == 'execute_tool find_city' for span in live)


@pytest.mark.parametrize('name', list(TRAJECTORIES))
async def test_the_span_tree_of_a_run_result_holds_the_live_runs_spans(name: str, tmp_path: Path) -> None:
    provider, exporter = tracing()
    agent = make_agent()
    result = await record(agent, name, tmp_path, instrument=InstrumentationSettings(tracer_provider=provider))
    ran = len(agent_calls[id(agent)])
    for source in (result, result.all_messages()):
        tree = await span_tree(agent, source)
        assert _read(tree) == tool_spans(exporter.get_finished_spans())
    assert len(agent_calls[id(agent)]) == ran


async def test_a_replay_gives_the_recorded_output_without_a_model(tmp_path: Path) -> None:
    agent = make_agent()
    live = await record(agent, 'output_tool', tmp_path)
    replayed = await replay_recorded(agent, tmp_path / 'output_tool.json')
    assert replayed.output == live.output
    assert recorded_prompt(tmp_path / 'output_tool.json') == TRAJECTORIES['output_tool'][0]


async def test_frozen_tools_answer_calls_in_another_order_with_each_calls_own_result(tmp_path: Path) -> None:
    agent = make_agent()
    await record(agent, 'parallel', tmp_path)
    ran = len(agent_calls[id(agent)])
    tools = FrozenTools(Cassette.load(tmp_path / 'parallel.json'))
    # The recording asked Paris then Rome; this model asks Rome first, one call at a time.
    reordered = scripted([[ROME], [PARIS], [ROME_WEATHER, PARIS_WEATHER], [TextPart('done')]])
    result = await agent.run('Paris or Rome?', model=reordered, capabilities=[tools])
    answered = {(call.tool, call.args.get('name', call.args.get('lat'))): call.result for call in tools.calls}
    assert answered == {
        ('find_city', 'Rome'): {'lat': 41.9, 'lon': 12.5},
        ('find_city', 'Paris'): {'lat': 48.86, 'lon': 2.35},
        ('get_weather', 41.9): {'temperature_c': 21.0},
        ('get_weather', 48.86): {'temperature_c': 14.0},
    }
    assert result.output == 'done'
    assert len(agent_calls[id(agent)]) == ran
    assert tools.unrecorded == []


async def test_a_call_the_recording_cannot_answer_fails_naming_it_or_runs_when_allowed(tmp_path: Path) -> None:
    agent = make_agent()
    await record(agent, 'sequential', tmp_path)
    cassette = Cassette.load(tmp_path / 'sequential.json')
    new_call = scripted([[ROME], [TextPart('done')]])
    with pytest.raises(UnrecordedCallError, match="tool 'find_city' was called with") as caught:
        await agent.run('Weather in Rome?', model=new_call, capabilities=[FrozenTools(cassette)])
    assert caught.value.details['args'] == '{"name":"Rome"}'
    ran = len(agent_calls[id(agent)])
    tools = FrozenTools(cassette, unrecorded_calls='run')
    await agent.run('Weather in Rome?', model=scripted([[ROME], [TextPart('done')]]), capabilities=[tools])
    assert [(call.tool, call.args) for call in tools.unrecorded] == [('find_city', {'name': 'Rome'})]
    assert agent_calls[id(agent)][ran:] == ['find_city Rome']


async def test_a_frozen_tools_experiment_reports_drift_and_new_calls_per_case(tmp_path: Path) -> None:
    agent = make_agent()
    for name in ('sequential', 'parallel', 'output_tool'):
        await record(agent, name, tmp_path)
    # The changed model: the same calls for Paris or Rome, but Rome first; a new call for the forecast.
    answers = {
        'Weather in Paris?': [[PARIS], [PARIS_WEATHER], [TextPart('Rain, 14 C')]],
        'Paris or Rome?': [[ROME, PARIS], [ROME_WEATHER, PARIS_WEATHER], [TextPart('Rome is warmer')]],
        'Forecast for Rome': [[ToolCallPart('find_city', {'name': 'Milan'})], [TextPart('no')]],
    }

    async def task(prompt: str) -> Any:
        run = frozen_tools_task(agent, tmp_path, model=scripted(answers[prompt]))
        return await run(prompt)

    dataset = recorded_dataset(tmp_path, evaluators=[Drift(), EqualsExpected()])
    report = await dataset.evaluate(task, progress=False)
    by_case = {case.name: case for case in report.cases}
    assert by_case['sequential'].assertions['Drift'].value is True
    drifted = by_case['parallel'].assertions['Drift']
    assert drifted.value is False
    assert drifted.reason is not None
    assert 'find_city' in drifted.reason
    assert by_case['parallel'].assertions['EqualsExpected'].value is True  # same results, whatever the order
    (failure,) = report.failures
    assert failure.name == 'output_tool'
    assert 'Milan' in failure.error_message
    assert 'UnrecordedCallError' in failure.error_message


async def test_an_allowed_new_call_is_listed_in_its_cases_attributes(tmp_path: Path) -> None:
    agent = make_agent()
    await record(agent, 'sequential', tmp_path)
    run = frozen_tools_task(agent, tmp_path, model=scripted([[ROME], [TextPart('Rome it is')]]), unrecorded_calls='run')
    report = await recorded_dataset(tmp_path, evaluators=[Drift()]).evaluate(run, progress=False)
    (case,) = report.cases
    assert case.attributes['unrecorded'] == [{'tool': 'find_city', 'args': {'name': 'Rome'}}]
    assert case.assertions['Drift'].value is False


def test_a_folder_that_is_not_one_of_cassettes_is_refused(tmp_path: Path) -> None:
    with pytest.raises(ConfigurationError, match='is not a folder of cassettes'):
        recorded_dataset(tmp_path / 'missing')
    with pytest.raises(ConfigurationError, match=r'holds no cassette \(\*\.json\)'):
        recorded_dataset(tmp_path)


async def test_two_cassettes_of_one_prompt_are_refused_naming_both(tmp_path: Path) -> None:
    agent = make_agent()
    await record(agent, 'sequential', tmp_path)
    (tmp_path / 'again.json').write_bytes((tmp_path / 'sequential.json').read_bytes())
    with pytest.raises(
        ConfigurationError, match=r"cassettes 'again\.json' and 'sequential\.json' record the same prompt"
    ):
        recorded_dataset(tmp_path)


@pytest.mark.parametrize('bad', ['skip', None, True])
def test_an_unknown_unrecorded_calls_choice_is_refused(bad: object) -> None:
    with pytest.raises(ConfigurationError, match="unrecorded_calls must be one of 'fail', 'run'"):
        FrozenTools(Cassette(), unrecorded_calls=bad)  # pyright: ignore[reportArgumentType]


def test_a_recording_is_a_cassette_or_its_path() -> None:
    with pytest.raises(ConfigurationError, match='cassette must be a Cassette'):
        FrozenTools({'tool_calls': []})  # pyright: ignore[reportArgumentType]


async def _operation_spans_live_and_replayed(agent: Any, inner: Any, prompt: str, path: Path) -> tuple[Any, ...]:
    """An instrumented run recorded to `path`, then its replay: the `execute_tool calc.*` spans of each
    (name, surface), and the replay's span tree."""

    def operations(spans: list[tuple[str, Any]]) -> list[tuple[str, Any]]:
        return sorted(span for span in spans if span[0].startswith('execute_tool calc.'))

    provider, exporter = tracing()
    model = CassetteModel(inner, cassette=path, mode='all')
    capabilities = [CassetteTools(model), Instrumentation(InstrumentationSettings(tracer_provider=provider))]
    await agent.run(prompt, model=model, capabilities=capabilities)
    model.save()
    live = [(span.name, (span.attributes or {}).get('agentool.surface')) for span in exporter.get_finished_spans()]
    tree = await span_tree(agent, path)
    replayed = [(node.name, node.attributes.get('agentool.surface')) for node in tree]
    return operations(live), operations(replayed), tree


async def test_a_replayed_agentool_tool_call_shows_the_operation_span_of_the_live_call(tmp_path: Path) -> None:
    make_calc()
    agent = Agent(toolsets=[AgenToolToolset(['calc'])])
    inner = call_then_answer('calc_add', {'a': 2, 'b': 3})
    live, replayed, tree = await _operation_spans_live_and_replayed(agent, inner, '2 + 3?', tmp_path / 'add.json')
    assert live == replayed == [('execute_tool calc.add', 'toolset')]
    query = HasMatchingSpan(query={'name_equals': 'execute_tool calc.add'})
    ctx: EvaluatorContext[Any, Any, Any] = EvaluatorContext(
        name='add',
        inputs='2 + 3?',
        metadata=None,
        expected_output=None,
        output='5.0',
        duration=0.0,
        _span_tree=tree,
        attributes={},
        metrics={},
    )
    assert query.evaluate(ctx) is True


async def test_a_replayed_agentool_agent_run_shows_the_operation_span_of_its_manager_tool(tmp_path: Path) -> None:
    prompt = '{"operation": "add", "a": 2, "b": 3}'
    path = tmp_path / 'calc.json'
    live, replayed, _ = await _operation_spans_live_and_replayed(make_calc(), AgenToolModel('calc'), prompt, path)
    assert live == replayed == [('execute_tool calc.add', 'agent')]
