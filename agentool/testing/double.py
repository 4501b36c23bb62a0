"""`AgentDouble`: a scripted model that stands in for any pydantic-ai agent, LLM or not.

Drift is caught twice: a cheap check of the tool's JSON schema before a call goes out (works with
no retries allowed), then pydantic-ai's own validators, whose retry the `DriftError` quotes.
"""

from __future__ import annotations

import inspect
import json
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any, cast

from pydantic_ai.messages import (
    InstructionPart,
    ModelMessage,
    ModelRequest,
    ModelResponse,
    ModelResponsePart,
    SystemPromptPart,
    ToolCallPart,
    ToolReturnPart,
    UserContent,
    UserPromptPart,
)
from pydantic_ai.models import ModelRequestParameters
from pydantic_ai.profiles import ModelProfileSpec
from pydantic_ai.settings import ModelSettings
from pydantic_ai.tools import ToolDefinition

from .._answering import TOOL_CALLING_PROFILE, AnsweringModel
from .._options import check_text
from ..core.output import json_data, output_response
from ..errors import (
    ConfigurationError,
    DoubleError,
    DriftError,
    OutputError,
    ScriptExhaustedError,
    UnexpectedPromptError,
    clip,
    quote,
)
from .log import CallLog, CallRecord, RequestRecord
from .script import Output, Script, ScriptRun

__all__ = ('AgentDouble',)


@dataclass
class _Run:
    """A run in progress: the script answering it and the next step to play."""

    script: int
    label: str
    prompt: str
    step: int = 0


