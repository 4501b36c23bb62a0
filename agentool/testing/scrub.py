"""Scrubbing secrets from what a cassette writes, before it is written.

Each secret becomes a placeholder no rule matches again, so scrubbing is idempotent and a replayed
request still matches; every rule is bounded or possessive, so scrubbing stays linear in the text.
"""

from __future__ import annotations

import functools
import json
import re
from typing import Any, cast

from ._known_shapes import known_secrets

__all__ = ('SECRET_PATTERNS', 'PLACEHOLDER', 'is_secret_name', 'scrub', 'scrub_text')

PLACEHOLDER = '<redacted>'
"""What a secret is replaced with (after a kept prefix such as `sk-` or `Bearer `)."""

# How a secret's name ends (`api_key`, `X-Api-Key`, `DB_PASSWORD`, `user_pin`, `Set-Cookie`; not
# `spin`, not `max_tokens`): a rule, so `refresh_token` and `access-token` need not be listed.
_NAME_END = (
    r'(?:token|secret|apikey|(?:api|secret|access|private|client|auth|account|signing|encryption|master|deploy'
    r'|ssh|storage|service)[_-]?key|pass(?:word|wd|code|phrase)|(?<![^\W_])(?:pin|pwd)|authorization'
    r'|credentials?|cookie)'
)
_SECRET_NAME = re.compile(rf'{_NAME_END}\Z', re.I)
# HTTP auth schemes, kept before the placeholder: `Authorization: Basic <redacted>`.
_SCHEME = r'(?:Basic|Bearer|Token|Digest|Negotiate|NTLM|ApiKey|AWS4-HMAC-SHA256)'
_BARE = re.compile(r'-?\d+(?:\.\d+)?(?:e[+-]?\d+)?|true|false', re.I)  # a number or a boolean


def is_secret_name(name: str) -> bool:
    """Whether `name` (a field, a header, a variable, a parameter) names a secret."""
    return _named(name[-64:])  # how a name ends is all that counts: a long one costs no more


@functools.lru_cache(maxsize=4096)  # a cassette's field names repeat: `content`, `part_kind`, ...
def _named(end: str) -> bool:
    return _SECRET_NAME.search(end) is not None


SECRET_PATTERNS: tuple[tuple[str, re.Pattern[str], str], ...] = (
    # (name, pattern, replacement): the replacement keeps what tells a reader which secret it was.
    (
        'private_key',  # the whole block, or to the end of the text when it was cut
        re.compile(
            r'-----BEGIN[A-Z0-9 ]{0,40} PRIVATE KEY(?: BLOCK)?-----(?:[^-]++|-(?!----END))*+'
            r'(?:-----END[A-Z0-9 ]{0,40} PRIVATE KEY(?: BLOCK)?-----)?'
        ),
        PLACEHOLDER,
    ),
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
    # Bearer anywhere: "Basic" and "Token" start ordinary sentences too (they are caught after a
    # secret's name, below). Any case: HTTP auth schemes are.
    ('bearer', re.compile(r'\b(Bearer)\s+(?!<redacted>)[A-Za-z0-9._~+/=-]{16,}', re.I), rf'\1 {PLACEHOLDER}'),
    (
        'url_credentials',  # the user may be empty; the password runs to the last `@` (a raw `@` in it)
        re.compile(r'\b([a-zA-Z][\w+.-]{0,31}://)[^/\s:@"\'\\]{0,256}:[^/\s"\'\\]{1,256}@'),
        rf'\1{PLACEHOLDER}@',
    ),
    (
        'url_param',  # names a secret only in a URL (others are caught by name, below)
        re.compile(
            r'([?&#;](?:key|code|auth|sig|signature|x-amz-signature|x-amz-credential)=)'
            r'(?!%3Credacted%3E|<redacted>)[^&\s"\'#\\]+',
            re.I,
        ),
        rf'\1{PLACEHOLDER}',
    ),
)
"""The fixed secret shapes scrubbed by default, `(name, pattern, replacement)`; names and JSON besides."""

