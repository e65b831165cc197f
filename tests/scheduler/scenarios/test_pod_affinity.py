"""Inter-pod affinity and anti-affinity scenarios (docs/semantics.md §14), computed by hand.

Nodes are large (20 CPUs) and pods small (1 CPU), so room never decides: bin-packing
alone puts a job on the busiest node, and among empty identical nodes on the first by
name. A pod landing elsewhere shows a rule moved it. Zones: n0 and n1 in zone a, n2 in
zone b (``ZONES``). Every scenario is also checked by the kit's independent rule
checker, which must find no broken required rule in the final placement.
"""

from __future__ import annotations

from typing import Any

import pytest

from tests.kits.affinity import (
    HOST,
    ZONE,
    affinity,
    namespace,
    term,
    violations,
    zoned,
)
from tests.kits.worlds import Scenario, check, job, node, pod, pod_group, queue

ZONES = [zoned("n0", "a"), zoned("n1", "a"), zoned("n2", "b")]
Q = queue("q")


def running(name: str, where: str, app: str, **args: Any) -> list[dict[str, Any]]:
    """A Running pod labelled ``app`` (and ``labels``) on node ``where``."""
    labels = {"app": app, **args.pop("labels", {})}
    return pod(name, state="Running", node=where, labels=labels, **args)


def pod_group_for(name: str) -> dict[str, Any]:
    """A one-pod PodGroup named like its pod."""
    return pod_group(name, "q", min_member=1)


