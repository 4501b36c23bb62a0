"""An agentool's configuration checked and compiled, once per registration, into one `CompiledRoute`
per operation: the manager's call path is then a dict hit plus precomputed field tuples."""

from __future__ import annotations

import difflib
import enum
import functools
import inspect
import operator
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Literal, cast, get_args, get_origin, get_type_hints

from pydantic import BaseModel

from ...errors import ConfigurationError, did_you_mean, quote, suggest
from ..output import can_produce, output_value_type
from ..request import SerialGate
from ._requirements import Requirements
from ._signature import UNRESOLVABLE, ToolSignature, read_signature, tool_name, type_name
from .config import ConfigProblem, check_tools

if TYPE_CHECKING:
    from .config import AgenToolConfig, Transform

__all__ = (
    'CompiledRoute',
    'check_routes',
    'configuration_error',
    'tool_list',
)


@dataclass(frozen=True)
class CompiledRoute:
    """One operation's route, resolved at registration: the tool and how to fill its arguments."""

    operation: str
    tool: ToolSignature
    transform: Transform | None
    always_fields: tuple[str, ...] = ()
    """Without a transform: the fields matching required parameters, always passed."""
    if_set_fields: tuple[str, ...] = ()
    """The fields matching defaulted parameters: passed only when the input set them."""
    param_set: frozenset[str] = frozenset()
    positional: Callable[[BaseModel], tuple[Any, ...]] | None = None
    requirements: Requirements | None = None
    """What the operation needs beyond the input schema, if anything (set by the manager)."""
    gate: SerialGate | None = None


def configuration_error(name: str, problems: Sequence[ConfigProblem]) -> ConfigurationError:
    """One `ConfigurationError` for all of `problems`; a single problem's fields are also top-level details."""
    notes = ''.join(f'; {note}' for note in dict.fromkeys(p.note for p in problems if p.note))
    if len(problems) == 1:
        (problem,) = problems
        message = f'agentool {name!r}: {problem.message}{notes}'
        fields = {
            k: v
            for k, v in problem.as_dict().items()
            if k not in ('kind', 'severity', 'message', 'note') and v is not None
        }
    else:
        listed = '; '.join(f'({i}) {p.message}' for i, p in enumerate(problems, 1))
        message = f'agentool {name!r} has {len(problems)} configuration problems: {listed}{notes}'
        fields = {}
    return ConfigurationError(message, agentool=name, problems=[p.as_dict() for p in problems], **fields)


