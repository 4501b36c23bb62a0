"""Scrubbing secrets from what a cassette writes: API keys, bearer tokens, cloud keys, URL credentials.

Cassettes are committed next to tests, so everything written passes through `scrub` first (on by
default; `CassetteModel(scrub=False)` turns it off). It works on JSON text, so one pass covers
every string of an exchange or a tool call: messages, tool arguments and results, responses and
their `provider_url`. Each secret becomes a fixed placeholder that no pattern matches again, so
scrubbing is idempotent: a replayed request holding a placeholder scrubs to the same text as the
recorded one, and the cassette still matches (`CassetteModel` matches on the scrubbed request).
"""

from __future__ import annotations

import json
import re
from typing import Any, cast

__all__ = ('SECRET_PATTERNS', 'PLACEHOLDER', 'scrub', 'scrub_text')

PLACEHOLDER = '<redacted>'
"""What a secret is replaced with (after a kept prefix such as `sk-` or `Bearer `)."""

# A secret's name ends like one of these (`api_key`, `x-api-key`, `client_secret`, `user_pin`; not
# `spin`). The lookahead lets the regex engine skip every other letter fast: keyword forms have no
# quote to start from.
_SECRET_NAME = (
    r'(?=[tsapTSAP])(?:token|secret|(?:api|secret|access|private)[_-]?key|apikey|pass(?:word|wd|code|phrase)'
    r'|authorization|(?<![^\W_])pin)'
)
_SECRET_KEYS = rf'[\w-]*{_SECRET_NAME}'
# A value written bare rather than quoted: a JSON or Python number, or a boolean (either spelling).
_BARE = r'(?:-?\d+(?:\.\d+)?(?:e[+-]?\d+)?|true|false)(?![\w.])'
# A secret's name in Python repr text: a dict key (`'api_key': `) or a keyword (`api_key=`).
_REPR_KEY = rf"(?:'{_SECRET_KEYS}'\s*:|{_SECRET_NAME}\s*=)\s*"

