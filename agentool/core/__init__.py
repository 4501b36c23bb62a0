"""Core components: model, manager, registry and the pydantic-ai capability."""
