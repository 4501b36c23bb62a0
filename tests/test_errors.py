"""The exception tree `agentool.errors` draws in its docstring is the tree its classes form."""

from __future__ import annotations

import re

import pytest

from agentool import errors

_BUILTINS = {
    'ValueError': ValueError,
    'LookupError': LookupError,
    'ImportError': ImportError,
    'AssertionError': AssertionError,
}
_LINE = re.compile(r'^(?P<indent>[ │├└─]*)(?P<name>\w+)(?: \[(?P<builtin>\w+)\])?')


def _drawn() -> dict[str, tuple[str | None, str | None]]:
    """Each drawn class → (its drawn parent, its drawn built-in base)."""
    doc = errors.__doc__ or ''
    lines = doc.split('    AgenToolError\n', 1)[1].split('\n\n', 1)[0].splitlines()
    drawn: dict[str, tuple[str | None, str | None]] = {'AgenToolError': (None, None)}
    stack: list[tuple[int, str]] = [(0, 'AgenToolError')]
    for line in lines:
        match = _LINE.match(line.removeprefix('    '))
        assert match, line
        depth = len(match['indent']) // 4
        while stack and stack[-1][0] >= depth:
            stack.pop()
        drawn[match['name']] = (stack[-1][1], match['builtin'])
        stack.append((depth, match['name']))
    return drawn


def _classes() -> dict[str, type[errors.AgenToolError]]:
    return {
        name: value
        for name in errors.__all__
        if isinstance(value := getattr(errors, name), type) and issubclass(value, errors.AgenToolError)
    }


def test_every_error_class_is_drawn_once() -> None:
    assert sorted(_drawn()) == sorted(_classes())


@pytest.mark.parametrize('name', sorted(_classes()))
def test_each_error_has_its_drawn_parent_and_builtin(name: str) -> None:
    cls = _classes()[name]
    parent, builtin = _drawn()[name]
    agentool_bases = [base for base in cls.__bases__ if issubclass(base, errors.AgenToolError)]
    other_bases = [base for base in cls.__bases__ if not issubclass(base, errors.AgenToolError)]
    if parent is None:
        assert cls.__bases__ == (Exception,)
        return
    assert [base.__name__ for base in agentool_bases] == [parent]  # one agentool parent: no diamond
    assert other_bases == ([_BUILTINS[builtin]] if builtin else [])


def test_missing_deps_is_deps_unavailable_not_a_wiring_error() -> None:
    assert issubclass(errors.MissingDepsError, errors.DepsUnavailableError)
    assert not issubclass(errors.MissingDepsError, errors.DependencyError)
