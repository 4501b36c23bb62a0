"""The pipeline of `tests.durable_agentools` driven by a `FunctionModel`, for the Temporal and Prefect tests.

Its model reads only the messages, so any worker process can answer any of its requests. Each answer
appends `JOB:N` (N tool results seen) to the file `MODEL_LOG_ENV` names; while the file `FAIL_ENV`
names exists, the request after the batch fails once (and removes the file).
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from pydantic_ai import Agent
from pydantic_ai.capabilities import AbstractCapability
from pydantic_ai.messages import ModelMessage, ModelRequest, ModelResponse, TextPart, ToolCallPart, ToolReturnPart
from pydantic_ai.models.function import AgentInfo, FunctionModel

from agentool.toolset import AgenToolToolset

__all__ = ('FAIL_ENV', 'MODEL_LOG_ENV', 'pipeline_agent')

MODEL_LOG_ENV = 'AGENTOOL_TEST_MODEL_LOG'
FAIL_ENV = 'AGENTOOL_TEST_FAIL_ONCE'


def _pipeline_model(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
    request = messages[0]
    assert isinstance(request, ModelRequest)
    prompt = str(request.parts[-1].content)  # pyright: ignore[reportAttributeAccessIssue, reportUnknownMemberType, reportUnknownArgumentType]
    job = prompt.removeprefix('process ')
    returns = [p for m in messages if isinstance(m, ModelRequest) for p in m.parts if isinstance(p, ToolReturnPart)]
    if log := os.environ.get(MODEL_LOG_ENV):
        with Path(log).open('a') as file:
            file.write(f'{job}:{len(returns)}\n')
    if (fail := os.environ.get(FAIL_ENV)) and len(returns) == 2 and Path(fail).exists():
        Path(fail).unlink()
        raise RuntimeError('the model provider is down')
    steps: list[tuple[str, dict[str, Any]]] = [
        ('ledger_append', {'entry': f'{job}/first'}),
        ('batch_run', {'job': job}),
        ('ledger_append', {'entry': f'{job}/last'}),
    ]
    if len(returns) < len(steps):
        name, args = steps[len(returns)]
        return ModelResponse(parts=[ToolCallPart(name, args, tool_call_id=f'call-{len(returns)}')])
    return ModelResponse(parts=[TextPart(' | '.join(f'{p.tool_name}={p.model_response_str()}' for p in returns))])


def pipeline_agent(name: str, capabilities: Sequence[AbstractCapability[Any]] = ()) -> Agent[None, str]:
    """An LLM agent appending `JOB/first`, running the delegating `batch_run` (three appends through the
    injector), appending `JOB/last`, then listing the results (`ledger` and `batch` must be registered)."""
    return Agent(
        FunctionModel(_pipeline_model, model_name='pipeline-llm'),
        name=name,
        output_type=str,
        toolsets=[AgenToolToolset(include=['ledger.append', 'batch'], id='agentools')],
        capabilities=list(capabilities),
    )
