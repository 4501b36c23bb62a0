from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


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
    registered = next(line for line in done.stdout.splitlines() if line.startswith('registered agentools:'))
    assert {'calculator', 'storage'} <= set(registered.split(':', 1)[1].replace(',', ' ').split())
    assert list(cwd.iterdir()) == []
    assert list(home.iterdir()) == []
    assert list(temp.iterdir()) == []
