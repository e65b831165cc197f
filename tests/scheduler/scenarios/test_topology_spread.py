"""Topology spread constraint scenarios (docs/semantics.md §14), computed by hand.

Nodes are large (20 CPUs) and pods small (1 CPU) unless said, so room never decides:
bin-packing alone puts a job on the busiest node, and among empty identical nodes on
the first by name. ``spread(app)`` is maxSkew 1 over zones, DoNotSchedule, selecting
``app=<app>`` in the pod's own namespace. Every scenario is also checked by the kit's
independent rule checker.
"""

from __future__ import annotations

from typing import Any

import pytest

from tests.kits.affinity import HOST, spread, violations, with_spread, zoned
from tests.kits.worlds import Scenario, check, job, node, pod, queue, taint

Q = queue("q")
ABC = [zoned("a0", "a"), zoned("b0", "b"), zoned("c0", "c")]


def running(name: str, where: str, app: str, **args: Any) -> list[dict[str, Any]]:
    return pod(name, state="Running", node=where, labels={"app": app}, **args)


def spread_job(name: str, size: int, *constraints: dict[str, Any], **args: Any) -> list[Any]:
    """A gang labelled ``app=<name>`` whose pods carry ``constraints``."""
    return with_spread(job(name, "q", size, labels={"app": name}, **args), *constraints)


