"""Incremental placement of identical tasks gives exactly the decisions of full evaluations.

The session re-scores only changed nodes plus the best unchanged node for a
pod whose request and constraints equal the previous one's (a gang's
identical tasks). That is valid only because node scores are order-stable
(extension_points). Random clusters with GPU and CPU gangs, taints,
selectors, nominated nodes, releasing pods and both placement strategies are
scheduled twice, incremental on and off; binds and pipelined pods must match.
"""

from __future__ import annotations

from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from scheduler.actions.allocate import AllocateAction
from scheduler.cache.snapshotting import build_snapshot
from scheduler.config import SchedulerConfig
from scheduler.framework.session import Session
from scheduler.plugins import builtin_plugins
from tests.kits.worlds import job, node, queue, sourced, taint


@st.composite
def clusters(draw: st.DrawFn) -> tuple[list[Any], SchedulerConfig]:
    objects: list[Any] = [queue("q", gpu_quota=-1)]
    node_count = draw(st.integers(2, 14))
    names = [f"n{i:02d}" for i in range(node_count)]
    for name in names:
        tainted = draw(st.booleans()) and draw(st.booleans())
        objects.append(
            node(
                name,
                gpus=draw(st.sampled_from([0, 2, 4, 8])),
                cpu=str(draw(st.sampled_from([4, 8, 16]))),
                labels={"pool": draw(st.sampled_from(["a", "b"]))},
                taints=[taint("dedicated")] if tainted else [],
            )
        )
    for r in range(draw(st.integers(0, 8))):
        where = draw(st.sampled_from(names))
        state = draw(st.sampled_from(["Running", "Releasing"]))
        objects.append(
            job(
                f"run{r}",
                "q",
                1,
                gpus=draw(st.sampled_from([0, 1, 2])),
                cpu="1",
                states=[state],
                nodes=[where],
            )
        )
    for j in range(draw(st.integers(1, 8))):
        size = draw(st.integers(1, 9))
        extra: dict[str, Any] = {}
        if draw(st.booleans()):
            extra["node_selector"] = {"pool": draw(st.sampled_from(["a", "b"]))}
        if draw(st.booleans()):
            extra["tolerations"] = [{"key": "dedicated", "operator": "Exists"}]
        pods = job(
            f"g{j}",
            "q",
            size,
            gpus=draw(st.sampled_from([0, 1, 2])),
            cpu=str(draw(st.sampled_from([1, 2, 3]))),
            min_member=draw(st.integers(1, size)),
            **extra,
        )
        if draw(st.booleans()):
            for obj in pods:
                if obj["kind"] == "Pod":
                    obj.setdefault("status", {})["nominatedNodeName"] = draw(st.sampled_from(names))
                    break
        objects.append(pods)
    strategy = draw(st.sampled_from(["binpack", "spread"]))
    config = SchedulerConfig(
        actions=("allocate",),
        gpu_placement=strategy,
        cpu_placement=draw(st.sampled_from(["binpack", "spread"])),
    )
    return objects, config


def _decide(objects: list[Any], config: SchedulerConfig, incremental: bool) -> tuple[Any, Any]:
    snapshot = build_snapshot(sourced(objects)).snapshot
    session = Session(snapshot, config)
    session.incremental_placement = incremental
    for plugin in builtin_plugins(config):
        plugin.on_session_open(session)
    AllocateAction().execute(session)
    names = snapshot.nodes.names
    binds = sorted((p.key, names[n]) for p, n in session.decisions.binds)
    pipelined = sorted((p.key, names[n]) for p, n in session.decisions.pipelined)
    return binds, pipelined


@settings(deadline=None)
@given(clusters())
def test_incremental_equals_full_evaluation(case: tuple[list[Any], SchedulerConfig]) -> None:
    objects, config = case
    assert _decide(objects, config, incremental=True) == _decide(objects, config, incremental=False)
