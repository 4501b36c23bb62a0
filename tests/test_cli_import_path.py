"""`--import` makes the working directory importable after the standard library, never before it."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from agentool.cli import main


def test_a_module_in_the_working_directory_does_not_shadow_the_standard_library(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    (tmp_path / 'sqlite3.py').write_text("raise RuntimeError('the standard library was shadowed')\n")
    (tmp_path / 'shadow_check_tools.py').write_text('import sqlite3\n\nassert sqlite3.connect\n')
    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr(sys, 'path', [p for p in sys.path if p not in ('', str(tmp_path))])
    monkeypatch.delitem(sys.modules, 'sqlite3', raising=False)  # imported afresh, through `sys.path`
    try:
        assert main(['--import', 'shadow_check_tools', 'list']) == 0, capsys.readouterr().err
    finally:
        sys.modules.pop('shadow_check_tools', None)
    assert sys.path[-1] == str(tmp_path)
    assert 'shadowed' not in capsys.readouterr().err