# A header, env, YAML or INI line whose value is bare: all of it to the end of the line.
_LINE = re.compile(
    rf'^(?P<head>[ \t]*+(?:export[ \t]+)?(?P<q>["\']?)[\w.-]{{0,64}}?{_NAME_END}(?P=q)[ \t]*+[:=][ \t]*+)'
    rf'(?![\'"])(?!(?:{_SCHEME}[ \t]+)?<redacted>)(?P<scheme>{_SCHEME}[ \t]+)?(?P<value>[^\r\n]++)',
    re.M | re.I,
)
# `name=value`, `name: value`, `"name": "value"`, `name='value'`, anywhere: query strings, headers
# in prose, Python reprs (`'key': `, `key=`), JSON that does not parse (cut, or escaped in text).
_ASSIGNMENT = re.compile(
    rf'(?P<name>{_NAME_END})(?P<q>\\{{0,6}}["\']|)(?P<sep>[ \t]*+(?::=|=>|[:=])[ \t]*+)'
    rf'(?!(?:{_SCHEME}[ \t]+)?(?:\\{{0,6}}["\'])?<redacted>)'
    r'(?:(?P<dq>")(?:[^"\\\n]|\\.)++"'
    r"|(?P<sq>')(?:[^'\\\n]|\\.)++'"
    r'|(?P<eq>\\{1,6}["\'])(?:(?!(?P=eq))[^\n])++(?P=eq)'
    rf'|(?P<scheme>{_SCHEME}[ \t]+)?(?P<bare>[^\s"\'`,;&)}}\]\\]++))',
    re.I,
)
# A list or an object under a secret's name in text that is not whole JSON: all of it, to its closing bracket.
_CONTAINER = re.compile(rf'{_NAME_END}(?:\\{{0,6}}["\'])?[ \t]*+(?::=|=>|[:=])[ \t]*+(?=[\[{{])', re.I)
_BRACKET = re.compile(r'"(?:[^"\\\n]|\\.)*+"|[\[\]{}]')
_WIDEST = 65_536
"""How far a container in text is followed to its closing bracket; past that, that far is replaced."""
_GATES: dict[str, tuple[str, ...]] = {
    'private_key': ('private key',),
    'anthropic_key': ('sk-ant-',),
    'openai_key': ('sk-',),
    'stripe_key': ('k_live_', 'k_test_'),
    'google_key': ('aiza',),
    'groq_key': ('gsk_',),
    'xai_key': ('xai-',),
    'huggingface_token': ('hf_',),
    'github_token': ('ghp_', 'gho_', 'ghu_', 'ghs_', 'ghr_', 'github_pat_'),
    'slack_token': ('xox',),
    'aws_access_key': ('akia', 'asia', 'agpa', 'aida', 'aroa'),
    'jwt': ('eyj',),
    'bearer': ('bearer',),
    'url_credentials': ('@',),
    'url_param': ('key=', 'code=', 'auth=', 'sig=', 'signature=', 'credential='),
}
"""What each pattern needs in the lowercased text: a substring test is ~100x cheaper than a regex scan."""
_ANY_NEEDED = re.compile('|'.join(sorted({re.escape(needed) for gate in _GATES.values() for needed in gate})))
_NAMED = re.compile(
    r'(?:token|secret|key|pass(?:word|wd|code|phrase)?|pin|pwd|authorization|credentials?|cookie)'
    r'\\{0,6}["\']?[ \t]*(?:[:=]|=>)'
)
"""What `_LINE` and `_ASSIGNMENT` need, in the lowercased text."""
_JSONISH = re.compile(r'\s*[\[{].*[\]}]\s*', re.S)
_DEEPEST = 16
"""JSON nested in strings deeper than this is scrubbed as text."""


def _line(match: re.Match[str]) -> str:
    return f'{match["head"]}{match["scheme"] or ""}{PLACEHOLDER}'


