"""A cycle's session is freed when the cycle returns, without the cyclic collector.

Why: ``run_cycle`` pauses the collector while the cycle runs. If the session were
still referenced when the collector resumed, or held in a reference cycle (the
plugins' registered functions close over the session), the collector's next
passes would walk it, promote it to older generations and walk it there again,
cycle after cycle: in a long simulation that was most of the collector's time.
"""

from __future__ import annotations

import gc
import weakref
from typing import Any

import pytest

from scheduler import cycle
from scheduler.api.snapshot import ClusterSnapshot
from scheduler.cache.snapshotting import build_snapshot
from scheduler.config import SchedulerConfig
from scheduler.framework.session import Session
from tests.kits.worlds import job, node, queue, sourced


def _contended() -> list[Any]:
    """Two queues asking more than one node holds: allocate places, the rest wait."""
    objects: list[Any] = [
        queue("qa", gpu_quota=4, gpu_weight=1),
        queue("qb", gpu_quota=4, gpu_weight=1),
        node("n0", gpus=8, cpu="64"),
    ]
    objects += [job(f"j{i}", "qa" if i % 2 else "qb", 2, gpus=2) for i in range(6)]
    return objects


def test_the_session_is_freed_as_the_cycle_returns(monkeypatch: pytest.MonkeyPatch) -> None:
    opened: list[weakref.ref[Session]] = []
    open_session = cycle.open_session

    def noting(snapshot: ClusterSnapshot, config: SchedulerConfig) -> Session:
        session = open_session(snapshot, config)
        opened.append(weakref.ref(session))
        return session

    monkeypatch.setattr(cycle, "open_session", noting)
    snapshot = build_snapshot(sourced(_contended())).snapshot
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        result = cycle.run_cycle(snapshot, SchedulerConfig())
        assert result.binds  # the actions ran and decided something
        assert len(opened) == 1
        assert opened[0]() is None  # freed by reference counting alone
    finally:
        if was_enabled:
            gc.enable()


def _held(roots: list[Any]) -> list[Any]:
    """What ``roots`` hold through containers and functions' closures (not through other
    objects: the snapshot and the jobs outlive the session)."""
    seen: dict[int, Any] = {}
    stack = list(roots)
    while stack:
        item = stack.pop()
        if id(item) in seen:
            continue
        seen[id(item)] = item
        if isinstance(item, dict):
            stack.extend(item.values())
        elif isinstance(item, (list, tuple, set, frozenset)):
            stack.extend(item)
        elif callable(item) and getattr(item, "__closure__", None):
            stack.extend(cell.cell_contents for cell in item.__closure__)
    return list(seen.values())


def test_close_drops_every_registered_function() -> None:
    """A registration list added to ``Session.__init__`` but not to ``Session.close`` would
    keep the plugins' functions (which close over their state and often the session)
    alive: after ``close`` none may be held by the session, directly, in a container or
    in another function's closure (the combined order keys copy them)."""
    snapshot = build_snapshot(sourced(_contended())).snapshot
    session = cycle.open_session(snapshot, SchedulerConfig())
    registered = {
        id(item): item
        for value in vars(session).values()
        if isinstance(value, list)
        for item in value
        if callable(item)
    }
    assert len(registered) >= 10  # the plugins did register into the lists
    session.close()
    left = [item for item in _held(list(vars(session).values())) if id(item) in registered]
    assert not left, f"the session still holds {left} after close()"
