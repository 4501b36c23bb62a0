"""Token files: read with a size limit, a BOM stripped, a token no client could send refused at start.

The findings: `--token-file /dev/zero` grew to 3.2 GB and never started; a BOM an editor saved was
kept in the token (every client then got 401); a token holding a NUL or a newline was accepted,
though no client can send it in a header.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from agentool.errors import ServingError
from agentool.mcp_http import MAX_TOKEN_FILE_BYTES, TOKEN_ENV, HttpOptions


def test_a_bom_saved_by_an_editor_is_not_part_of_the_token(tmp_path: Path) -> None:
    token_file = tmp_path / 'token'
    token_file.write_bytes('\ufeffs3cret\r\n'.encode())
    assert HttpOptions(token_file=token_file).resolve_token() == 's3cret'


@pytest.mark.skipif(not os.path.exists('/dev/zero'), reason='needs /dev/zero')
def test_an_endless_token_file_is_refused_after_reading_the_limit() -> None:
    with pytest.raises(ServingError, match=f'is over {MAX_TOKEN_FILE_BYTES} bytes') as raised:
        HttpOptions(token_file='/dev/zero').resolve_token()
    assert raised.value.details['reason'] == 'token file too large'


def test_a_token_file_over_the_limit_is_refused(tmp_path: Path) -> None:
    token_file = tmp_path / 'token'
    token_file.write_text('x' * (MAX_TOKEN_FILE_BYTES + 1))
    with pytest.raises(ServingError, match='it must hold just the token'):
        HttpOptions(token_file=token_file).resolve_token()
    token_file.write_text('x' * MAX_TOKEN_FILE_BYTES)
    assert HttpOptions(token_file=token_file).resolve_token() == 'x' * MAX_TOKEN_FILE_BYTES


def test_a_token_file_that_is_not_text_is_a_typed_error(tmp_path: Path) -> None:
    token_file = tmp_path / 'token'
    token_file.write_bytes(b'\xff\xfe\x00bad')
    with pytest.raises(ServingError, match='not UTF-8 text'):
        HttpOptions(token_file=token_file).resolve_token()


def test_a_directory_as_token_file_is_a_typed_error(tmp_path: Path) -> None:
    with pytest.raises(ServingError, match='cannot read the token file'):
        HttpOptions(token_file=tmp_path).resolve_token()


@pytest.mark.parametrize('token', ['ab\x00cd', 'ab\ncd', 'ab\rcd', 'ab\x1b[31mcd', 'ab\tcd', 'ab\u2028cd'])
def test_a_token_no_client_can_send_is_refused_at_start(token: str, tmp_path: Path) -> None:
    token_file = tmp_path / 'token'
    token_file.write_text(token, encoding='utf-8')
    for options in (HttpOptions(token=token), HttpOptions(token_file=token_file)):
        with pytest.raises(ServingError, match='no client can send') as raised:
            options.resolve_token()
        assert token not in str(raised.value)  # the secret is never echoed


def test_a_token_from_the_environment_is_checked_alike(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(TOKEN_ENV, 'ab\x1bcd')  # (an environment cannot hold a NUL)
    with pytest.raises(ServingError, match=f'the bearer token from \\${TOKEN_ENV} holds a control'):
        HttpOptions().resolve_token()


def test_a_token_with_an_inner_space_or_non_ascii_letters_is_kept(tmp_path: Path) -> None:
    assert HttpOptions(token='pass phrase').resolve_token() == 'pass phrase'
    assert HttpOptions(token='clé').resolve_token() == 'clé'
