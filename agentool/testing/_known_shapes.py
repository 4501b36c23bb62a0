"""Secrets of a known vendor shape, found by Yelp's detect-secrets regex plugins (imported on first use).

Left out: keyword and high-entropy plugins (slow, and an id is as random as a key: the scrubber
judges names), public IPs, private keys (the scrubber takes the whole PEM block) and `name = value`
plugins (the scrubber's own rule catches those names).
"""

from __future__ import annotations

import functools
import importlib
import re
from collections.abc import Iterable
from typing import TYPE_CHECKING, cast

if TYPE_CHECKING:
    from detect_secrets.plugins.base import RegexBasedDetector


_EDGES = ' \t\r\n"=:'
"""What a pattern may match around a token (a space, a quote, the `=` or `:` before it), not part of it."""
_SHORTEST = 8
"""A shorter capture (a plugin's sub-group) is no secret on its own, and replacing it would maim text."""


_PLUGINS = (
    'aws.AWSKeyDetector',
    'azure_storage_key.AzureStorageKeyDetector',
    'basic_auth.BasicAuthDetector',
    'discord.DiscordBotTokenDetector',
    'github_token.GitHubTokenDetector',
    'gitlab_token.GitLabTokenDetector',
    'jwt.JwtTokenDetector',
    'mailchimp.MailchimpDetector',
    'openai.OpenAIDetector',
    'pypi_token.PypiTokenDetector',
    'sendgrid.SendGridDetector',
    'slack.SlackDetector',
    'square_oauth.SquareOAuthDetector',
    'stripe.StripeDetector',
    'telegram_token.TelegramBotTokenDetector',
    'twilio.TwilioKeyDetector',
)
"""The plugins used, as `<module in detect_secrets.plugins>.<class>`."""


@functools.cache
def _plugins() -> tuple[RegexBasedDetector, ...]:
    named = (path.split('.') for path in _PLUGINS)
    return tuple(getattr(importlib.import_module(f'detect_secrets.plugins.{module}'), name)() for module, name in named)


NEEDED: dict[str, tuple[str, ...]] = {
    'AWSKeyDetector': ('A3T', 'ABIA', 'ACCA', 'AKIA', 'ASIA', 'aws'),
    'MailchimpDetector': ('-us',),
    'SlackDetector': ('xox', 'hooks.slack.com'),
    'StripeDetector': ('k_live_',),
}
"""What every pattern of the slowest plugins holds (any case); a test checks it against the installed ones."""


def known_secrets(texts: Iterable[str]) -> set[str]:
    """Every secret value of a known shape in `texts`, scanned as one text (one pass per pattern)."""
    # Lines of their own: no plugin's pattern crosses a newline, so no match spans two texts.
    text = '\n'.join(texts)
    low = text.lower()
    found: set[str] = set()
    for plugin in _plugins():
        needed = NEEDED.get(type(plugin).__name__)
        if needed is None or any(part.lower() in low for part in needed):
            # Typed `Iterable[Pattern]` upstream (a bare `Pattern`): every pattern is a str pattern.
            patterns = cast('Iterable[re.Pattern[str]]', plugin.denylist)  # pyright: ignore[reportUnknownMemberType]
            found.update(_value(match) for pattern in patterns for match in pattern.finditer(text))
    return {value for value in found if len(value) >= _SHORTEST}


def _value(match: re.Match[str]) -> str:
    # The plugins' own `analyze_string` yields a pattern's groups where it has any, which is the
    # secret after a name (`aws_secret_access_key = "(...)"`) but only the prefix of a token
    # (GitLab's `(glpat|...)-...`): the longest group when it is long enough, else the whole match.
    groups = [group for group in match.groups() if group]
    longest = max(groups, key=len, default='').strip(_EDGES)
    return longest if len(longest) >= _SHORTEST else match[0].strip(_EDGES)