SCENARIOS = [
    # Three pods over three empty zones, skew 1: one per zone (bin-packing would stack
    # them on a0).
    Scenario(
        "gang-over-three-zones",
        [Q, *ABC, spread_job("s", 3, spread("s"))],
        binds={"s-0": "a0", "s-1": "b0", "s-2": "c0"},
    ),
    # Four pods over two zones of two nodes: two per zone; within a zone bin-packing
    # stacks them.
    Scenario(
        "gang-two-per-zone",
        [
            Q,
            zoned("a0", "a"),
            zoned("a1", "a"),
            zoned("b0", "b"),
            zoned("b1", "b"),
            spread_job("s", 4, spread("s")),
        ],
        binds={"s-0": "a0", "s-1": "b0", "s-2": "a0", "s-3": "b0"},
    ),
    # Existing pods count: zone a already has two, so the next two go to b and c.
    Scenario(
        "existing-pods-count",
        [
            Q,
            *ABC,
            *running("old-0", "a0", "s"),
            *running("old-1", "a0", "s"),
            spread_job("s", 2, spread("s")),
        ],
        binds={"s-0": "b0", "s-1": "c0"},
    ),
    # maxSkew 2: with a0 holding one, a second pod may join it (2 - 0 <= 2); bin-packing
    # prefers the busier a0.
    Scenario(
        "max-skew-two",
        [Q, *ABC, *running("old", "a0", "s"), spread_job("s", 1, spread("s", skew=2))],
        binds={"s-0": "a0"},
    ),
    # Skew cannot be met: zones a and b hold one pod each and zone c none, so a and b are
    # refused (1 + 1 - 0 > 1); c0 would do, but has no room left. The gang waits and its
    # reasons name the spread constraint on the two nodes it refused.
    Scenario(
        "skew-unmeetable",
        [
            Q,
            zoned("a0", "a"),
            zoned("b0", "b"),
            zoned("c0", "c", cpu="1"),
            *running("old-a", "a0", "s"),
            *running("old-b", "b0", "s"),
            *running("filler", "c0", "x"),
            spread_job("s", 1, spread("s")),
        ],
        pending=["s"],
        reasons={"s": ["2 node(s) didn't match pod topology spread constraints"]},
    ),
    # A node without the topology key is refused (missing required label): nx would
    # win by name and by bin-packing.
    Scenario(
        "missing-key-refused",
        [
            Q,
            node("a0", labels={HOST: "a0"}),
            zoned("b0", "b"),
            *running("x", "a0", "x"),
            spread_job("s", 1, spread("s")),
        ],
        binds={"s-0": "b0"},
    ),
    Scenario(
        "missing-key-reason",
        [Q, node("n0"), node("n1"), spread_job("s", 1, spread("s"))],
        pending=["s"],
        reasons={
            "s": ["2 node(s) didn't match pod topology spread constraints (missing required label)"]
        },
    ),
    # The pod not matching its own selector does not add itself: zone a holds one db pod,
    # b none; a web pod spreading db pods may still go to a (1 + 0 - 0 <= 1), where
    # bin-packing sends it.
    Scenario(
        "pod-not-matching-own-selector",
        [
            Q,
            zoned("a0", "a"),
            zoned("b0", "b"),
            *running("db", "a0", "db"),
            with_spread(job("w", "q", 1, labels={"app": "web"}), spread("db")),
        ],
        binds={"w-0": "a0"},
    ),
    # Only the pod's own namespace counts: two s pods in namespace other on a0 do not
    # push the new one away.
    Scenario(
        "other-namespace-ignored",
        [
            Q,
            *ABC,
            *running("o-0", "a0", "s", namespace="other"),
            *running("o-1", "a0", "s", namespace="other"),
            spread_job("s", 1, spread("s")),
        ],
        binds={"s-0": "a0"},
    ),
    # minDomains 3 with only two zones eligible: the global minimum counts as 0, so a zone
    # holding one pod takes no more (1 + 1 - 0 > 1): two pods, two zones, the third waits.
    Scenario(
        "min-domains",
        [Q, zoned("a0", "a"), zoned("b0", "b"), spread_job("s", 3, spread("s", minDomains=3))],
        pending=["s"],
        reasons={"s": ["didn't match pod topology spread constraints"]},
    ),
    # Same without minDomains: zones a and b take 2 and 1.
    Scenario(
        "without-min-domains",
        [Q, zoned("a0", "a"), zoned("b0", "b"), spread_job("s", 3, spread("s"))],
        binds={"s-0": "a0", "s-1": "b0", "s-2": "a0"},
    ),
    # nodeAffinityPolicy Honor (default): the pod may only use zones a and b (nodeSelector
    # pool=x), so zone c's emptiness does not hold it back: after a and b hold one each
    # (c holds pods on a node the pod cannot use), the third pod joins a.
    Scenario(
        "node-affinity-policy-honor",
        [
            Q,
            zoned("a0", "a", labels={"pool": "x"}),
            zoned("b0", "b", labels={"pool": "x"}),
            zoned("c0", "c"),
            *running("old-a", "a0", "s"),
            *running("old-b", "b0", "s"),
            spread_job("s", 1, spread("s"), node_selector={"pool": "x"}),
        ],
        binds={"s-0": "a0"},
    ),
    # nodeAffinityPolicy Ignore: zone c counts (0 pods), so a and b are 1 ahead: a pod
    # restricted to a and b cannot go anywhere (1 + 1 - 0 > 1).
    Scenario(
        "node-affinity-policy-ignore",
        [
            Q,
            zoned("a0", "a", labels={"pool": "x"}),
            zoned("b0", "b", labels={"pool": "x"}),
            zoned("c0", "c"),
            *running("old-a", "a0", "s"),
            *running("old-b", "b0", "s"),
            spread_job(
                "s", 1, spread("s", nodeAffinityPolicy="Ignore"), node_selector={"pool": "x"}
            ),
        ],
        pending=["s"],
    ),
    # nodeTaintsPolicy Honor: zone c's only node is tainted and not tolerated, so it is
    # not an eligible domain; a and b hold one each and the pod may join either (a0).
    Scenario(
        "node-taints-policy-honor",
        [
            Q,
            zoned("a0", "a"),
            zoned("b0", "b"),
            zoned("c0", "c", taints=[taint("gpu")]),
            *running("old-a", "a0", "s"),
            *running("old-b", "b0", "s"),
            spread_job("s", 1, spread("s", nodeTaintsPolicy="Honor")),
        ],
        binds={"s-0": "a0"},
    ),
    # nodeTaintsPolicy Ignore (default): the tainted zone c counts with 0, so a and b are
    # refused by the skew and c by the taint: pending.
    Scenario(
        "node-taints-policy-ignore",
        [
            Q,
            zoned("a0", "a"),
            zoned("b0", "b"),
            zoned("c0", "c", taints=[taint("gpu")]),
            *running("old-a", "a0", "s"),
            *running("old-b", "b0", "s"),
            spread_job("s", 1, spread("s")),
        ],
        pending=["s"],
    ),
    # Per hostname, skew 1, over three nodes of one zone: one pod per node first.
    Scenario(
        "hostname-spread",
        [
            Q,
            zoned("n0", "a"),
            zoned("n1", "a"),
            zoned("n2", "a"),
            spread_job("s", 3, spread("s", HOST)),
        ],
        binds={"s-0": "n0", "s-1": "n1", "s-2": "n2"},
    ),
    # ScheduleAnyway: a preference, not a filter: zone a holds two, b none; the pod goes
    # to b0 though bin-packing prefers the busy a0.
    Scenario(
        "schedule-anyway-prefers-emptier",
        [
            Q,
            zoned("a0", "a"),
            zoned("b0", "b"),
            *running("o-0", "a0", "s"),
            *running("o-1", "a0", "s"),
            spread_job("s", 1, spread("s", hard=False)),
        ],
        binds={"s-0": "b0"},
    ),
    # ScheduleAnyway never blocks: only zone a has room; the pod goes there.
    Scenario(
        "schedule-anyway-never-blocks",
        [
            Q,
            zoned("a0", "a"),
            zoned("b0", "b", cpu="1"),
            *running("o", "a0", "s"),
            *running("full", "b0", "x"),
            spread_job("s", 1, spread("s", hard=False)),
        ],
        binds={"s-0": "a0"},
    ),
    # Two constraints at once: per zone (skew 1) and per hostname (skew 1): zone a has
    # two nodes; four pods end one per node in a and b and never two on a node early.
    Scenario(
        "zone-and-host",
        [
            Q,
            zoned("a0", "a"),
            zoned("a1", "a"),
            zoned("b0", "b"),
            zoned("b1", "b"),
            spread_job("s", 4, spread("s"), spread("s", HOST)),
        ],
        binds={"s-0": "a0", "s-1": "b0", "s-2": "a1", "s-3": "b1"},
    ),
]


@pytest.mark.parametrize("scenario", SCENARIOS, ids=str)
def test_topology_spread(scenario: Scenario) -> None:
    result = check(scenario)
    assert violations(scenario.objects, result) == []