SCENARIOS = [
    # --- required anti-affinity -------------------------------------------------------
    # A gang of 3 anti-affine to itself per hostname: one pod per node.
    Scenario(
        "gang-one-per-node",
        [Q, *ZONES, job("j", "q", 3, labels={"app": "j"}, affinity=affinity(anti=[term("j")]))],
        binds={"j-0": "n0", "j-1": "n1", "j-2": "n2"},
    ),
    # A gang of 4 on 3 nodes cannot spread: not started in part; 3 nodes refused for the
    # last pod by the gang's own pods.
    Scenario(
        "gang-too-big-waits-whole",
        [Q, *ZONES, job("j", "q", 4, labels={"app": "j"}, affinity=affinity(anti=[term("j")]))],
        pending=["j"],
        reasons={"j": ["3 node(s) didn't match pod anti-affinity rules"]},
    ),
    # Anti-affinity per zone to a running db in zone a: only n2 (zone b).
    Scenario(
        "anti-zone-to-running",
        [
            Q,
            *ZONES,
            *running("db", "n0", "db"),
            job("j", "q", 2, affinity=affinity(anti=[term("db", ZONE)])),
        ],
        binds={"j-0": "n2", "j-1": "n2"},
    ),
    # Anti-affinity per hostname to the db on n0: bin-packing would pick n0 (busiest);
    # n1 is next by name.
    Scenario(
        "anti-host-to-running",
        [
            Q,
            *ZONES,
            *running("db", "n0", "db"),
            job("j", "q", 1, affinity=affinity(anti=[term("db")])),
        ],
        binds={"j-0": "n1"},
    ),
    # A node without the topology key is not refused by anti-affinity: nx (no zone) and
    # n2 are allowed; the db runs on nx, so bin-packing picks nx.
    Scenario(
        "anti-node-without-key-passes",
        [
            Q,
            zoned("n0", "a"),
            zoned("n2", "b"),
            node("nx", labels={HOST: "nx"}),
            *running("db", "nx", "db"),
            *running("web", "n0", "web"),
            job("j", "q", 1, affinity=affinity(anti=[term("web", ZONE)])),
        ],
        binds={"j-0": "nx"},
    ),
    # Symmetry: a running pod (of another scheduler) anti-affine per zone to app=web keeps
    # web pods out of zone a, though web itself has no rule.
    Scenario(
        "existing-pod-anti-affinity",
        [
            Q,
            *ZONES,
            *running(
                "guard",
                "n0",
                "guard",
                scheduler_name="default-scheduler",
                affinity=affinity(anti=[term("web", ZONE)]),
            ),
            job("w", "q", 2, labels={"app": "web"}),
        ],
        binds={"w-0": "n2", "w-1": "n2"},
    ),
    # Symmetry refuses every node: the reason names existing pods' anti-affinity.
    Scenario(
        "existing-anti-affinity-everywhere",
        [
            Q,
            zoned("n0", "a"),
            zoned("n1", "a"),
            *running("guard", "n0", "guard", affinity=affinity(anti=[term("web", ZONE)])),
            job("w", "q", 1, labels={"app": "web"}),
        ],
        pending=["w"],
        reasons={"w": ["2 node(s) didn't satisfy existing pods anti-affinity rules"]},
    ),
    # Anti-affinity counts only the term's namespaces: a db in namespace "other" does not
    # repel a pod in "default" whose term names no namespace; bin-packing keeps n0.
    Scenario(
        "anti-other-namespace-ignored",
        [
            Q,
            *ZONES,
            *running("db", "n0", "db", namespace="other"),
            job("j", "q", 1, affinity=affinity(anti=[term("db")])),
        ],
        binds={"j-0": "n0"},
    ),
    # ... unless the term lists that namespace.
    Scenario(
        "anti-listed-namespace",
        [
            Q,
            *ZONES,
            *running("db", "n0", "db", namespace="other"),
            job("j", "q", 1, affinity=affinity(anti=[term("db", namespaces=["other"])])),
        ],
        binds={"j-0": "n1"},
    ),
    # namespaceSelector {} selects every namespace.
    Scenario(
        "anti-every-namespace",
        [
            Q,
            *ZONES,
            *running("db", "n0", "db", namespace="other"),
            job("j", "q", 1, affinity=affinity(anti=[term("db", namespaceSelector={})])),
        ],
        binds={"j-0": "n1"},
    ),
    # namespaceSelector by a Namespace's label: team=red matches "red" (db on n0) but not
    # "blue" (db on n1): only n0 is refused; n1 holds a pod, so bin-packing picks n1.
    Scenario(
        "anti-namespace-selector-by-label",
        [
            Q,
            *ZONES,
            namespace("red", team="red"),
            namespace("blue", team="blue"),
            *running("db", "n0", "db", namespace="red"),
            *running("db", "n1", "db", namespace="blue"),
            job(
                "j",
                "q",
                1,
                affinity=affinity(
                    anti=[term("db", namespaceSelector={"matchLabels": {"team": "red"}})]
                ),
            ),
        ],
        binds={"j-0": "n1"},
    ),
    # A namespace with no Namespace object still answers to kubernetes.io/metadata.name.
    Scenario(
        "anti-namespace-selector-by-name",
        [
            Q,
            *ZONES,
            *running("db", "n0", "db", namespace="ghost"),
            job(
                "j",
                "q",
                1,
                affinity=affinity(
                    anti=[
                        term(
                            "db",
                            namespaceSelector={
                                "matchLabels": {"kubernetes.io/metadata.name": "ghost"}
                            },
                        )
                    ]
                ),
            ),
        ],
        binds={"j-0": "n1"},
    ),
    # A null labelSelector selects no pod: the term refuses nothing (bin-packing: n0).
    Scenario(
        "anti-null-selector",
        [
            Q,
            *ZONES,
            *running("db", "n0", "db"),
            job("j", "q", 1, affinity=affinity(anti=[term(None)])),
        ],
        binds={"j-0": "n0"},
    ),
    # Succeeded pods do not count: bin-packing ties the empty nodes, n0 wins.
    Scenario(
        "anti-succeeded-pod-ignored",
        [
            Q,
            *ZONES,
            *pod("done", state="Succeeded", node="n0", labels={"app": "db"}),
            job("j", "q", 1, affinity=affinity(anti=[term("db")])),
        ],
        binds={"j-0": "n0"},
    ),
    # matchLabelKeys: two revisions of one app are anti-affine only within a revision:
    # rev 2's pod may not join rev 2's on n0 (which wins by name among the busy nodes
    # otherwise), but may share n1 with rev 1's (busier than the empty n2). Without
    # matchLabelKeys both n0 and n1 would be refused.
    Scenario(
        "match-label-keys",
        [
            Q,
            *ZONES,
            *running("old", "n1", "web", labels={"app": "web", "rev": "1"}),
            *running("new", "n0", "web", labels={"app": "web", "rev": "2"}),
            *pod(
                "extra",
                "extra",
                labels={"app": "web", "rev": "2"},
                affinity=affinity(anti=[term("web", matchLabelKeys=["rev"])]),
            ),
            pod_group_for("extra"),
        ],
        binds={"extra": "n1"},
    ),
    # --- required affinity ------------------------------------------------------------
    # Affinity per hostname to the db on n2: both pods go there, not to the busier n0.
    Scenario(
        "affinity-host",
        [
            Q,
            *ZONES,
            *running("db", "n2", "db"),
            *running("busy", "n0", "x", cpu="10"),
            job("j", "q", 2, affinity=affinity(required=[term("db")])),
        ],
        binds={"j-0": "n2", "j-1": "n2"},
    ),
    # Affinity per zone to a db on n1 (zone a): n0 or n1; bin-packing picks n1.
    Scenario(
        "affinity-zone",
        [
            Q,
            *ZONES,
            *running("db", "n1", "db"),
            *running("other", "n2", "x", cpu="5"),
            job("j", "q", 1, affinity=affinity(required=[term("db", ZONE)])),
        ],
        binds={"j-0": "n1"},
    ),
    # No db anywhere and the pod is not a db: nothing matches, the pod waits and says so.
    Scenario(
        "affinity-nothing-to-follow",
        [Q, *ZONES, job("j", "q", 1, affinity=affinity(required=[term("db")]))],
        pending=["j"],
        reasons={"j": ["3 node(s) didn't match pod affinity rules"]},
    ),
    # Self-affinity: the first pod of a group affine to itself per zone may start anywhere
    # (n0 by name); two fill n0, the third follows them into zone a (n2), not to n1 (zone
    # b), which would win by name.
    Scenario(
        "self-affinity-first-pod",
        [
            Q,
            zoned("n0", "a"),
            zoned("n1", "b"),
            zoned("n2", "a"),
            job(
                "j",
                "q",
                3,
                labels={"app": "j"},
                affinity=affinity(required=[term("j", ZONE)]),
                cpu="8",
            ),
        ],
        binds={"j-0": "n0", "j-1": "n0", "j-2": "n2"},
    ),
    # Self-affinity with a node lacking the key: only nodes with the key may take the first
    # (n1, though n0 wins by name).
    Scenario(
        "self-affinity-needs-the-key",
        [
            Q,
            node("n0"),
            zoned("n1", "a"),
            job("j", "q", 1, labels={"app": "j"}, affinity=affinity(required=[term("j", ZONE)])),
        ],
        binds={"j-0": "n1"},
    ),
    # A matching pod on a node without the key is in no domain: it does not count, so the
    # first self-affine pod may still start (on n1, the only node with the key; n0 wins
    # by name and holds that pod).
    Scenario(
        "self-affinity-ignores-pods-outside-every-domain",
        [
            Q,
            node("n0"),
            zoned("n1", "a"),
            *running("early", "n0", "j"),
            job("j", "q", 1, labels={"app": "j"}, affinity=affinity(required=[term("j", ZONE)])),
        ],
        binds={"j-0": "n1"},
    ),
    # Affinity to a pod in a namespace picked by label (n1), not to the busier n0.
    Scenario(
        "affinity-namespace-selector",
        [
            Q,
            *ZONES,
            namespace("data", tier="db"),
            *running("db", "n1", "db", namespace="data"),
            *running("busy", "n0", "x", cpu="10"),
            job(
                "j",
                "q",
                1,
                affinity=affinity(
                    required=[term("db", namespaceSelector={"matchLabels": {"tier": "db"}})]
                ),
            ),
        ],
        binds={"j-0": "n1"},
    ),
    # Two required terms: a single pod must match both (app=db and role=primary); the
    # replica on n0 matches only one, the primary on n2 both.
    Scenario(
        "affinity-all-terms-one-pod",
        [
            Q,
            *ZONES,
            *running("replica", "n0", "db", labels={"app": "db", "role": "replica"}),
            *running("primary", "n2", "db", labels={"app": "db", "role": "primary"}),
            job(
                "j",
                "q",
                1,
                affinity=affinity(
                    required=[term("db"), term(selector={"matchLabels": {"role": "primary"}})]
                ),
            ),
        ],
        binds={"j-0": "n2"},
    ),
    # Affinity and anti-affinity together: with the cache (zone a) but not on its node:
    # n1.
    Scenario(
        "affinity-and-anti",
        [
            Q,
            *ZONES,
            *running("cache", "n0", "cache"),
            job(
                "j", "q", 1, affinity=affinity(required=[term("cache", ZONE)], anti=[term("cache")])
            ),
        ],
        binds={"j-0": "n1"},
    ),
    # --- preferred --------------------------------------------------------------------
    # Preferred affinity to the db on n2 beats bin-packing toward the busy n0.
    Scenario(
        "preferred-affinity",
        [
            Q,
            *ZONES,
            *running("db", "n2", "db"),
            *running("busy", "n0", "x", cpu="10"),
            job("j", "q", 1, affinity=affinity(preferred=[(50, term("db"))])),
        ],
        binds={"j-0": "n2"},
    ),
    # Preferred anti-affinity per zone away from the busy zone a: n2.
    Scenario(
        "preferred-anti-affinity",
        [
            Q,
            *ZONES,
            *running("noisy", "n0", "noisy", cpu="10"),
            job("j", "q", 1, affinity=affinity(anti_preferred=[(80, term("noisy", ZONE))])),
        ],
        binds={"j-0": "n2"},
    ),
    # A preference never overrides a requirement: preferred to the db on n0, but required
    # anti-affinity per hostname to it: n1 (same zone preference is not asked).
    Scenario(
        "preferred-yields-to-required",
        [
            Q,
            *ZONES,
            *running("db", "n0", "db"),
            job("j", "q", 1, affinity=affinity(preferred=[(100, term("db"))], anti=[term("db")])),
        ],
        binds={"j-0": "n1"},
    ),
    # Symmetric preference: a running pod prefers app=web beside it (per hostname) on n2;
    # a web pod with no rule of its own is drawn there over bin-packing's busy n0.
    Scenario(
        "existing-pod-preference",
        [
            Q,
            *ZONES,
            *running("busy", "n0", "x", cpu="10"),
            *running("lover", "n2", "lover", affinity=affinity(preferred=[(60, term("web"))])),
            job("w", "q", 1, labels={"app": "web"}),
        ],
        binds={"w-0": "n2"},
    ),
]


@pytest.mark.parametrize("scenario", SCENARIOS, ids=str)
def test_pod_affinity(scenario: Scenario) -> None:
    result = check(scenario)
    assert violations(scenario.objects, result) == []
