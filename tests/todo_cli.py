"""Registers the todo agentool at import, for `agentool --import tests.todo_cli`."""

from tests.todo_agentool import create_todo

todo = create_todo()