def check_routes(
    name: str, config: AgenToolConfig
) -> tuple[dict[str, CompiledRoute], list[ConfigProblem], list[ConfigProblem]]:
    """The routes that compile, every error of the configuration (it can run when there is none) and
    the warnings: each tool parameter with a default no input field fills (a field `note_id`, a parameter `id`)."""
    problems: list[ConfigProblem] = []
    warnings: list[ConfigProblem] = []
    input_schema = cast(object, config.input_schema)  # a config built by hand is not type-checked
    operation_field = config.routing_config.operation_field
    routes = config.routing_config.operation_map
    if not (isinstance(input_schema, type) and issubclass(input_schema, BaseModel)):
        problems.append(
            ConfigProblem(kind='bad_schema', message=f'input_schema {input_schema!r} is not a pydantic model')
        )
        return {}, problems, warnings
    schema_name = input_schema.__name__
    fields = input_schema.model_fields
    known, annotation = operation_annotation(input_schema, operation_field)
    if not known:
        problems.append(
            ConfigProblem(
                kind='no_operation_field',
                message=f'input schema {schema_name} has no operation field {operation_field!r} '
                '(a field, a computed_field or a property)',
                field=operation_field,
            )
        )
    if not routes:
        problems.append(ConfigProblem(kind='empty_operation_map', message='operation_map is empty'))
    producible = _operation_values(annotation) if known else None
    if producible is not None:
        problems.extend(
            ConfigProblem(
                kind='unrouted_operation',
                message=f'operation {op!r} of {schema_name}.{operation_field} has no route in operation_map',
                operation=op,
            )
            for op in producible
            if op not in routes
        )
        problems.extend(
            ConfigProblem(
                kind='unproducible_operation',
                message=f'operation_map routes {op!r}, which {schema_name}.{operation_field} cannot produce '
                f'(allowed: {", ".join(map(repr, producible))})',
                operation=op,
            )
            for op in routes
            if op not in producible
        )
    tools = {tool_name(t) or repr(t): t for t in config.tools}
    # Routes find a tool by name: of two different functions with one name, the last would answer
    # every route to it in silence. (The same function given twice is one tool.)
    named: dict[str, set[int]] = {}
    for function in config.tools:
        named.setdefault(tool_name(function) or repr(function), set()).add(id(function))
    problems.extend(
        ConfigProblem(
            kind='duplicate_tool',
            message=f'{len(functions)} different tools are named {tool!r}; routes find tools by name, so give '
            'each its own (its __name__)',
            tool=tool,
        )
        for tool, functions in named.items()
        if len(functions) > 1
    )
    compiled: dict[str, CompiledRoute] = {}
    for operation, route in routes.items():
        if route.retries < 0 or (route.retries and not route.idempotent):
            problems.append(
                ConfigProblem(
                    kind='retries_not_idempotent',
                    message=f'operation {operation!r} has retries={route.retries}: retries must be 0, or positive on '
                    'an idempotent route (Route(idempotent=True)), since only an idempotent call can run again safely',
                    operation=operation,
                )
            )
        function = tools.get(route.tool)
        if function is None:
            problems.append(
                ConfigProblem(
                    kind='missing_tool',
                    message=f'operation {operation!r} routes to tool {route.tool!r}, which is not among the tools '
                    f'given{did_you_mean(suggest(route.tool, tools))}',
                    operation=operation,
                    tool=route.tool,
                    note=f'the tools given: {", ".join(map(repr, tools)) or "none"}',
                )
            )
            continue
        signature = read_signature(function)
        matched: tuple[str, ...] = ()
        if route.transform is None:
            matched = tuple(p for p in signature.params if p in fields)
            spare_all = [f for f in fields if f != operation_field]
            spare = [f for f in spare_all if f not in signature.params]
            defaulted = [p for p in signature.params if p not in fields and p not in signature.required]
            for parameter in (p for p in defaulted if p not in _bound_keywords(function)):
                default = inspect.signature(function).parameters[parameter].default
                meant = _probably_meant(parameter, spare)
                hint = f'did you mean field {meant!r}? Rename one of them' if meant else f'add a field {parameter!r}'
                warnings.append(
                    ConfigProblem(
                        kind='unfillable_default',
                        severity='warning',
                        message=f'operation {operation!r} has no transform, and no field of {schema_name} '
                        f'fills parameter {parameter!r} of tool {route.tool!r}: every call passes its default '
                        f'{quote(default)}; {hint}, or give the route a transform',
                        operation=operation,
                        tool=route.tool,
                        parameter=parameter,
                        field=meant,
                    )
                )
            if unfilled := sorted(signature.required - set(matched)):
                # A required parameter no input field fills: the field probably meant, the fields listed once.
                for parameter in unfilled:
                    meant = _probably_meant(parameter, spare)
                    hint = f' (did you mean field {meant!r}?)' if meant else ''
                    problems.append(
                        ConfigProblem(
                            kind='unfillable_parameter',
                            message=f'operation {operation!r} has no transform, and tool {route.tool!r} requires '
                            f'parameter {parameter!r}, which is not a field of {schema_name}{hint}',
                            operation=operation,
                            tool=route.tool,
                            parameter=parameter,
                            field=meant,
                            note=f'the fields of {schema_name} are {", ".join(map(repr, spare_all))}: rename a '
                            'parameter or a field to match, or give the route a transform',
                        )
                    )
                continue
        always = tuple(field for field in matched if field in signature.required)
        if_set = tuple(field for field in matched if field not in signature.required)
        compiled[operation] = CompiledRoute(
            operation,
            signature,
            route.transform,
            always,
            if_set,
            frozenset(signature.params),
            _positional_reader(signature, always) if route.transform is None and not if_set else None,
            gate=None if route.concurrent_safe else SerialGate(signature.function),
        )
    problems.extend(_unproducible_outputs(compiled.values(), config.output_type))
    return compiled, problems, warnings


