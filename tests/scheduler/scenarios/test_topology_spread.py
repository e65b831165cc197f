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

from tests.kits.affinity import HOST, node_affinity, placed, spread, violations, with_spread, zoned
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


# --- a second, independent set (issue 15), computed by hand from kube-scheduler's
# PodTopologySpread rules: a node is allowed when matching pods in its domain + (1 if the
# pod matches the selector) - the fewest over eligible domains <= maxSkew. Unless said:
# nodes n0, n1 in zone a, n2 in zone b, n3 in zone c (20 CPUs); "w" pods are app=w;
# the incoming pod carries spread("w") (maxSkew 1 over zones, DoNotSchedule).

Obj = dict[str, Any]
FOUR = [zoned("n0", "a"), zoned("n1", "a"), zoned("n2", "b"), zoned("n3", "c")]
THREE = FOUR[:3]


def ws(*where: str, labels: Obj | None = None, **args: Any) -> list[Obj]:
    """Running app=w pods (or ``labels``), one per name in ``where`` (a node)."""
    out: list[Obj] = []
    for i, n in enumerate(where):
        out += placed(f"w{i}-{n}", n, labels or {"app": "w"}, **args)
    return out


def incoming(*constraints: Obj, name: str = "j", size: int = 1, **args: Any) -> list[Obj]:
    """A gang of app=w pods (unless ``labels`` says otherwise) with ``constraints``."""
    args.setdefault("labels", {"app": "w"})
    return with_spread(job(name, "q", size, **args), *constraints)


