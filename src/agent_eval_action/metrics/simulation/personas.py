"""A scenario's `user_persona` given as an id: one of ADK's pre-built personas, read from
google-adk's own registry (the adk extra), so their text stays ADK's."""

from __future__ import annotations

from ...evalset.models import UserPersona


def resolve_persona(persona: UserPersona | str | None) -> UserPersona | None:
    """The persona object; ValueError for an id that is not one of ADK's."""
    if not isinstance(persona, str):
        return persona
    try:
        from google.adk.evaluation.simulation.pre_built_personas import (
            get_default_persona_registry,
        )
    except ImportError:
        raise ValueError(
            f'user_persona "{persona}" is a persona id: it needs google-adk installed (the '
            "adk extra), or give the persona as an object"
        ) from None
    registry = get_default_persona_registry()
    known = sorted(p.id for p in registry.get_registered_personas())
    if persona not in known:
        raise ValueError(
            f'user_persona "{persona}" is not one of ADK\'s personas ({", ".join(known)})'
        )
    return UserPersona.model_validate(registry.get_persona(persona).model_dump())
