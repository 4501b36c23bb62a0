"""Every bad store path is a `StoreError`, found when the store is made, never a bare `ValueError` later.

The finding: `SQLiteStore('data/a\\x00b.db')` was accepted, and its first `read` raised a bare
`ValueError: embedded null byte`.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from examples.sqlite_store import SQLiteStore, StoreError


@pytest.mark.parametrize('path', ['data/a\x00b.db', '', 'a\udc80b.db', b'data/x.db', 42, None])
def test_a_path_no_file_can_have_is_refused_at_once(path: Any) -> None:
    with pytest.raises(StoreError, match='is not a usable file path') as raised:
        SQLiteStore(path)
    assert raised.value.details['operation'] == 'open'
    assert '\x00' not in str(raised.value)


async def test_a_directory_in_the_way_is_a_store_error_on_first_use(tmp_path: Path) -> None:
    (tmp_path / 'file').write_text('')
    store = SQLiteStore(tmp_path / 'file' / 'a.db')
    try:
        with pytest.raises(StoreError, match='cannot create its directory'):
            await store.read('k')
    finally:
        store.close()


async def test_a_directory_as_the_database_is_a_store_error(tmp_path: Path) -> None:
    store = SQLiteStore(tmp_path)
    try:
        with pytest.raises(StoreError):
            await store.read('k')
    finally:
        store.close()


async def test_a_good_path_works(tmp_path: Path) -> None:
    store = SQLiteStore(tmp_path / 'data' / 'a.db')
    try:
        await store.write('k', {'v': 1})
        assert (await store.read('k')).found
    finally:
        store.close()