MORE_SCENARIOS = [
    # Counts a=2 (n0, n1), b=1, c=0; min 0: a gives 2+1-0=3, b 1+1-0=2, c 1 -> only n3.
    # Without the rule: n0 (busiest, lowest name).
    Scenario(
        "more-spread-to-the-empty-zone",
        [Q, *FOUR, *ws("n0", "n1", "n2"), incoming(spread("w"))],
        binds={"j-0": "n3"},
    ),
    # A gang of 4 over zones a (n0, n1), b (n2): j-0 -> n0 (tie); j-1: a gives 1+1-0=2
    # -> n2; j-2: a=b=1, both allowed, n0 and n2 tie on bin-packing -> n0; j-3: a gives
    # 2+1-1=2 -> n2. Two per zone.
    Scenario(
        "more-spread-gang-of-four-two-zones",
        [Q, *THREE, incoming(spread("w"), size=4)],
        binds={"j-0": "n0", "j-1": "n2", "j-2": "n0", "j-3": "n2"},
    ),
    # Spread per hostname over 3 nodes, gang of 5: n0, n1, n2, then all hold 1 (min 1) ->
    # n0 (tie, lowest name), then n0 gives 2+1-1=2 -> n1. Counts 2, 2, 1.
    Scenario(
        "more-spread-hostname-gang-of-five",
        [Q, *THREE, incoming(spread("w", HOST), size=5)],
        binds={"j-0": "n0", "j-1": "n1", "j-2": "n2", "j-3": "n0", "j-4": "n1"},
    ),
    # minDomains 3 with two zones (a: n0, b: n2): fewer eligible domains than minDomains,
    # so the min is 0 and each zone takes at most maxSkew=1 pod: a gang of 2 -> n0, n2.
    Scenario(
        "more-spread-min-domains-one-per-zone",
        [Q, zoned("n0", "a"), zoned("n2", "b"), incoming(spread("w", minDomains=3), size=2)],
        binds={"j-0": "n0", "j-1": "n2"},
    ),
    # ... and a gang of 3 cannot be placed: its third member finds both zones at 1
    # (1+1-0=2 > 1); the gang waits whole.
    Scenario(
        "more-spread-min-domains-gang-waits",
        [Q, zoned("n0", "a"), zoned("n2", "b"), incoming(spread("w", minDomains=3), size=3)],
        pending=["j"],
        reasons={"j": ["2 node(s) didn't match pod topology spread constraints"]},
    ),
    # minDomains 2 met by two eligible zones: the usual min applies. a=1 (n0), b=1 (n2):
    # min 1, both allowed -> n0 (bin-packing, lowest name).
    Scenario(
        "more-spread-min-domains-met",
        [
            Q,
            zoned("n0", "a"),
            zoned("n2", "b"),
            *ws("n0", "n2"),
            incoming(spread("w", minDomains=2)),
        ],
        binds={"j-0": "n0"},
    ),
    # nodeAffinityPolicy Honor (default) with a REQUIRED NODE AFFINITY pool NotIn [x]:
    # n2 (zone c, pool=x) is not eligible, so its emptiness does not lower the min.
    # a=1 (n0), b=1 (n1): min 1, both allowed -> n0.
    Scenario(
        "more-spread-honor-required-node-affinity",
        [
            Q,
            zoned("n0", "a"),
            zoned("n1", "b"),
            zoned("n2", "c", labels={"pool": "x"}),
            *ws("n0", "n1"),
            incoming(
                spread("w"),
                affinity=node_affinity({"key": "pool", "operator": "NotIn", "values": ["x"]}),
            ),
        ],
        binds={"j-0": "n0"},
    ),
    # ... with nodeAffinityPolicy Ignore zone c counts (min 0): a and b give 1+1-0=2 and
    # are refused, n2 fails the node affinity -> pending.
    Scenario(
        "more-spread-ignore-required-node-affinity",
        [
            Q,
            zoned("n0", "a"),
            zoned("n1", "b"),
            zoned("n2", "c", labels={"pool": "x"}),
            *ws("n0", "n1"),
            incoming(
                spread("w", nodeAffinityPolicy="Ignore"),
                affinity=node_affinity({"key": "pool", "operator": "NotIn", "values": ["x"]}),
            ),
        ],
        pending=["j"],
        reasons={"j": ["2 node(s) didn't match pod topology spread constraints"]},
    ),
    # Honor with a nodeSelector pool=y (n0 in a, n1 in b; n2 in c has no pool): eligible
    # a=2, b=1, min 1: a gives 2+1-1=2 (refused), b 1+1-1=1 -> n1. Without the rule: n0.
    Scenario(
        "more-spread-honor-node-selector",
        [
            Q,
            zoned("n0", "a", labels={"pool": "y"}),
            zoned("n1", "b", labels={"pool": "y"}),
            zoned("n2", "c"),
            *ws("n0", "n0", "n1"),
            incoming(spread("w"), node_selector={"pool": "y"}),
        ],
        binds={"j-0": "n1"},
    ),
    # nodeTaintsPolicy Honor with a tolerated taint: n2 (zone c, tainted gpu, tolerated)
    # stays eligible; a=1, b=1, c=0, min 0: a and b give 2 -> n2. Without the rule: n0.
    Scenario(
        "more-spread-taints-honor-tolerated",
        [
            Q,
            zoned("n0", "a"),
            zoned("n1", "b"),
            zoned("n2", "c", taints=[taint("gpu")]),
            *ws("n0", "n1"),
            incoming(
                spread("w", nodeTaintsPolicy="Honor"),
                tolerations=[{"key": "gpu", "operator": "Exists", "effect": "NoSchedule"}],
            ),
        ],
        binds={"j-0": "n2"},
    ),
    # nodeTaintsPolicy Honor, taint not tolerated: zone c is not eligible; min 1 -> n0.
    Scenario(
        "more-spread-taints-honor-untolerated",
        [
            Q,
            zoned("n0", "a"),
            zoned("n1", "b"),
            zoned("n2", "c", taints=[taint("gpu")]),
            *ws("n0", "n1"),
            incoming(spread("w", nodeTaintsPolicy="Honor")),
        ],
        binds={"j-0": "n0"},
    ),
    # nodeTaintsPolicy Ignore (default), taint not tolerated: zone c counts (min 0), a
    # and b are refused by the skew, n2 by its taint -> pending.
    Scenario(
        "more-spread-taints-ignore-untolerated",
        [
            Q,
            zoned("n0", "a"),
            zoned("n1", "b"),
            zoned("n2", "c", taints=[taint("gpu")]),
            *ws("n0", "n1"),
            incoming(spread("w")),
        ],
        pending=["j"],
        reasons={"j": ["2 node(s) didn't match pod topology spread constraints"]},
    ),
    # A pod that does not match its own selector (app=v, spreading app=w) adds 0 but is
    # still held to the skew: a=2 (n0), b=0: a gives 2+0-0=2 > 1 -> n2. Without: n0.
    Scenario(
        "more-spread-non-matching-pod-still-refused",
        [Q, *THREE, *ws("n0", "n0"), incoming(spread("w"), labels={"app": "v"})],
        binds={"j-0": "n2"},
    ),
    # ... while with a=1: 1+0-0=1 <= 1, n0 allowed -> n0 (bin-packing). A matching pod
    # would give 2 there (next row).
    Scenario(
        "more-spread-non-matching-pod-allowed",
        [Q, *THREE, *ws("n0"), incoming(spread("w"), labels={"app": "v"})],
        binds={"j-0": "n0"},
    ),
    Scenario(
        "more-spread-matching-pod-refused",
        [Q, *THREE, *ws("n0"), incoming(spread("w"))],
        binds={"j-0": "n2"},
    ),
    # Pods being deleted do not count for spread (kube-scheduler skips them): a holds one
    # Running and one Releasing w pod, b one Running: a=1, b=1 -> n0 allowed, bin-packing.
    # (Counting the Releasing pod would give a 2+1-1=2 and send the pod to n2.)
    Scenario(
        "more-spread-deleting-pods-not-counted",
        [
            Q,
            *THREE,
            *ws("n0", "n2"),
            *placed("w-old", "n0", {"app": "w"}, state="Releasing"),
            incoming(spread("w")),
        ],
        binds={"j-0": "n0"},
    ),
    # Bound (not yet Running) pods count: a=1 Bound on n0, b=0 -> 1+1-0=2 -> n2.
    Scenario(
        "more-spread-bound-pods-count",
        [Q, *THREE, *ws("n0", state="Bound"), incoming(spread("w"))],
        binds={"j-0": "n2"},
    ),
    # matchLabelKeys [rev]: the selector becomes app=w, rev In [2]; the two rev=1 pods on
    # n0 do not match, counts are all 0 -> n0 (bin-packing) ...
    Scenario(
        "more-spread-match-label-keys-new-revision",
        [
            Q,
            *THREE,
            *ws("n0", "n0", labels={"app": "w", "rev": "1"}),
            incoming(spread("w", matchLabelKeys=["rev"]), labels={"app": "w", "rev": "2"}),
        ],
        binds={"j-0": "n0"},
    ),
    # ... while a rev=1 pod sees a=2, b=0 -> n2.
    Scenario(
        "more-spread-match-label-keys-same-revision",
        [
            Q,
            *THREE,
            *ws("n0", "n0", labels={"app": "w", "rev": "1"}),
            incoming(spread("w", matchLabelKeys=["rev"]), labels={"app": "w", "rev": "1"}),
        ],
        binds={"j-0": "n2"},
    ),
    # A gang of 3 over zones a (n0) and b (n1, full: 1 CPU held by a filler): j-0 -> n0,
    # j-1 is refused n0 (1+1-0=2) and has no room on n1 -> the gang waits whole.
    Scenario(
        "more-spread-gang-cannot-fit-waits-whole",
        [
            Q,
            zoned("n0", "a"),
            zoned("n1", "b", cpu="1"),
            *placed("filler", "n1"),
            incoming(spread("w"), size=3),
        ],
        pending=["j"],
        reasons={"j": ["1 node(s) didn't match pod topology spread constraints"]},
    ),
    # DoNotSchedule refuses a node without the key: "bare" (no zone) is bin-packing's
    # choice but refused; of the zoned nodes, a=1 (n0), b=0: n0 gives 1+1-0=2 -> n2.
    Scenario(
        "more-spread-keyless-node-refused",
        [
            Q,
            zoned("n0", "a"),
            zoned("n2", "b"),
            node("bare"),
            *placed("big", "bare", cpu="5"),
            *ws("n0"),
            incoming(spread("w")),
        ],
        binds={"j-0": "n2"},
    ),
    # ScheduleAnyway never refuses, not even a node without the key: "bare" is the
    # busiest -> bare.
    Scenario(
        "more-spread-schedule-anyway-keyless-node-allowed",
        [
            Q,
            zoned("n0", "a"),
            node("bare"),
            *placed("big", "bare", cpu="5"),
            incoming(spread("w", hard=False)),
        ],
        binds={"j-0": "bare"},
    ),
    # ScheduleAnyway prefers the emptier domain even within maxSkew: maxSkew 5, a=2 (n0,
    # with a filler too), b=0 -> n2, though bin-packing alone would pick n0.
    Scenario(
        "more-spread-schedule-anyway-within-skew",
        [
            Q,
            *THREE,
            *placed("filler", "n0", cpu="5"),
            *ws("n0", "n0"),
            incoming(spread("w", skew=5, hard=False)),
        ],
        binds={"j-0": "n2"},
    ),
    # Pods of any scheduler count: two default-scheduler w pods on n0 make a=2, b=0 ->
    # n2 (a gives 3).
    Scenario(
        "more-spread-foreign-pods-count",
        [Q, *THREE, *ws("n0", "n0", scheduler_name="default-scheduler"), incoming(spread("w"))],
        binds={"j-0": "n2"},
    ),
    # Only nodes carrying every DoNotSchedule constraint's key are counted (kube-scheduler's
    # PodTopologySpread PreFilter skips a node failing nodeLabelsMatchSpreadConstraints,
    # "ALL topology keys in spread constraints are present"). Constraints: zone
    # (maxSkew 1) and rack (maxSkew 5). n1 (zone b) has no rack label, so zone b is no
    # eligible domain: a=1 (n0), c=1 (n2), min 1 -> n0 allowed (1+1-1=1), n2 too; they
    # tie on bin-packing -> n0. (Counting zone b would make the min 0 and refuse all.)
    Scenario(
        "more-spread-node-needs-every-key",
        [
            Q,
            zoned("n0", "a", labels={"rack": "r1"}),
            zoned("n1", "b"),
            zoned("n2", "c", labels={"rack": "r2"}),
            *ws("n0", "n2"),
            incoming(spread("w"), spread("w", "rack", skew=5)),
        ],
        binds={"j-0": "n0"},
    ),
    # A gang with ScheduleAnyway per host: its members count against each other in the
    # score: j-0 -> n0 (tie), j-1 -> n1 (n0 has 1), j-2 -> n2. Without: all on n0.
    Scenario(
        "more-spread-schedule-anyway-gang",
        [Q, *THREE, incoming(spread("w", HOST, hard=False), size=3)],
        binds={"j-0": "n0", "j-1": "n1", "j-2": "n2"},
    ),
]


@pytest.mark.parametrize("scenario", MORE_SCENARIOS, ids=str)
def test_topology_spread_more(scenario: Scenario) -> None:
    result = check(scenario)
    assert violations(scenario.objects, result) == []
