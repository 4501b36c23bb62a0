"""The demo (`examples/demo.py`): it runs from start to end and leaves nothing behind."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from tests.agentools import ROOT


def test_demo_runs_and_leaves_nothing_behind(tmp_path: Path) -> None:
    cwd, home, temp = tmp_path / 'cwd', tmp_path / 'home', tmp_path / 'tmp'
    for directory in (cwd, home, temp):
        directory.mkdir()
    env = {k: v for k, v in os.environ.items() if k not in {'AGENTOOL_STORAGE_PATH', 'XDG_DATA_HOME'}}
    env |= {
        'PYTHONPATH': os.pathsep.join(filter(None, [str(ROOT), env.get('PYTHONPATH')])),
        'HOME': str(home),
        'USERPROFILE': str(home),
        'TMPDIR': str(temp),
        'TEMP': str(temp),
        'TMP': str(temp),
    }
    done = subprocess.run(
        [sys.executable, '-m', 'examples.demo'], cwd=cwd, env=env, capture_output=True, text=True, timeout=120
    )
    assert done.returncode == 0, done.stderr
    assert "found=True, data='hi'" in done.stdout
    assert 'bad input -> UnknownOperationError' in done.stdout
    assert "injector.run  sessions get       -> status='active', user='ada'" in done.stdout
    catalog = done.stdout.split('catalog:\n', 1)[1].split('\ndurable order pipeline', 1)[0].splitlines()
    assert [line.split()[0] for line in catalog] == ['calculator', 'sessions', 'storage']
    assert catalog[1].endswith('create, get, renew, delete  (uses storage)')
    durable = done.stdout.split('durable order pipeline', 1)[1]
    assert 'reserve: done' in durable.split('a new worker', 1)[0]
    assert 'charge: killed (SIGKILL)' in durable
    recovered = durable.split('recovers the workflow:', 1)[1]
    assert 'reserve' not in recovered  # journaled: not run again
    assert 'charge: done' in recovered
    assert 'ship: done' in recovered
    assert "workflow order-42 -> OrderStep(order_id='42', step='placed')" in recovered
    assert list(cwd.iterdir()) == []
    assert list(home.iterdir()) == []
    assert list(temp.iterdir()) == []