class AgentDouble(AnsweringModel):
    """A deterministic stand-in for an agent's model, driven by scripts.

    Each new run is answered whole by the first script matching its prompt (and not used up).
    `requests` holds every request answered or refused, `calls` every tool call with its result.
    The default `profile` is tools, JSON schema output, tool output mode; `settings` are ignored.
    """

    def __init__(
        self,
        *scripts: Script,
        name: str = 'double',
        profile: ModelProfileSpec | None = None,
        settings: ModelSettings | None = None,
    ) -> None:
        super().__init__(settings=settings, profile=profile or TOOL_CALLING_PROFILE)
        check_text('name', name)
        if not scripts:
            raise DoubleError(f'double {name!r} needs at least one Script', option='scripts', value='()')
        if bad := [script for script in cast('tuple[object, ...]', scripts) if not isinstance(script, Script)]:
            raise ConfigurationError(
                f'double {name!r}: AgentDouble takes Script objects; got {bad[0]!r}',
                option='scripts',
                value=repr(bad[0]),
            )
        self.scripts: tuple[Script, ...] = scripts
        self.name = name
        self.requests: list[RequestRecord] = []
        self.calls = CallLog()
        self._runs: dict[str, _Run] = {}
        self._uses = [0] * len(scripts)
        self._sequence = 0

    @property
    def model_name(self) -> str:
        return self.name

    @property
    def system(self) -> str:
        return 'agentool-double'

    def uses(self, script: Script) -> int:
        """How many runs `script` (one of `double.scripts`, else a `ConfigurationError`) has answered."""
        for held, uses in zip(self.scripts, self._uses, strict=True):
            if held is script:
                return uses
        raise ConfigurationError(
            f'double {self.name!r} does not hold {script!r}; pass one of double.scripts',
            option='script',
            value=repr(script),
        )

    def reset(self) -> None:
        """Forget every request, call and run, so each script can be used again."""
        self.requests.clear()
        self.calls.clear()
        self._runs.clear()
        self._uses = [0] * len(self.scripts)

    async def _respond(self, messages: list[ModelMessage], params: ModelRequestParameters) -> ModelResponse:
        last = messages[-1]
        if not isinstance(last, ModelRequest):  # pragma: no cover - the agent graph always ends with a request
            raise DoubleError(f'double {self.name!r}: expected a request to answer')
        key = last.run_id or ''
        returns = [p for p in last.parts if isinstance(p, ToolReturnPart)]
        settled = tuple(r for r in map(self.calls.settle, returns) if r is not None)
        # Outside an agent run (no run id, e.g. `pydantic_ai.direct`), a new prompt starts a new run.
        fresh = last.run_id is None and any(isinstance(p, UserPromptPart) for p in last.parts)
        run = None if fresh else self._runs.get(key)
        if run is None:
            # A run whose history it answered but did not start (a durable engine's) resumes there.
            done = 0 if fresh else sum(isinstance(m, ModelResponse) and m.run_id == last.run_id for m in messages)
            first = next((m for m in messages if isinstance(m, ModelRequest) and m.run_id == last.run_id), last)
            prompt = _prompt(first if done else last)
            try:
                run = self._start(key, prompt, done)
            except DoubleError:  # recorded even when no script answers, so the failure can be inspected
                self.requests.append(self._record(messages, params, settled, None, prompt))
                raise
            self.requests.append(self._record(messages, params, settled, run, prompt))
        else:
            self.requests.append(self._record(messages, params, settled, run, run.prompt))
            self._check_retries(last, run, params)
        index, record = len(self.requests) - 1, self.requests[-1]
        response = await self._play(run, key, messages, params)
        # Found again by position, as concurrent runs append their own requests meanwhile.
        if index < len(self.requests) and self.requests[index] is record:
            self.requests[index] = replace(record, response=response)
        return response

    def _record(
        self,
        messages: list[ModelMessage],
        params: ModelRequestParameters,
        settled: tuple[CallRecord, ...],
        run: _Run | None,
        prompt: str,
    ) -> RequestRecord:
        first = next((m for m in messages if isinstance(m, ModelRequest)), None)
        system = () if first is None else tuple(p.content for p in first.parts if isinstance(p, SystemPromptPart))
        return RequestRecord(
            run_id=messages[-1].run_id,
            prompt=prompt,
            instructions=InstructionPart.join(params.instruction_parts or []),
            system_prompts=system,
            tools=tuple(params.function_tools),
            output_tools=tuple(params.output_tools),
            tool_results=settled,
            messages=tuple(messages),
            output_mode=params.output_mode,
            script=None if run is None else run.label,
            step=None if run is None else run.step + 1,
        )

    def _start(self, key: str, prompt: str, done: int) -> _Run:
        matching = [i for i, script in enumerate(self.scripts) if script.matches(prompt)]
        for index in matching:
            times = self.scripts[index].times
            if times is None or self._uses[index] < times:
                self._uses[index] += 1
                run = _Run(script=index, label=self.scripts[index].label(index), prompt=prompt, step=done)
                self._runs[key] = run
                return run
        if matching:
            used = ', '.join(
                f'script {self.scripts[i].label(i)} answered {self._uses[i]} of {self.scripts[i].times} run(s)'
                for i in matching
            )
            raise ScriptExhaustedError(
                f'double {self.name!r}: every script for prompt {quote(prompt)} is used up ({used})',
                prompt=prompt,
                scripts=[self.scripts[i].label(i) for i in matching],
            )
        labels = [script.label(i) for i, script in enumerate(self.scripts)]
        raise UnexpectedPromptError(
            f'double {self.name!r}: no script matches prompt {quote(prompt)} (scripts: {", ".join(labels)})',
            prompt=prompt,
            scripts=labels,
        )

    def _check_retries(self, last: ModelRequest, run: _Run, params: ModelRequestParameters) -> None:
        where = self._where(run)
        output_tools = {tool.name for tool in params.output_tools}
        for part in last.parts:
            if isinstance(part, ToolReturnPart) and part.outcome == 'retried':
                # Rejected arguments, a rejected output, or a tool's `ModelRetry`.
                tool = None if part.tool_name in output_tools else part.tool_name
                cause = part.retry.cause if part.retry is not None else 'model_retry'
                raise _rejected(where, tool, cause, _error_list(part.content), str(part.content))
        feedback = [p for p in last.parts if isinstance(p, UserPromptPart)]
        if feedback:
            # A user-voice part after our answer is pydantic-ai's output retry feedback (errors as JSON).
            text = prompt_text(feedback[-1].content)
            listed = re.search(r'\[\s*\{.*\}\s*\]', text, re.DOTALL)
            try:
                errors = None if listed is None else _error_list(json.loads(listed.group()))
            except ValueError:
                errors = None
            # Else the validator's message, in a tag pair: shown without it.
            fenced = re.search(r'<([\w:.-]+)>\s*(.*?)\s*</\1>', text, re.DOTALL)
            shown = fenced.group(2) if fenced else text.strip()
            raise _rejected(where, None, 'model_retry' if errors is None else 'validation_error', errors, text, shown)

    async def _play(
        self, run: _Run, key: str, messages: list[ModelMessage], params: ModelRequestParameters
    ) -> ModelResponse:
        script = self.scripts[run.script]
        if run.step >= len(script.steps):
            raise ScriptExhaustedError(
                f'double {self.name!r}: script {run.label} has {len(script.steps)} step(s) and the '
                f'run asked for step {run.step + 1}',
                script=run.label,
                step=run.step + 1,
            )
        step = script.steps[run.step]
        run.step += 1
        where = self._where(run)
        context = ScriptRun(
            prompt=run.prompt, calls=[c for c in self.calls if c.run_id == (key or None)], messages=messages
        )
        if isinstance(step, tuple):
            parts: list[ModelResponsePart] = []
            for call in step:
                args = call.arguments(context)
                _check_call(where, call.tool, args, params.function_tools)
                call_id = self._call_id()
                self.calls.add(CallRecord(tool=call.tool, args=args, call_id=call_id, run_id=key or None))
                parts.append(ToolCallPart(call.tool, args, tool_call_id=call_id))
            return ModelResponse(parts=parts, model_name=self.name)
        if isinstance(step, Output):
            value = step.value
            if step.tool is not None:
                return self._through(step.tool, value, params, where)
        else:
            value = step.function(context)
            if inspect.isawaitable(value):
                value = await value
        try:
            return output_response(value, params, model_name=self.name, agentool=self.name, call_id=self._call_id())
        except OutputError as error:
            raise DriftError(
                f'{where}: the scripted output fits none of the shapes the agent accepts: {error.message}',
                tool=None,
                cause='output',
                fields=[],
            ) from error

    def _through(self, tool: str, value: Any, params: ModelRequestParameters, where: str) -> ModelResponse:
        definition = next((d for d in params.output_tools if d.name == tool), None)
        if definition is None:
            offered = [d.name for d in params.output_tools]
            raise _not_offered(f'{where} answers through output tool {tool!r}', 'output tools', offered, tool)
        jsonable = json_data(value, self.name)
        args = {definition.outer_typed_dict_key: jsonable} if definition.outer_typed_dict_key else jsonable
        return ModelResponse(parts=[ToolCallPart(tool, args, tool_call_id=self._call_id())], model_name=self.name)

    def _where(self, run: _Run) -> str:
        return f'double {self.name!r}, script {run.label} step {run.step}'

    def _call_id(self) -> str:
        self._sequence += 1
        return f'{self.name}-{self._sequence}'


