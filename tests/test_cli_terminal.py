"""What the command line prints is safe for a terminal: errors on one line, control characters escaped.

The findings: a tool raising `RuntimeError("line\\n" * 300)` printed 373 lines to stderr, and ESC/CR
from an input or a description reached the terminal raw (`agentool call`, `agentool show`). The
full error text goes to the `agentool.cli` log instead.
"""

from __future__ import annotations

import logging
from collections.abc import Iterator
from typing import Literal

import pytest

from agentool import BaseOperationInput, Route, RoutingConfig, create_agentool
from agentool.cli import main
from agentool.core.injector import AgenToolInjector, use_injector
from agentool.core.registry import AgenToolRegistry, use_registry

ESC = '\x1b'
HOSTILE = f'{ESC}]0;pwned\a{ESC}[2J\rgone'


class EchoInput(BaseOperationInput):
    operation: Literal['echo', 'fail']
    text: str = ''


async def echo(text: str) -> str:
    return text


async def fail(text: str) -> str:
    raise RuntimeError('line\n' * 300 + text)


@pytest.fixture(autouse=True)
def registry() -> Iterator[None]:
    with use_registry(AgenToolRegistry()), use_injector(AgenToolInjector()):
        routing = RoutingConfig(
            operation_map={'echo': Route(tool='echo', description=f'echoes {HOSTILE}'), 'fail': 'fail'}
        )
        create_agentool('echo', EchoInput, routing, [echo, fail], description=f'An echo.\n{HOSTILE}\nThe end.')
        yield


def test_a_multi_line_tool_error_is_one_escaped_line_and_logged_whole(
    capsys: pytest.CaptureFixture[str], caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.INFO, logger='agentool.cli')
    assert main(['call', 'echo', f'{{"operation": "fail", "text": "{ESC}[31m"}}'.replace(ESC, '\\u001b')]) == 1
    err = capsys.readouterr().err
    assert err.count('\n') == 1
    assert err.startswith('agentool: error: ')
    assert 'line\\nline\\n' in err
    assert ESC not in err
    assert len(err) < 2000
    assert ('line\n' * 300) in caplog.text  # the full text, for whoever reads the log


def test_show_escapes_descriptions(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(['show', 'echo']) == 0
    out = capsys.readouterr().out
    assert ESC not in out
    assert '\r' not in out
    assert '\a' not in out
    assert '\\x1b]0;pwned\\x07\\x1b[2J\\rgone' in out
    assert 'An echo.\n' in out  # a description's own line breaks stay


def test_list_escapes_descriptions(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(['list']) == 0
    out = capsys.readouterr().out
    assert ESC not in out
    assert out.startswith('echo')


def test_an_error_quoting_hostile_input_never_writes_it_raw(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(['call', 'echo', f'{{"operation": "{HOSTILE}"}}'.replace(ESC, '\\u001b').replace('\r', '\\r')]) == 1
    assert main(['call', f'no{ESC}[2Jsuch', '{}']) == 1
    err = capsys.readouterr().err
    assert ESC not in err
    assert '\r' not in err
    assert err.count('\n') == 2


def test_json_output_already_escapes_control_characters(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(['call', 'echo', '{"operation": "echo", "text": "a\\u001bb"}']) == 0
    out = capsys.readouterr().out
    assert ESC not in out


def test_a_usage_error_never_writes_an_argument_raw(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exited:
        main(['list', f'{ESC}[2J\rextra'])
    assert exited.value.code == 2
    err = capsys.readouterr().err
    assert ESC not in err
    assert '\\x1b[2J\\rextra' in err
    assert err.count('\n') == 1
