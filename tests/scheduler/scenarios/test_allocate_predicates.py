"""Node predicates and the pod request model (docs/semantics.md §5.1 pod model, §5.3 predicates).

Two empty, identical nodes tie on every score and n0 would win by name, so a
job landing on n1 shows that a predicate ruled n0 out.
"""

from __future__ import annotations

from typing import Any

import pytest

from tests.kits.worlds import Scenario, check, job, node, pod, pod_group, queue, taint


def _affinity(*expressions: dict[str, Any]) -> dict[str, Any]:
    return {
        "nodeAffinity": {
            "requiredDuringSchedulingIgnoredDuringExecution": {
                "nodeSelectorTerms": [{"matchExpressions": list(expressions)}]
            }
        }
    }


LABELLED = [node("n0", gpus=1), node("n1", gpus=1, labels={"gpu": "a100", "rank": "8"})]

SCENARIOS = [
    # nodeSelector: only n1 carries gpu=a100.
    Scenario(
        "node-selector",
        [queue("q"), *LABELLED, job("j", "q", gpus=1, node_selector={"gpu": "a100"})],
        binds={"j-0": "n1"},
    ),
    # nodeSelector matching no node: pending, the reason names the selector.
    Scenario(
        "node-selector-no-match",
        [queue("q"), *LABELLED, job("j", "q", gpus=1, node_selector={"gpu": "h100"})],
        pending=["j"],
        reasons={"j": ["2 node(s) didn't match Pod's node selector"]},
    ),
    # Required node affinity, operator In.
    Scenario(
        "affinity-in",
        [
            queue("q"),
            *LABELLED,
            job(
                "j",
                "q",
                gpus=1,
                affinity=_affinity({"key": "gpu", "operator": "In", "values": ["a100"]}),
            ),
        ],
        binds={"j-0": "n1"},
    ),
    # NotIn: n1 is excluded, n0 (no label) matches NotIn.
    Scenario(
        "affinity-not-in",
        [
            queue("q"),
            node("n0", gpus=1, labels={"gpu": "a100"}),
            node("n1", gpus=1),
            job(
                "j",
                "q",
                gpus=1,
                affinity=_affinity({"key": "gpu", "operator": "NotIn", "values": ["a100"]}),
            ),
        ],
        binds={"j-0": "n1"},
    ),
    # Exists: only n1 has the key.
    Scenario(
        "affinity-exists",
        [
            queue("q"),
            *LABELLED,
            job("j", "q", gpus=1, affinity=_affinity({"key": "rank", "operator": "Exists"})),
        ],
        binds={"j-0": "n1"},
    ),
    # Gt: n1's rank 8 > 4.
    Scenario(
        "affinity-gt",
        [
            queue("q"),
            node("n0", gpus=1, labels={"rank": "2"}),
            node("n1", gpus=1, labels={"rank": "8"}),
            job(
                "j",
                "q",
                gpus=1,
                affinity=_affinity({"key": "rank", "operator": "Gt", "values": ["4"]}),
            ),
        ],
        binds={"j-0": "n1"},
    ),
    # Lt: n0's rank 2 < 4.
    Scenario(
        "affinity-lt",
        [
            queue("q"),
            node("n0", gpus=1, labels={"rank": "8"}),
            node("n1", gpus=1, labels={"rank": "2"}),
            job(
                "j",
                "q",
                gpus=1,
                affinity=_affinity({"key": "rank", "operator": "Lt", "values": ["4"]}),
            ),
        ],
        binds={"j-0": "n1"},
    ),
    # DoesNotExist: only n0 has the key, so n1.
    Scenario(
        "affinity-does-not-exist",
        [
            queue("q"),
            node("n0", gpus=1, labels={"spot": "true"}),
            node("n1", gpus=1),
            job("j", "q", gpus=1, affinity=_affinity({"key": "spot", "operator": "DoesNotExist"})),
        ],
        binds={"j-0": "n1"},
    ),
    # Terms are ORed, expressions inside a term ANDed: term 1 (gpu=a100 AND rank Exists)
    # matches n1, term 2 (matchFields metadata.name In [n0]) matches n0; n0 wins by name.
    Scenario(
        "affinity-terms-ored-match-fields",
        [
            queue("q"),
            *LABELLED,
            job(
                "j",
                "q",
                gpus=1,
                affinity={
                    "nodeAffinity": {
                        "requiredDuringSchedulingIgnoredDuringExecution": {
                            "nodeSelectorTerms": [
                                {
                                    "matchExpressions": [
                                        {"key": "gpu", "operator": "In", "values": ["a100"]},
                                        {"key": "rank", "operator": "Exists"},
                                    ]
                                },
                                {
                                    "matchFields": [
                                        {
                                            "key": "metadata.name",
                                            "operator": "In",
                                            "values": ["n0"],
                                        }
                                    ]
                                },
                            ]
                        }
                    }
                },
            ),
        ],
        binds={"j-0": "n0"},
    ),
    # nodeSelector and affinity must both hold: the selector allows n1 only, the affinity
    # (NotIn rank 8) forbids n1, so no node is left.
    Scenario(
        "selector-and-affinity-both-required",
        [
            queue("q"),
            *LABELLED,
            job(
                "j",
                "q",
                gpus=1,
                node_selector={"gpu": "a100"},
                affinity=_affinity({"key": "rank", "operator": "NotIn", "values": ["8"]}),
            ),
        ],
        pending=["j"],
    ),
    # Affinity excluding every node: pending with the affinity reason.
    Scenario(
        "affinity-no-match",
        [
            queue("q"),
            *LABELLED,
            job("j", "q", gpus=1, affinity=_affinity({"key": "zone", "operator": "Exists"})),
        ],
        pending=["j"],
        reasons={"j": ["didn't match Pod's node affinity"]},
    ),
    # NoSchedule taint without toleration: n0 is out.
    Scenario(
        "taint-no-schedule",
        [
            queue("q"),
            node("n0", gpus=1, taints=[taint("dedicated")]),
            node("n1", gpus=1),
            job("j", "q", gpus=1),
        ],
        binds={"j-0": "n1"},
    ),
    # ... tolerated (operator Exists): n0 is allowed again and wins by name.
    Scenario(
        "taint-tolerated",
        [
            queue("q"),
            node("n0", gpus=1, taints=[taint("dedicated")]),
            node("n1", gpus=1),
            job("j", "q", gpus=1, tolerations=[{"key": "dedicated", "operator": "Exists"}]),
        ],
        binds={"j-0": "n0"},
    ),
    # NoExecute taint (with a value) without a matching toleration value: n0 is out.
    Scenario(
        "taint-no-execute-value-mismatch",
        [
            queue("q"),
            node("n0", gpus=1, taints=[taint("team", "NoExecute", "a")]),
            node("n1", gpus=1),
            job("j", "q", gpus=1, tolerations=[{"key": "team", "operator": "Equal", "value": "b"}]),
        ],
        binds={"j-0": "n1"},
    ),
    # NoExecute tolerated with the matching value.
    Scenario(
        "taint-no-execute-tolerated",
        [
            queue("q"),
            node("n0", gpus=1, taints=[taint("team", "NoExecute", "a")]),
            node("n1", gpus=1),
            job("j", "q", gpus=1, tolerations=[{"key": "team", "operator": "Equal", "value": "a"}]),
        ],
        binds={"j-0": "n0"},
    ),
    # A toleration with operator Exists and no key tolerates every taint.
    Scenario(
        "toleration-wildcard",
        [
            queue("q"),
            node("n0", gpus=1, taints=[taint("a"), taint("b", "NoExecute", "x")]),
            node("n1", gpus=1),
            job("j", "q", gpus=1, tolerations=[{"operator": "Exists"}]),
        ],
        binds={"j-0": "n0"},
    ),
    # A toleration for the NoSchedule effect does not cover the same key's NoExecute taint.
    Scenario(
        "toleration-effect-must-match",
        [
            queue("q"),
            node("n0", gpus=1, taints=[taint("k", "NoExecute")]),
            node("n1", gpus=1),
            job(
                "j",
                "q",
                gpus=1,
                tolerations=[{"key": "k", "operator": "Exists", "effect": "NoSchedule"}],
            ),
        ],
        binds={"j-0": "n1"},
    ),
    # PreferNoSchedule is only a preference: ignored by the filter, n0 wins by name.
    Scenario(
        "taint-prefer-no-schedule-ignored",
        [
            queue("q"),
            node("n0", gpus=1, taints=[taint("soft", "PreferNoSchedule")]),
            node("n1", gpus=1),
            job("j", "q", gpus=1),
        ],
        binds={"j-0": "n0"},
    ),
    # Every node tainted: pending with the taint reason.
    Scenario(
        "taint-everywhere",
        [queue("q"), node("n0", gpus=1, taints=[taint("x")]), job("j", "q", gpus=1)],
        pending=["j"],
        reasons={"j": ["1 node(s) had untolerated taint"]},
    ),
    # spec.unschedulable (cordoned) node is skipped.
    Scenario(
        "unschedulable-node",
        [
            queue("q"),
            node("n0", gpus=1, unschedulable=True),
            node("n1", gpus=1),
            job("j", "q", gpus=1),
        ],
        binds={"j-0": "n1"},
    ),
    # NotReady node is skipped.
    Scenario(
        "not-ready-node",
        [queue("q"), node("n0", gpus=1, ready=False), node("n1", gpus=1), job("j", "q", gpus=1)],
        binds={"j-0": "n1"},
    ),
    # Pods limit: n0 admits 1 pod and already runs one (CPU-only, ours), so the GPU job
    # goes to n1 although n0 has a free GPU.
    Scenario(
        "pods-limit",
        [
            queue("q"),
            node("n0", gpus=1, pods=1),
            node("n1", gpus=1),
            job("cpu", "q", states=["Running"], nodes=["n0"]),
            job("j", "q", gpus=1),
        ],
        binds={"j-0": "n1"},
    ),
    # Pods limit reached everywhere: the reason says "Too many pods".
    Scenario(
        "pods-limit-everywhere",
        [
            queue("q"),
            node("n0", pods=1),
            job("cpu", "q", states=["Running"], nodes=["n0"]),
            job("j", "q"),
        ],
        pending=["j"],
        reasons={"j": ["Too many pods"]},
    ),
    # Init containers, max rule: request = max(main 1, init 2, init 2) = 2 CPU, which fits
    # the fuller 2-CPU n0 (binpack); summing the inits would need 5 CPU and go to n1.
    Scenario(
        "init-containers-max-not-sum",
        [
            queue("q"),
            node("n0", cpu="2"),
            node("n1", cpu="8"),
            job("j", "q", cpu="1", memory=None, init_containers=[{"cpu": "2"}, {"cpu": "2"}]),
        ],
        binds={"j-0": "n0"},
    ),
    # Init containers count: max(main 1, init 3) = 3 CPU does not fit n0 (2 CPU).
    Scenario(
        "init-container-larger-than-main",
        [
            queue("q"),
            node("n0", cpu="2"),
            node("n1", cpu="8"),
            job("j", "q", cpu="1", memory=None, init_containers=[{"cpu": "3"}]),
        ],
        binds={"j-0": "n1"},
    ),
    # Pod overhead is added: 2 CPU + 500m overhead does not fit the 2-CPU n0.
    Scenario(
        "pod-overhead",
        [
            queue("q"),
            node("n0", cpu="2"),
            node("n1", cpu="8"),
            job("j", "q", cpu="2", memory=None, overhead={"cpu": "500m"}),
        ],
        binds={"j-0": "n1"},
    ),
    # Extended resources: only n1 has example.com/fpga.
    Scenario(
        "extended-resource",
        [
            queue("q"),
            node("n0"),
            node("n1", extended={"example.com/fpga": "1"}),
            job("j", "q", extended={"example.com/fpga": "1"}),
        ],
        binds={"j-0": "n1"},
    ),
    # Extended resource nobody has: pending, the reason names it.
    Scenario(
        "extended-resource-missing",
        [queue("q"), node("n0"), job("j", "q", extended={"example.com/fpga": "1"})],
        pending=["j"],
        reasons={"j": ["Insufficient example.com/fpga"]},
    ),
    # amd.com/gpu counts as whole GPUs: the AMD node takes the pod, the CPU-only node cannot.
    Scenario(
        "amd-gpu",
        [
            queue("q"),
            node("n0"),
            node("n1", gpus=2, gpu_resource="amd.com/gpu"),
            job("j", "q", gpus=1, gpu_resource="amd.com/gpu"),
        ],
        binds={"j-0": "n1"},
    ),
    # amd.com/gpu is a GPU for queue limits too: limit 0 makes it OverLimit.
    Scenario(
        "amd-gpu-counts-to-queue",
        [
            queue("q", gpu_limit=0),
            node("n1", gpus=2, gpu_resource="amd.com/gpu"),
            job("j", "q", gpus=1, gpu_resource="amd.com/gpu"),
        ],
        pending=["j"],
        reasons={"j": ["OverLimit"]},
    ),
    # Requests default to limits: a limits-only 4-CPU pod does not fit the 2-CPU n0.
    Scenario(
        "requests-default-from-limits",
        [
            queue("q"),
            node("n0", cpu="2"),
            node("n1", cpu="8"),
            job("j", "q", cpu="4", memory=None, limits_only=True),
        ],
        binds={"j-0": "n1"},
    ),
    # A pod with no requests at all still takes a pod slot and fits anywhere.
    Scenario(
        "no-requests",
        [
            queue("q"),
            node("n0"),
            pod_group("pg", "q"),
            pod("p", "pg", cpu=None, memory=None),
        ],
        binds={"p": "n0"},
    ),
]


@pytest.mark.parametrize("scenario", SCENARIOS, ids=str)
def test_allocate_predicates(scenario: Scenario) -> None:
    check(scenario)
