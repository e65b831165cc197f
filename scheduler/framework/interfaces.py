"""The two contracts of the engine: a Plugin and an Action.

Why: keeping both at two members (as volcano and KAI do) means every behaviour
a plugin adds is a session callback with a written combine rule
(``framework.extension_points``) and actions never call plugins directly.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Protocol

if TYPE_CHECKING:
    from scheduler.framework.session import Session


class Plugin(Protocol):
    """Registers callbacks on the session when it opens."""

    name: str

    def on_session_open(self, session: Session) -> None: ...


class Action(Protocol):
    """One step of a cycle (allocate, reclaim, ...), acting only through Statements."""

    name: str

    def execute(self, session: Session) -> None: ...