def _unproducible_outputs(routes: Iterable[CompiledRoute], output_type: Any) -> list[ConfigProblem]:
    """One problem per tool whose return annotation can never fit the explicit output type."""
    wanted = output_value_type(output_type)
    if wanted is None:
        return []
    operations: dict[str, list[str]] = {}
    tools: dict[str, ToolSignature] = {}
    for route in routes:
        operations.setdefault(route.tool.name, []).append(route.operation)
        tools[route.tool.name] = route.tool
    problems: list[ConfigProblem] = []
    for name, signature in tools.items():
        returned = signature.hints.get('return', Any)
        if can_produce(returned, wanted):
            continue
        routed = ', '.join(map(repr, operations[name]))
        problems.append(
            ConfigProblem(
                kind='unproducible_output',
                message=f'tool {name!r} (operation {routed}) returns {type_name(returned)}, which the output type '
                f"{type_name(wanted)} can never accept; change the output type or the tool's return annotation",
                operation=operations[name][0],
                tool=name,
            )
        )
    return problems


def _bound_keywords(function: object) -> set[str]:
    bound: set[str] = set()
    while isinstance(function, functools.partial):
        partial = cast('functools.partial[Any]', function)
        bound.update(partial.keywords)
        function = partial.func
    return bound


def _probably_meant(parameter: str, fields: list[str]) -> str | None:
    """The field `parameter` was probably meant to match: a close spelling, else one that shares a word."""
    close = difflib.get_close_matches(parameter, fields, n=1)
    if close:
        return close[0]
    words = {word for word in parameter.split('_') if word}
    sharing = [f for f in fields if words & set(f.split('_'))]
    return sharing[0] if len(sharing) == 1 else None


def operation_annotation(input_schema: type[BaseModel], operation_field: str) -> tuple[bool, Any]:
    """Whether `input_schema` has `operation_field` (a field, computed field or property), and its type."""
    if (info := input_schema.model_fields.get(operation_field)) is not None:
        return True, info.annotation
    if (computed := input_schema.model_computed_fields.get(operation_field)) is not None:
        return True, computed.return_type
    attribute = inspect.getattr_static(input_schema, operation_field, None)
    if isinstance(attribute, property):
        getter = attribute.fget
        try:
            hints = get_type_hints(getter) if getter is not None else {}
        except UNRESOLVABLE:  # an unresolvable annotation: the operation is then any string
            hints = {}
        return True, hints.get('return', Any)
    return False, None


def _positional_reader(signature: ToolSignature, fields: tuple[str, ...]) -> Callable[[Any], tuple[Any, ...]] | None:
    """A reader of `fields` as positional arguments, if they are exactly the tool's leading positional parameters."""
    parameters = list(inspect.signature(signature.function).parameters.values())[int(signature.takes_ctx) :]
    leading = parameters[: len(fields)]
    if tuple(p.name for p in leading) != fields or any(p.kind is not p.POSITIONAL_OR_KEYWORD for p in leading):
        return None
    if len(fields) >= 2:
        return operator.attrgetter(*fields)  # returns the tuple of values
    if len(fields) == 1:
        (name,) = fields
        return lambda input: (getattr(input, name),)
    return lambda input: ()


def _operation_values(annotation: Any) -> list[str] | None:
    """The operation values a field annotation allows, or `None` for any string."""
    if get_origin(annotation) is Literal:
        return [str(v) for v in get_args(annotation)]
    if isinstance(annotation, type) and issubclass(annotation, enum.Enum):
        return [str(member.value) for member in annotation]
    return None


def tool_list(
    name: str, tool_functions: Sequence[Callable[..., Any]] | Mapping[str, Callable[..., Any]]
) -> tuple[Callable[..., Any], ...]:
    """The tools as a tuple; a dict's keys must be the functions' names, since routes find tools by name."""
    if not isinstance(tool_functions, Mapping):
        return check_tools(tool_functions, agentool=name)
    for key, function in tool_functions.items():
        if tool_name(function) != key:
            raise ConfigurationError(
                f'agentool {name!r}: tool_functions key {key!r} is not the name of its function '
                f'{tool_name(function) or function!r}; routes find tools by their __name__',
                agentool=name,
                tool=key,
            )
    return tuple(tool_functions.values())
