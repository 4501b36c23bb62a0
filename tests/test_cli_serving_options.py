"""The `agentool mcp` flags for session limits, shutdown and origins reach `HttpOptions`, checked alike."""

from __future__ import annotations

import pytest

from agentool.cli import main


@pytest.mark.parametrize(
    ('flag', 'value', 'option'),
    [
        ('--max-sessions', '0', 'max_sessions'),
        ('--max-sessions-per-client', '-1', 'max_sessions_per_client'),
        ('--session-idle-timeout', 'nan', 'session_idle_timeout'),
        ('--shutdown-timeout', 'inf', 'shutdown_timeout'),
        ('--allowed-origin', 'not-an-origin', 'allowed_origins'),
    ],
)
def test_a_bad_limit_is_one_error_line_naming_it(
    flag: str, value: str, option: str, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(['mcp', '--transport', 'streamable-http', flag, value]) == 1
    err = capsys.readouterr().err
    assert err.count('\n') == 1
    assert f'invalid HTTP serving options: {option} must be' in err


@pytest.mark.parametrize(
    'flags',
    [
        ['--max-sessions', '5'],
        ['--max-sessions-per-client', '2'],
        ['--session-idle-timeout', '1'],
        ['--shutdown-timeout', '1'],
        ['--allowed-origin', 'https://a.example'],
    ],
)
def test_http_limits_without_the_http_transport_are_a_usage_error(
    flags: list[str], capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(['mcp', *flags]) == 2
    assert f'{flags[0]} only apply to --transport streamable-http' in capsys.readouterr().err
