"""generate_dependency_graph (data) and generate_mermaid_graph (Mermaid text)."""

from __future__ import annotations

import json

from agentool import AgenToolRegistry, RoutingConfig, create_agentool
from tests.agentools import PingInput, ping


async def pong() -> str:
    """Unrouted helper tool."""
    return 'ping'


def make(name: str, *dependencies: str) -> None:
    routes = RoutingConfig(operation_map={'ping': 'ping'})
    create_agentool(name, PingInput, routes, [ping, pong], dependencies=list(dependencies))


def test_dependency_graph_data(registry: AgenToolRegistry) -> None:
    make('storage')
    make('session', 'storage', 'crypto', 'storage')
    make('auth', 'session', 'storage')
    graph = registry.generate_dependency_graph()
    assert graph == {
        # Declared dependencies as given (the guide keeps repeats), then routed agentools.
        'agentools': {'auth': ['session', 'storage'], 'session': ['storage', 'crypto', 'storage'], 'storage': []},
        'missing': {'session': ['crypto']},
        'tools': {'auth': ['ping', 'pong'], 'session': ['ping', 'pong'], 'storage': ['ping', 'pong']},
    }
    json.dumps(graph)
    without_tools = registry.generate_dependency_graph(include_tools=False)
    assert 'tools' not in without_tools
    assert without_tools['agentools'] == graph['agentools']


def test_mermaid_graph(registry: AgenToolRegistry) -> None:
    make('storage')
    make('session', 'storage', 'crypto')
    text = registry.generate_mermaid_graph()
    assert text.splitlines() == [
        'graph LR',
        '    a0("session")',
        '    a1("storage")',
        '    m0["crypto (missing)"]:::missing',
        '    a0 --> a1',
        '    a0 --> m0',
        '    a0 -.-> a0_t0["ping()"]',
        '    a0 -.-> a0_t1["pong()"]',
        '    a1 -.-> a1_t0["ping()"]',
        '    a1 -.-> a1_t1["pong()"]',
        '    classDef missing stroke-dasharray: 5 5',
    ]
    assert (
        registry.generate_mermaid_graph(include_tools=False).splitlines()[-1]
        == '    classDef missing stroke-dasharray: 5 5'
    )


def test_mermaid_labels_are_escaped(registry: AgenToolRegistry) -> None:
    make('say "hi" <b>#1</b> `x`  next')
    first_node = registry.generate_mermaid_graph(include_tools=False).splitlines()[1]
    assert first_node == '    a0("say #quot;hi#quot; #lt;b#gt;#35;1#lt;/b#gt; #96;x#96;  next")'


def test_mermaid_directives_cannot_leave_a_label(registry: AgenToolRegistry) -> None:
    # Mermaid reads `%%{...}%%` anywhere in the text as a directive that reconfigures the diagram.
    make("x%%{init: {'theme':'forest'}}%%", "dep%%{init: {'theme':'dark'}}%%")
    text = registry.generate_mermaid_graph()
    assert not {'%', '{', '}', "'"} & set(text)
    assert '    a0("x#37;#37;#123;init: #123;#39;theme#39;:#39;forest#39;#125;#125;#37;#37;")' in text
    assert '#39;dark#39;' in text  # the missing dependency's dashed node is escaped too


def test_mermaid_labels_keep_spacing_apart(registry: AgenToolRegistry) -> None:
    # Control characters are refused in names; a label keeps the spaces it is given, never folds them.
    make('a b')
    make('a  b')
    assert registry.generate_mermaid_graph(include_tools=False).splitlines()[1:3] == [
        '    a0("a  b")',
        '    a1("a b")',
    ]


def test_empty_graph(registry: AgenToolRegistry) -> None:
    assert registry.generate_dependency_graph() == {'agentools': {}, 'missing': {}, 'tools': {}}
    assert registry.generate_mermaid_graph() == 'graph LR\n'