def _prompt(request: ModelRequest) -> str:
    return ''.join(prompt_text(part.content) for part in request.parts if isinstance(part, UserPromptPart))


def prompt_text(content: str | Sequence[UserContent] | None) -> str:
    """A user prompt's text parts, joined."""
    if content is None or isinstance(content, str):
        return content or ''
    return ''.join(item for item in content if isinstance(item, str))


def _check_call(where: str, tool: str, args: Mapping[str, Any], offered: Sequence[ToolDefinition]) -> None:
    """Raise `DriftError` when `tool` is not offered, or `args` lack a required field or add an unknown one."""
    definition = next((d for d in offered if d.name == tool), None)
    if definition is None:
        raise _not_offered(f'{where} calls tool {tool!r}', 'offered', [d.name for d in offered], tool)
    schema = definition.parameters_json_schema
    properties: dict[str, Any] = schema.get('properties', {})
    missing = [name for name in schema.get('required', []) if name not in args]
    closed = schema.get('additionalProperties') is False
    unknown = [name for name in args if name not in properties] if closed else []
    if missing:
        also = f'; it also passes {_names(unknown)}, which it does not take' if unknown else ''
        said, cause = f'without its required {_names(missing)}{also}', 'missing_field'
    elif unknown:
        known = ', '.join(map(repr, properties)) or 'none'
        said, cause = f'with {_names(unknown)}, which it does not take (fields: {known})', 'unknown_field'
    else:
        return
    # Every drifted field, not only the first kind found.
    raise DriftError(f'{where} calls tool {tool!r} {said}', tool=tool, cause=cause, fields=[*missing, *unknown])


def _not_offered(said: str, listed: str, offered: list[str], tool: str) -> DriftError:
    names = ', '.join(map(repr, offered)) or 'none'
    return DriftError(
        f'{said}, which the agent does not offer ({listed}: {names})',
        tool=tool,
        cause='unknown_tool',
        fields=[],
        offered=offered,
    )


def _names(fields: list[str]) -> str:
    return f'field {fields[0]!r}' if len(fields) == 1 else f'fields {", ".join(map(repr, fields))}'


def _rejected(
    where: str, tool: str | None, cause: str, errors: list[dict[str, Any]] | None, feedback: str, shown: str = ''
) -> DriftError:
    """The `DriftError` for the agent's retry of a scripted call (`tool`) or output."""
    subject = 'the scripted output' if tool is None else f'the scripted call to tool {tool!r}'
    if errors is None:
        verb = 'rejected' if tool is None else 'asked for a retry of'
        said = f'{where}: the agent {verb} {subject}: {shown or feedback}'
        return DriftError(said, tool=tool, cause=cause, fields=[], feedback=feedback)
    fields = ['.'.join(map(str, error.get('loc', ()))) or '<root>' for error in errors]
    problems = '; '.join(
        f'field {name!r}: {error.get("msg", "invalid")}{_got(error)}'
        for name, error in zip(fields, errors, strict=True)
    )
    said = f'{where}: the agent rejected {subject}: {problems}'
    return DriftError(said, tool=tool, cause=cause, fields=fields, errors=errors)


def _got(error: dict[str, Any]) -> str:
    if 'input' not in error or error.get('type') == 'missing':
        return ''
    return f' (got {clip(json.dumps(error["input"], default=repr))})'


def _error_list(content: object) -> list[dict[str, Any]] | None:
    if isinstance(content, list) and all(isinstance(item, dict) for item in cast('list[object]', content)):
        return cast('list[dict[str, Any]]', content)
    return None
