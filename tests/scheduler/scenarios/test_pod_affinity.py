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
    placed,
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


# --- a second, independent set (issue 15), each computed by hand from kube-scheduler's
# InterPodAffinity rules. Unless said: nodes n0, n1 in zone a and n2 in zone b
# (``ZONES``), 20 CPUs each; pods ask 1 CPU; a "filler" (5 CPUs, no labels) makes a node
# the one bin-packing picks. The comment of each row gives the rule, then the
# computation; "without the rule" says where bin-packing alone would put the pod.

Obj = dict[str, Any]
HOSTS4 = [node(f"n{i}", labels={HOST: f"n{i}"}) for i in range(4)]


def filler(where: str, name: str = "filler", **args: Any) -> list[Obj]:
    """An unlabelled 5-CPU pod on ``where`` that makes it bin-packing's choice."""
    return placed(name, where, cpu="5", **args)


def one(name: str = "j", **pod_args: Any) -> list[Obj]:
    """A one-pod job."""
    return job(name, "q", 1, **pod_args)


MORE_SCENARIOS = [
    # Pods being deleted still count for inter-pod affinity (kube-scheduler keeps them
    # until gone): a Releasing db on n0 refuses n0 to a pod anti-affine to db per host;
    # n1 is next by name. Without the rule: n0 (busiest).
    Scenario(
        "more-anti-releasing-pod-counts",
        [
            Q,
            *ZONES,
            *placed("db", "n0", {"app": "db"}, state="Releasing"),
            one(affinity=affinity(anti=[term("db")])),
        ],
        binds={"j-0": "n1"},
    ),
    # A pod being bound (BindRequest to n0) counts like a bound one: n0 refused -> n1.
    Scenario(
        "more-anti-binding-pod-counts",
        [
            Q,
            *ZONES,
            *placed("db", "n0", {"app": "db"}, state="Binding"),
            one(affinity=affinity(anti=[term("db")])),
        ],
        binds={"j-0": "n1"},
    ),
    # A Failed db pod does not count: the filler on n0 keeps n0 bin-packing's choice and
    # nothing refuses it -> n0.
    Scenario(
        "more-anti-failed-pod-ignored",
        [
            Q,
            *ZONES,
            *filler("n0"),
            *placed("db", "n0", {"app": "db"}, state="Failed"),
            one(affinity=affinity(anti=[term("db")])),
        ],
        binds={"j-0": "n0"},
    ),
    # Zone-wide anti-affinity to a pod running in zone a: n0 and n1 refused, n2 only.
    # Two pods of a gang both go to n2 (they are not anti-affine to each other).
    Scenario(
        "more-anti-zone-gang",
        [
            Q,
            *ZONES,
            *placed("db", "n1", {"app": "db"}),
            job("j", "q", 2, affinity=affinity(anti=[term("db", ZONE)])),
        ],
        binds={"j-0": "n2", "j-1": "n2"},
    ),
    # A gang of 2 anti-affine to itself per zone: j-0 on n0 (empty nodes tie, lowest
    # name), then zone a is refused to j-1 -> n2. Without the rule: both on n0.
    Scenario(
        "more-self-anti-zone-gang",
        [
            Q,
            *ZONES,
            job("j", "q", 2, labels={"app": "j"}, affinity=affinity(anti=[term("j", ZONE)])),
        ],
        binds={"j-0": "n0", "j-1": "n2"},
    ),
    # A gang of 3 anti-affine to itself per zone has two zones: the third member finds
    # zone a (n0, n1) and zone b (n2) taken -> the gang waits whole, nothing bound.
    Scenario(
        "more-self-anti-zone-gang-waits-whole",
        [
            Q,
            *ZONES,
            job("j", "q", 3, labels={"app": "j"}, affinity=affinity(anti=[term("j", ZONE)])),
        ],
        pending=["j"],
        reasons={"j": ["3 node(s) didn't match pod anti-affinity rules"]},
    ),
    # Symmetry from another scheduler's pod: "guard" (default-scheduler, on n0) is
    # anti-affine to app=web per zone, so a web pod (no rule of its own) is refused n0 and
    # n1 -> n2. Without the rule: n0 (busiest).
    Scenario(
        "more-symmetric-other-scheduler-zone",
        [
            Q,
            *ZONES,
            *placed(
                "guard",
                "n0",
                {"app": "guard"},
                scheduler_name="default-scheduler",
                affinity=affinity(anti=[term("web", ZONE)]),
            ),
            one(labels={"app": "web"}),
        ],
        binds={"j-0": "n2"},
    ),
    # Symmetry uses the existing pod's own namespace: guard lives in "other" and its term
    # names no namespace, so it repels web pods of "other" only; a web pod in "default"
    # is not refused -> n0 (bin-packing).
    Scenario(
        "more-symmetric-term-namespace-is-the-owners",
        [
            Q,
            *ZONES,
            *placed(
                "guard",
                "n0",
                {"app": "guard"},
                namespace="other",
                affinity=affinity(anti=[term("web")]),
            ),
            one(labels={"app": "web"}),
        ],
        binds={"j-0": "n0"},
    ),
    # The same guard with namespaceSelector {} repels web pods of every namespace: n0
    # refused -> n1.
    Scenario(
        "more-symmetric-namespace-selector-all",
        [
            Q,
            *ZONES,
            *placed(
                "guard",
                "n0",
                {"app": "guard"},
                namespace="other",
                affinity=affinity(anti=[term("web", namespaceSelector={})]),
            ),
            one(labels={"app": "web"}),
        ],
        binds={"j-0": "n1"},
    ),
    # An existing pod's namespaceSelector is matched against the incoming pod's
    # namespace labels: guard (namespace "other") repels web pods of namespaces labelled
    # team=blue; a web pod in "blue" (team=blue) is refused n0 -> n1 ...
    Scenario(
        "more-symmetric-namespace-selector-by-label",
        [
            Q,
            *ZONES,
            namespace("blue", team="blue"),
            *placed(
                "guard",
                "n0",
                {"app": "guard"},
                namespace="other",
                affinity=affinity(
                    anti=[term("web", namespaceSelector={"matchLabels": {"team": "blue"}})]
                ),
            ),
            one(labels={"app": "web"}, namespace="blue"),
        ],
        binds={"blue/j-0": "n1"},
    ),
    # ... and one in "default" (no team label) is not -> n0 (bin-packing).
    Scenario(
        "more-symmetric-namespace-selector-other-label",
        [
            Q,
            *ZONES,
            namespace("blue", team="blue"),
            *placed(
                "guard",
                "n0",
                {"app": "guard"},
                namespace="other",
                affinity=affinity(
                    anti=[term("web", namespaceSelector={"matchLabels": {"team": "blue"}})]
                ),
            ),
            one(labels={"app": "web"}),
        ],
        binds={"j-0": "n0"},
    ),
    # matchLabelKeys on an existing pod's term takes the existing pod's value: guard
    # (tenant=a, on n0) is anti-affine to app=web with matchLabelKeys [tenant], i.e. to
    # web pods of tenant a. A web pod of tenant a is refused n0 -> n1 ...
    Scenario(
        "more-symmetric-match-label-keys-same-tenant",
        [
            Q,
            *ZONES,
            *placed(
                "guard",
                "n0",
                {"app": "guard", "tenant": "a"},
                affinity=affinity(anti=[term("web", matchLabelKeys=["tenant"])]),
            ),
            one(labels={"app": "web", "tenant": "a"}),
        ],
        binds={"j-0": "n1"},
    ),
    # ... and one of tenant b is not: n0 (bin-packing).
    Scenario(
        "more-symmetric-match-label-keys-other-tenant",
        [
            Q,
            *ZONES,
            *placed(
                "guard",
                "n0",
                {"app": "guard", "tenant": "a"},
                affinity=affinity(anti=[term("web", matchLabelKeys=["tenant"])]),
            ),
            one(labels={"app": "web", "tenant": "b"}),
        ],
        binds={"j-0": "n0"},
    ),
    # mismatchLabelKeys for tenant-exclusive hosts: the pod (tenant=a) is anti-affine per
    # host to every pod whose tenant is not a ({} selector + tenant NotIn [a]). n0 holds a
    # tenant-b pod (refused), n1 a tenant-a pod (allowed, and busier than n2) -> n1.
    # Without the rule: n0 (lowest name among the two busy nodes).
    Scenario(
        "more-mismatch-label-keys-exclusive-tenant",
        [
            Q,
            *ZONES,
            *placed("b", "n0", {"tenant": "b"}),
            *placed("a", "n1", {"tenant": "a"}),
            one(
                labels={"tenant": "a"},
                affinity=affinity(anti=[term(selector={}, mismatchLabelKeys=["tenant"])]),
            ),
        ],
        binds={"j-0": "n1"},
    ),
    # A matchExpressions selector: anti-affine per host to pods WITHOUT an app label. n0
    # holds an unlabelled pod (refused), n1 an app=x pod (allowed, busier than n2) -> n1.
    Scenario(
        "more-anti-does-not-exist-expression",
        [
            Q,
            *ZONES,
            *placed("bare", "n0"),
            *placed("x", "n1", {"app": "x"}),
            one(
                affinity=affinity(
                    anti=[
                        term(
                            selector={
                                "matchExpressions": [{"key": "app", "operator": "DoesNotExist"}]
                            }
                        )
                    ]
                )
            ),
        ],
        binds={"j-0": "n1"},
    ),
    # An empty selector {} selects every pod, but only in the term's namespaces (the
    # pod's own, "default"): n0's default pod refuses n0; n1's pod lives in "other" and
    # does not -> n1 (busier than n2). Without the rule: n0.
    Scenario(
        "more-anti-empty-selector-own-namespace",
        [
            Q,
            *ZONES,
            *placed("mine", "n0", {"app": "x"}),
            *placed("theirs", "n1", {"app": "x"}, namespace="other"),
            one(affinity=affinity(anti=[term(selector={})])),
        ],
        binds={"j-0": "n1"},
    ),
    # namespaces and namespaceSelector are united: the term names namespace x and selects
    # namespaces labelled team=blue (y is). db pods in x (n0) and y (n1) refuse their
    # hosts; the db in "default" (n2) is in neither, so n2 is allowed and, being busy,
    # beats the empty n3. Without the rule: n0.
    Scenario(
        "more-anti-namespaces-united-with-selector",
        [
            Q,
            *HOSTS4,
            namespace("y", team="blue"),
            namespace("z", team="red"),
            *placed("db-x", "n0", {"app": "db"}, namespace="x"),
            *placed("db-y", "n1", {"app": "db"}, namespace="y"),
            *placed("db-d", "n2", {"app": "db"}, namespace="z"),
            one(
                affinity=affinity(
                    anti=[
                        term(
                            "db",
                            namespaces=["x"],
                            namespaceSelector={"matchLabels": {"team": "blue"}},
                        )
                    ]
                )
            ),
        ],
        binds={"j-0": "n2"},
    ),
    # Required affinity with a namespaces list: the term wants a db of namespace "data";
    # the db in "default" on n0 does not count, the one in "data" on n2 does -> n2.
    # Without the rule: n0 (two equally busy nodes, lowest name).
    Scenario(
        "more-affinity-namespaces-list",
        [
            Q,
            *ZONES,
            *placed("db-here", "n0", {"app": "db"}),
            *placed("db-data", "n2", {"app": "db"}, namespace="data"),
            one(affinity=affinity(required=[term("db", namespaces=["data"])])),
        ],
        binds={"j-0": "n2"},
    ),
    # Required affinity per zone to a db running on n1: zone a (n0, n1) qualifies; n0
    # with the filler is bin-packing's choice -> n0; n2 (zone b) is refused.
    Scenario(
        "more-affinity-zone-takes-the-busiest-in-zone",
        [
            Q,
            *ZONES,
            *filler("n0"),
            *placed("db", "n1", {"app": "db"}),
            one(affinity=affinity(required=[term("db", ZONE)])),
        ],
        binds={"j-0": "n0"},
    ),
    # Self-affinity with a matching pod already running: no first-pod exception, the pod
    # must join x on n1, though the filler makes n0 bin-packing's choice.
    Scenario(
        "more-self-affinity-joins-the-running-one",
        [
            Q,
            *ZONES,
            *filler("n0"),
            *placed("x", "n1", {"app": "x"}),
            one(labels={"app": "x"}, affinity=affinity(required=[term("x")])),
        ],
        binds={"j-0": "n1"},
    ),
    # The first-pod exception asks that the pod match its own term, namespace included:
    # the term selects app=x in namespace "other" only, the pod is in "default", and no
    # app=x pod exists -> refused everywhere, pending.
    Scenario(
        "more-self-affinity-exception-needs-own-namespace",
        [
            Q,
            *ZONES,
            one(labels={"app": "x"}, affinity=affinity(required=[term("x", namespaces=["other"])])),
        ],
        pending=["j"],
        reasons={"j": ["3 node(s) didn't match pod affinity rules"]},
    ),
    # The only app=x pod runs on "bare", a node without a zone label, so no zone holds
    # one and the exception applies: any node with a zone will do. bare itself lacks the
    # key (refused) though its filler-sized pod makes it bin-packing's choice; the empty
    # zoned nodes tie -> n0. This follows kube-scheduler's code (InterPodAffinity
    # satisfyPodAffinity: the exception needs the per-domain counts empty, and a pod on a
    # node without the key adds to no count), not a literal reading of "no matching pod
    # anywhere", under which the pod would wait.
    Scenario(
        "more-self-affinity-match-on-keyless-node",
        [
            Q,
            *ZONES,
            node("bare"),
            *placed("x", "bare", {"app": "x"}, cpu="5"),
            one(labels={"app": "x"}, affinity=affinity(required=[term("x", ZONE)])),
        ],
        binds={"j-0": "n0"},
    ),
    # A gang self-affine per zone follows its first member: with zones a (n0, n2) and b
    # (n1) and 8-CPU pods, j-0 -> n0 (empty nodes tie), j-1 -> n0 (bin-packing, 12 CPUs
    # left), j-2 does not fit n0 (4 left); zone a's other node is n2 -> n2. Without the
    # rule j-2 would go to n1 (lowest name).
    Scenario(
        "more-gang-self-affinity-zone-follows-first",
        [
            Q,
            zoned("n0", "a"),
            zoned("n1", "b"),
            zoned("n2", "a"),
            job(
                "j",
                "q",
                3,
                cpu="8",
                labels={"app": "j"},
                affinity=affinity(required=[term("j", ZONE)]),
            ),
        ],
        binds={"j-0": "n0", "j-1": "n0", "j-2": "n2"},
    ),
    # A gang whose second member can meet its rule nowhere (affinity to app=missing, which
    # no pod has, and the member does not match it itself) is not started in part.
    Scenario(
        "more-gang-not-started-in-part",
        [
            Q,
            *ZONES,
            pod_group("g", "q", min_member=2),
            *pod("g-0", "g"),
            *pod("g-1", "g", affinity=affinity(required=[term("missing")])),
        ],
        pending=["g"],
        reasons={"g": ["3 node(s) didn't match pod affinity rules"]},
    ),
    # Symmetry inside one gang: its ps pod (g-0) is anti-affine per host to its workers
    # (role=worker); members go in creation order (the kit stamps g-0 first, as KAI
    # orders a gang's tasks). g-0 -> n0 (tie); worker g-1 is refused n0 by g-0's term -> n1; worker
    # g-2 is refused n0 too and bin-packing takes n1 over the empty n2. Without the rule
    # all three go to n0.
    Scenario(
        "more-symmetric-inside-one-gang",
        [
            Q,
            *ZONES,
            pod_group("g", "q", min_member=3),
            *pod(
                "g-0",
                "g",
                labels={"role": "ps"},
                affinity=affinity(anti=[term(selector={"matchLabels": {"role": "worker"}})]),
            ),
            *pod("g-1", "g", labels={"role": "worker"}),
            *pod("g-2", "g", labels={"role": "worker"}),
        ],
        binds={"g-0": "n0", "g-1": "n1", "g-2": "n1"},
    ),
    # Pods placed earlier in the cycle count across jobs: job a (older) goes to n0; job b,
    # anti-affine to app=a per host, is refused n0 -> n1. Without the rule: n0.
    Scenario(
        "more-anti-to-a-job-placed-this-cycle",
        [Q, *ZONES, one("a", labels={"app": "a"}), one("b", affinity=affinity(anti=[term("a")]))],
        binds={"a-0": "n0", "b-0": "n1"},
    ),
    # ... and symmetrically: job a (older, -> n0) is anti-affine to app=b per zone, so
    # job b (app=b, no rule) is refused zone a -> n2.
    Scenario(
        "more-symmetric-to-a-job-placed-this-cycle",
        [
            Q,
            *ZONES,
            one("a", labels={"app": "a"}, affinity=affinity(anti=[term("b", ZONE)])),
            one("b", labels={"app": "b"}),
        ],
        binds={"a-0": "n0", "b-0": "n2"},
    ),
    # Symmetric refusal everywhere, with its reason: guard on n0 repels web per zone and
    # both nodes are in zone a.
    Scenario(
        "more-symmetric-reason",
        [
            Q,
            zoned("n0", "a"),
            zoned("n1", "a"),
            *placed(
                "guard",
                "n1",
                {"app": "guard"},
                scheduler_name="default-scheduler",
                affinity=affinity(anti=[term("web", ZONE)]),
            ),
            one(labels={"app": "web"}),
        ],
        pending=["j"],
        reasons={"j": ["2 node(s) didn't satisfy existing pods anti-affinity rules"]},
    ),
    # Required affinity per zone: "bare" has no zone label and is refused though its
    # filler makes it bin-packing's choice; zone a holds the db (n0 busier than n1) -> n0.
    Scenario(
        "more-affinity-keyless-node-refused",
        [
            Q,
            *ZONES,
            node("bare"),
            *filler("bare"),
            *placed("db", "n0", {"app": "db"}),
            one(affinity=affinity(required=[term("db", ZONE)])),
        ],
        binds={"j-0": "n0"},
    ),
    # --- preferred terms: scores above bin-packing, never filters ---------------------
    # Two preferred affinity terms: weight 10 to app=a (on n1), weight 50 to app=b (on
    # n2); the filler makes n0 bin-packing's choice. n2 scores 50, n1 10, n0 0 -> n2.
    Scenario(
        "more-preferred-heavier-weight-wins",
        [
            Q,
            *ZONES,
            *filler("n0"),
            *placed("a", "n1", {"app": "a"}),
            *placed("b", "n2", {"app": "b"}),
            one(affinity=affinity(preferred=[(10, term("a")), (50, term("b"))])),
        ],
        binds={"j-0": "n2"},
    ),
    # A gang preferring not to share a host with itself: j-0 -> n0 (tie), j-1 would be
    # bin-packed onto n0 but n0 now holds a matching pod (-100) -> n1.
    Scenario(
        "more-preferred-self-anti-gang",
        [
            Q,
            *ZONES,
            job(
                "j",
                "q",
                2,
                labels={"app": "j"},
                affinity=affinity(anti_preferred=[(100, term("j"))]),
            ),
        ],
        binds={"j-0": "n0", "j-1": "n1"},
    ),
    # Preferred anti-affinity never refuses: the only node holds the pod it dislikes ->
    # still bound there.
    Scenario(
        "more-preferred-anti-never-blocks",
        [
            Q,
            zoned("n0", "a"),
            *placed("db", "n0", {"app": "db"}),
            one(affinity=affinity(anti_preferred=[(100, term("db"))])),
        ],
        binds={"j-0": "n0"},
    ),
    # Symmetric scoring of an existing pod's REQUIRED affinity (kube-scheduler's
    # hardPodAffinityWeight 1): fe on n1 requires app=web on its host; a web pod with no
    # rule of its own scores n1 above n0, though the filler makes n0 bin-packing's choice.
    Scenario(
        "more-existing-required-affinity-attracts",
        [
            Q,
            *ZONES,
            *filler("n0"),
            *placed("fe", "n1", {"app": "fe"}, affinity=affinity(required=[term("web")])),
            one(labels={"app": "web"}),
        ],
        binds={"j-0": "n1"},
    ),
    # Symmetric scoring of an existing pod's preferred anti-affinity: guard on n0 (the
    # busiest) prefers no web pod on its host -> a web pod goes to n1.
    Scenario(
        "more-existing-preferred-anti-repels",
        [
            Q,
            *ZONES,
            *placed(
                "guard",
                "n0",
                {"app": "guard"},
                cpu="5",
                affinity=affinity(anti_preferred=[(100, term("web"))]),
            ),
            one(labels={"app": "web"}),
        ],
        binds={"j-0": "n1"},
    ),
]


@pytest.mark.parametrize("scenario", MORE_SCENARIOS, ids=str)
def test_pod_affinity_more(scenario: Scenario) -> None:
    result = check(scenario)
    assert violations(scenario.objects, result) == []
