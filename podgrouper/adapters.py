"""User adapters from the ``podmuster.adapters`` Python entry point group.

Why this module exists: users add groupers for their own kinds without forking; the
registry stays an explicit value, so plugins are loaded here, on purpose, when the
operator starts (and by ``podmuster group``) — never as an import side effect.

An entry point names an object that is either an adapter entry, a sequence of them, or
a callable without arguments returning one of those.  An entry is the tuple
``(group, kind, version_or_*, grouper)`` where ``grouper`` implements
:class:`~integrations.base.WorkloadGrouper`.  A second grouper for a GVK — built in or
from another entry point — is rejected with :class:`AdapterError` naming both.
"""

from __future__ import annotations

import importlib.metadata
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any, Protocol

from integrations import base, registry

ENTRY_POINT_GROUP = "podmuster.adapters"


class AdapterError(Exception):
    """An entry point that cannot be loaded, is malformed, or duplicates a GVK."""


class EntryPointLike(Protocol):
    """What we use of :class:`importlib.metadata.EntryPoint` (tests pass their own)."""

    @property
    def name(self) -> str: ...

    @property
    def value(self) -> str: ...

    def load(self) -> Any: ...


@dataclass(frozen=True, slots=True)
class Adapter:
    """One user adapter and the entry point it came from."""

    gvk: base.GroupVersionKind
    grouper: base.WorkloadGrouper
    source: str


def installed_entry_points() -> tuple[EntryPointLike, ...]:
    """The entry points of group ``podmuster.adapters`` in the installed distributions."""
    return tuple(importlib.metadata.entry_points(group=ENTRY_POINT_GROUP))


def _entries(source: str, loaded: Any) -> list[Any]:
    if callable(loaded) and not isinstance(loaded, base.WorkloadGrouper):
        loaded = loaded()
    if isinstance(loaded, tuple) and len(loaded) == 4 and isinstance(loaded[0], str):
        return [loaded]
    if isinstance(loaded, Sequence) and not isinstance(loaded, str):
        return list(loaded)
    raise AdapterError(
        f"entry point {source}: expected (group, kind, version, grouper) or a list of them, "
        f"got {type(loaded).__name__}"
    )


def _adapter(source: str, entry: Any) -> Adapter:
    if not (isinstance(entry, tuple) and len(entry) == 4):
        raise AdapterError(f"entry point {source}: entry {entry!r} is not a 4-tuple")
    group, kind, version, grouper = entry
    if not all(isinstance(v, str) for v in (group, kind, version)) or not kind or not version:
        raise AdapterError(f"entry point {source}: group, kind and version must be strings")
    if not isinstance(grouper, base.WorkloadGrouper):
        raise AdapterError(
            f"entry point {source}: {kind} grouper {grouper!r} has no name/group(ctx)"
        )
    return Adapter(base.GroupVersionKind(group, version, kind), grouper, source)


def load_adapters(entry_points: Iterable[EntryPointLike] | None = None) -> list[Adapter]:
    """Every adapter the entry points declare (default: the installed ones)."""
    points = installed_entry_points() if entry_points is None else tuple(entry_points)
    adapters: list[Adapter] = []
    for point in points:
        source = f"{point.name} = {point.value}"
        try:
            loaded = point.load()
        except Exception as exc:  # an import error in user code, reported with its source
            raise AdapterError(f"entry point {source}: cannot load: {exc}") from exc
        adapters.extend(_adapter(source, entry) for entry in _entries(source, loaded))
    return adapters


def register_adapters(groupers: registry.GrouperRegistry, adapters: Iterable[Adapter]) -> None:
    """Add ``adapters`` to ``groupers``; a GVK registered twice is an :class:`AdapterError`."""
    for adapter in adapters:
        existing = groupers.lookup_exact(adapter.gvk)
        if existing is not None:
            raise AdapterError(
                f"entry point {adapter.source}: {adapter.gvk} already has grouper "
                f"{existing.name!r}; duplicates are rejected"
            )
        groupers.register(adapter.gvk, adapter.grouper)


def build_registry(
    settings: base.GroupingSettings | None = None,
    entry_points: Iterable[EntryPointLike] | None = None,
) -> registry.GrouperRegistry:
    """The built-in registry plus the user adapters from ``entry_points``."""
    groupers = registry.build_registry(settings=settings)
    register_adapters(groupers, load_adapters(entry_points))
    return groupers
