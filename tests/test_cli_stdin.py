"""`agentool call NAME -`: standard input is read no further than the agentool's limit, and must be UTF-8.

Size, invalid JSON and the other bad inputs given as an argument are the matrix in
tests/test_hostile_input.py (its `CLI call` surface).
"""

from __future__ import annotations

import io
import json
import sys

import pytest

from agentool.cli import main
from examples.calculator import create_calculator

HUGE = '{"operation": "add", "a": 1, "b": 2, "x": ' + '[' * 15_000_000 + ']' * 15_000_000 + '}'


def stdin(monkeypatch: pytest.MonkeyPatch, raw: bytes) -> io.BytesIO:
    buffer = io.BytesIO(raw)
    monkeypatch.setattr(sys, 'stdin', io.TextIOWrapper(buffer, encoding='utf-8'))
    return buffer


def test_stdin_is_read_no_further_than_the_limit(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    create_calculator()
    raw = stdin(monkeypatch, HUGE.encode())
    assert main(['call', 'calculator', '-']) == 1
    assert raw.tell() <= 1024 * 1024 + 1 + io.DEFAULT_BUFFER_SIZE  # the rest was never read
    err = capsys.readouterr().err
    assert err.startswith("agentool: error: input to agentool 'calculator' on standard input is over the limit")


def test_stdin_that_is_not_utf8_is_a_typed_error(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    create_calculator()
    stdin(monkeypatch, b'{"operation": "add", "a": 1, "b": "\xff"}')
    assert main(['call', 'calculator', '-']) == 1
    assert capsys.readouterr().err.startswith("agentool: error: input to agentool 'calculator' is not valid JSON")


def test_stdin_within_the_limit_is_called(capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch) -> None:
    create_calculator()
    stdin(monkeypatch, json.dumps({'operation': 'add', 'a': 1, 'b': 2}).encode())
    assert main(['call', 'calculator', '-']) == 0
    assert capsys.readouterr().out.strip() == '3.0'