SECRET_PATTERNS: tuple[tuple[str, re.Pattern[str], str], ...] = (
    # (name, pattern, replacement): the replacement keeps what tells a reader which secret it was.
    ('anthropic_key', re.compile(r'\bsk-ant-[A-Za-z0-9_-]{16,}'), f'sk-ant-{PLACEHOLDER}'),
    ('openai_key', re.compile(r'\bsk-(?!ant-)[A-Za-z0-9_-]{16,}'), f'sk-{PLACEHOLDER}'),
    ('stripe_key', re.compile(r'\b(?:sk|rk|pk)_(?:live|test)_[A-Za-z0-9]{16,}'), PLACEHOLDER),
    ('google_key', re.compile(r'\bAIza[0-9A-Za-z_-]{35}'), PLACEHOLDER),
    ('groq_key', re.compile(r'\bgsk_[A-Za-z0-9]{20,}'), f'gsk_{PLACEHOLDER}'),
    ('xai_key', re.compile(r'\bxai-[A-Za-z0-9]{20,}'), f'xai-{PLACEHOLDER}'),
    ('huggingface_token', re.compile(r'\bhf_[A-Za-z0-9]{30,}'), f'hf_{PLACEHOLDER}'),
    ('github_token', re.compile(r'\b(?:gh[pousr]_[A-Za-z0-9]{30,}|github_pat_[A-Za-z0-9_]{30,})'), PLACEHOLDER),
    ('slack_token', re.compile(r'\bxox[abposr]-[A-Za-z0-9-]{10,}'), PLACEHOLDER),
    ('aws_access_key', re.compile(r'\b(?:AKIA|ASIA|AGPA|AIDA|AROA)[0-9A-Z]{16}\b'), PLACEHOLDER),
    ('jwt', re.compile(r'\beyJ[A-Za-z0-9_-]{8,}\.eyJ[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]{8,}'), PLACEHOLDER),
    # Bearer only: "Basic" and "Token" start ordinary sentences too. Any case: HTTP auth schemes are.
    ('bearer', re.compile(r'\b(Bearer)\s+(?!<redacted>)[A-Za-z0-9._~+/=-]{16,}', re.I), rf'\1 {PLACEHOLDER}'),
    # Bounded repeats: scanning stays linear in the text, whatever an attacker writes in it.
    (
        'url_credentials',
        re.compile(r'\b([a-zA-Z][\w+.-]{0,31}://)[^/\s:@"\\]{0,256}:[^/\s@"\\]{1,256}@'),  # user may be empty
        rf'\1{PLACEHOLDER}@',
    ),
    (
        'url_token',
        re.compile(
            r'([?&](?:api[_-]?key|key|token|access_token|auth|code|secret|password|sig|signature|x-amz-signature'
            r'|x-amz-credential|pin|passcode)=)(?!%3Credacted%3E|<redacted>)[^&\s"#\\]+',
            re.IGNORECASE,
        ),
        rf'\1{PLACEHOLDER}',
    ),
    # A JSON field named like a secret ("api_token": "..."), also inside JSON held in a string.
    (
        'secret_field',
        re.compile(rf'("{_SECRET_KEYS}"\s*:\s*")(?!<redacted>")(?:[^"\\]|\\.)+(")', re.I),
        rf'\1{PLACEHOLDER}\2',
    ),
    (
        'escaped_secret_field',
        re.compile(rf'(\\"{_SECRET_KEYS}\\"\s*:\s*\\")(?!<redacted>\\")(?:[^"\\]|\\[^"])+(\\")', re.I),
        rf'\1{PLACEHOLDER}\2',
    ),
    # The same names in Python repr text (`api_key='sk-1'`, `{'api_key': 'sk-1'}`), as a tool's or
    # an error's text holds it: the value's quotes are kept, so the repr still reads as one.
    (
        'repr_secret_field',
        # Read as JSON text: an unescaped `"` ends the string the repr is in, and the repr's own
        # escapes come JSON-escaped (its `\\` as four backslashes, its `\'` as two and a quote).
        # Possessive: no backtracking, whatever the text holds.
        re.compile(rf"({_REPR_KEY}')(?!<redacted>')(?:[^'\\\"]|\\\\\\\\|\\\\'|\\.)++(')", re.I),
        rf'\1{PLACEHOLDER}\2',
    ),
    (
        'escaped_repr_secret_field',
        re.compile(rf'({_REPR_KEY}\\")(?!<redacted>\\")(?:[^"\\]|\\[^"])+(\\")', re.I),
        rf'\1{PLACEHOLDER}\2',
    ),
    # Plain text (a log line): `api_key="..."`. Never in JSON text, where the `"` after `=` ends a
    # string and is followed by `,`, `:`, `}`, `]` or nothing.
    (
        'plain_repr_secret_field',
        re.compile(rf'({_REPR_KEY}")(?!\s*[,:}}\]]|<redacted>")(?:[^"\\\n]|\\.)++(")', re.I),
        rf'\1{PLACEHOLDER}\2',
    ),
    # A number or a boolean under a secret's name (`"pin": 1234`) becomes the string placeholder.
    ('secret_number', re.compile(rf'("{_SECRET_KEYS}"\s*:\s*){_BARE}', re.I), rf'\1"{PLACEHOLDER}"'),
    (
        'escaped_secret_number',
        re.compile(rf'(\\"{_SECRET_KEYS}\\"\s*:\s*){_BARE}', re.I),
        rf'\1\\"{PLACEHOLDER}\\"',
    ),
    (
        'repr_secret_number',
        re.compile(rf'({_REPR_KEY}){_BARE}', re.I),
        rf"\1'{PLACEHOLDER}'",
    ),
)
"""The secret shapes scrubbed by default: `(name, pattern, replacement)`."""


def scrub_text(text: str) -> str:
    """`text` with every secret in a known shape replaced by a placeholder."""
    for _name, pattern, replacement in SECRET_PATTERNS:
        text = pattern.sub(replacement, text)
    return text


def scrub(data: Any) -> Any:
    """JSON-compatible `data` with every secret in a known shape replaced (a new value; `data` is left alone)."""
    original = text = json.dumps(data, ensure_ascii=False)
    if _SECRET_CONTAINER.search(text):
        copy = json.loads(text)
        _scrub_containers(copy)
        text = json.dumps(copy, ensure_ascii=False)
    cleaned = scrub_text(text)
    return data if cleaned == original else json.loads(cleaned)


_SECRET_CONTAINER = re.compile(rf'"{_SECRET_KEYS}"\s*:\s*[\[{{]', re.I)
"""A list or an object under a secret's name (`"private_key": {...}`, a JWK): its every value is one."""
_SECRET_KEY = re.compile(_SECRET_KEYS, re.I)


def _scrub_containers(data: object) -> None:
    # Replaces, in place, every string, number and boolean inside a list or an object held under
    # a secret's name; iterative, so no depth is too deep.
    pending: list[tuple[dict[str, Any] | list[Any], bool]] = []
    if isinstance(data, dict | list):
        pending.append((cast('dict[str, Any] | list[Any]', data), False))
    while pending:
        node, secret = pending.pop()
        items: list[tuple[Any, Any]] = list(node.items()) if isinstance(node, dict) else list(enumerate(node))
        for key, value in items:
            if isinstance(value, dict | list):
                named = isinstance(key, str) and _SECRET_KEY.fullmatch(key) is not None
                pending.append((cast('dict[str, Any] | list[Any]', value), secret or named))
            elif secret and value is not None:
                node[key] = PLACEHOLDER