def _assignment(match: re.Match[str]) -> str:
    head = f'{match["name"]}{match["q"]}{match["sep"]}'
    quote = match['dq'] or match['sq'] or match['eq']
    if not quote and _BARE.fullmatch(match['bare']):  # a number or a boolean: a string now, quoted as its name is
        quote = '"' if '"' in match['q'] else "'"
    if quote:
        return f'{head}{quote}{PLACEHOLDER}{quote}'
    return f'{head}{match["scheme"] or ""}{PLACEHOLDER}'


def _close(text: str, start: int) -> int:
    # Where the bracket at `start` closes (strings skipped), or `_WIDEST` on when it does not:
    # each character is followed once at most, as the caller goes on after it.
    depth = 0
    for token in _BRACKET.finditer(text, start, min(len(text), start + _WIDEST)):
        bracket = token[0]
        if bracket in ('[', '{'):
            depth += 1
        elif bracket in (']', '}'):
            depth -= 1
            if depth == 0:
                return token.end()
    return min(len(text), start + _WIDEST)


def _containers(text: str) -> str:
    pieces: list[str] = []
    done = 0
    for match in _CONTAINER.finditer(text):
        if match.start() < done:  # inside a container already replaced
            continue
        pieces += [text[done : match.end()], PLACEHOLDER]
        done = _close(text, match.end())
    return ''.join(pieces) + text[done:] if pieces else text


def _text_rules(text: str) -> str:
    low = text.lower()
    if _ANY_NEEDED.search(low):
        for name, pattern, replacement in SECRET_PATTERNS:
            if any(needed in low for needed in _GATES[name]):
                text = pattern.sub(replacement, text)
    if (':' in text or '=' in text) and _NAMED.search(low):
        text = _ASSIGNMENT.sub(_assignment, _containers(_LINE.sub(_line, text)))
    return text


def _clean_string(text: str, depth: int) -> str:
    # A string holding JSON is scrubbed as JSON (a secret's name found at any depth), rewritten if changed.
    if depth < _DEEPEST and _JSONISH.fullmatch(text):
        try:
            inner: object = json.loads(text)
        except (ValueError, RecursionError):
            inner = None
        if isinstance(inner, dict | list):
            box: list[Any] = [inner]
            return json.dumps(box[0], ensure_ascii=False) if _scrub_tree(box, depth + 1) else text
    return _text_rules(text)


def _scrub_tree(root: list[Any], depth: int) -> bool:
    # Replaces secrets in place in `root` (a private copy), iteratively: no depth is too deep.
    changed = False
    leaves: list[tuple[Any, Any]] = []
    pending: list[tuple[Any, bool]] = [(root, False)]  # a dict or a list, and whether under a secret's name
    while pending:
        node, secret = pending.pop()
        items: list[tuple[Any, Any]] = (
            list(cast('dict[str, Any]', node).items())
            if isinstance(node, dict)
            else list(enumerate(cast('list[Any]', node)))
        )
        for key, value in items:
            named = secret or (isinstance(key, str) and is_secret_name(key))
            if isinstance(value, dict | list):
                pending.append((cast(Any, value), named))
            elif named and value not in (None, '', PLACEHOLDER):
                node[key] = PLACEHOLDER
                changed = True
            elif isinstance(value, str):
                cleaned = _clean_string(value, depth)
                if cleaned != value:
                    node[key] = cleaned
                    changed = True
                leaves.append((cast(Any, node), key))
    if depth == 0 and leaves:  # nested JSON is in its outer string by now: one scan of them all
        found = sorted(known_secrets(node[key] for node, key in leaves), key=len, reverse=True)
        for node, key in leaves if found else ():
            text = node[key]
            for value in found:
                text = text.replace(value, PLACEHOLDER)
            if text != node[key]:
                node[key] = text
                changed = True
    return changed


def scrub(data: Any) -> Any:
    """JSON-compatible `data` with every secret replaced (a new value; `data` is left alone)."""
    original = json.dumps(data, ensure_ascii=False)
    box: list[Any] = [json.loads(original)]
    return box[0] if _scrub_tree(box, 0) else data


def scrub_text(text: str) -> str:
    """`text` (prose, a log, a header block, JSON) with every secret replaced."""
    return cast(str, scrub(text))
