"""The session's dynamic-constraint extension point: asked on every placement, never cached.

A toy plugin forbids a node once it holds a pod labelled ``spread=yes`` and
scores one node up; a gang of such pods must then take one node each, the
score must steer the choice, a fit failure must name the plugin's reason, and
pods the plugin does not constrain keep the incremental path's decisions.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from scheduler.actions.allocate import AllocateAction
from scheduler.api.pods import PodInfo
from scheduler.cache.snapshotting import build_snapshot
from scheduler.config import SchedulerConfig
from scheduler.framework import extension_points as ep
from scheduler.framework.session import Session
from scheduler.plugins import builtin_plugins
from tests.kits.worlds import job, node, queue, sourced

REASON = "node(s) already hold a spread pod"


class _OnePerNode:
    """Forbids nodes holding a ``spread=yes`` pod placed in this cycle; prefers ``favourite``."""

    def __init__(self, favourite: str = "") -> None:
        self.favourite = favourite

    def on_session_open(self, session: Session) -> None:
        nodes = session.snapshot.nodes
        taken = np.zeros(len(nodes), dtype=bool)
        bonus = np.array([1e7 if n == self.favourite else 0.0 for n in nodes.names])

        def constrain(pod: PodInfo) -> ep.DynamicConstraint | None:
            if pod.labels.get("spread") != "yes":
                return None
            return ep.DynamicConstraint(parts=[(~taken, REASON)], score=bonus.copy())

        def on_allocate(pod: PodInfo) -> None:
            if pod.labels.get("spread") == "yes":
                taken[pod.node] = True

        def on_deallocate(pod: PodInfo) -> None:
            if pod.labels.get("spread") == "yes":
                taken[pod.node] = False

        session.add_dynamic_constraint(constrain)
        session.add_event_handlers(on_allocate, on_deallocate)


def _spread_job(name: str, size: int) -> list[Any]:
    objects: list[Any] = job(name, "q", size, cpu="1", min_member=size)
    for obj in objects:
        if obj["kind"] == "Pod":
            obj["metadata"].setdefault("labels", {})["spread"] = "yes"
    return objects


def _session(objects: list[Any], extra: Any) -> Session:
    config = SchedulerConfig(actions=("allocate",))
    snapshot = build_snapshot(sourced(objects)).snapshot
    session = Session(snapshot, config)
    for plugin in [*builtin_plugins(config), extra]:
        plugin.on_session_open(session)
    return session


def _nodes(count: int) -> list[Any]:
    return [node(f"n{i}", gpus=0, cpu="16") for i in range(count)]


def test_gang_members_take_one_node_each() -> None:
    session = _session([queue("q", gpu_quota=-1), *_nodes(3), _spread_job("g", 3)], _OnePerNode())
    AllocateAction().execute(session)
    placed = [n for _, n in session.decisions.binds]
    assert sorted(placed) == [0, 1, 2]


def test_gang_that_cannot_spread_is_not_started_and_says_why() -> None:
    session = _session([queue("q", gpu_quota=-1), *_nodes(2), _spread_job("g", 3)], _OnePerNode())
    AllocateAction().execute(session)
    assert session.decisions.binds == []
    assert any(REASON in r for r in session.job_reasons.get("default/g", [])), session.job_reasons


def test_dynamic_score_steers_the_choice() -> None:
    session = _session(
        [queue("q", gpu_quota=-1), *_nodes(3), _spread_job("g", 1)], _OnePerNode(favourite="n2")
    )
    AllocateAction().execute(session)
    assert [session.snapshot.nodes.names[n] for _, n in session.decisions.binds] == ["n2"]


def test_unconstrained_pods_decide_as_without_the_plugin() -> None:
    objects = [queue("q", gpu_quota=-1), *_nodes(4), job("plain", "q", 6, cpu="3", min_member=6)]
    with_plugin = _session(objects, _OnePerNode())
    AllocateAction().execute(with_plugin)
    config = SchedulerConfig(actions=("allocate",))
    without = Session(build_snapshot(sourced(objects)).snapshot, config)
    for plugin in builtin_plugins(config):
        plugin.on_session_open(without)
    AllocateAction().execute(without)
    assert [n for _, n in with_plugin.decisions.binds] == [n for _, n in without.decisions.binds]
