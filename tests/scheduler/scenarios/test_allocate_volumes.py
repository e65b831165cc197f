"""Volume binding scenarios (docs/semantics.md §11), expectations computed by hand.

Two empty, identical nodes tie on every score and n0 wins by name, so a pod
landing on n1 shows that its volumes ruled n0 out. Class ``local`` is
``WaitForFirstConsumer`` with ``kubernetes.io/no-provisioner`` (static PVs only).
"""

from __future__ import annotations

import pytest

from tests.kits.volumes import host, pv, pvc, storage_class, volume_job, with_claims
from tests.kits.worlds import Scenario, check, job, queue

LOCAL = storage_class("local")
TWO = [queue("q"), LOCAL, host("n0"), host("n1")]

SCENARIOS = [
    # A bound claim: its PV's node affinity (n1) is a predicate.
    Scenario(
        "bound-pv-affinity",
        [
            *TWO,
            pv("pv1", node="n1", phase="Bound"),
            pvc("data", volume="pv1"),
            volume_job("j", "q", ["data"]),
        ],
        binds={"j-0": "n1"},
    ),
    # A bound claim whose PV is not reachable from any node: pending, reason says so.
    Scenario(
        "bound-pv-unreachable",
        [
            *TWO,
            pv("pv1", node="elsewhere", phase="Bound"),
            pvc("data", volume="pv1"),
            volume_job("j", "q", ["data"]),
        ],
        pending=["j"],
        reasons={"j": ["2 node(s) had volume node affinity conflict"]},
    ),
    # A claim bound to a PV that does not exist.
    Scenario(
        "bound-to-missing-pv",
        [*TWO, pvc("data", volume="gone"), volume_job("j", "q", ["data"])],
        pending=["j"],
        reasons={
            "j": ['persistentvolumeclaim "data" bound to non-existent persistentvolume "gone"']
        },
    ),
    # WaitForFirstConsumer, static: the only available PV lives on n1.
    Scenario(
        "wffc-static",
        [*TWO, pv("pv1", node="n1"), pvc("data"), volume_job("j", "q", ["data"])],
        binds={"j-0": "n1"},
    ),
    # The smallest fitting PV is taken: a (5Gi) takes pv-small (10Gi), so b (50Gi)
    # still finds pv-big (100Gi); had a taken pv-big, b would wait.
    Scenario(
        "smallest-pv-chosen",
        [
            queue("q"),
            LOCAL,
            host("n0"),
            pv("pv-big", "100Gi", node="n0"),
            pv("pv-small", "10Gi", node="n0"),
            pvc("a-data", "5Gi"),
            pvc("b-data", "50Gi"),
            volume_job("a", "q", ["a-data"]),
            volume_job("b", "q", ["b-data"]),
        ],
        binds={"a-0": "n0", "b-0": "n0"},
    ),
    # Access modes must include every requested one: the RWX claim goes where the RWX PV is.
    Scenario(
        "access-modes-mismatch",
        [
            *TWO,
            pv("rwo", node="n0"),
            pv("rwx", node="n1", modes=("ReadWriteMany",)),
            pvc("data", modes=("ReadWriteMany",)),
            volume_job("j", "q", ["data"]),
        ],
        binds={"j-0": "n1"},
    ),
    # Capacity below the request does not serve: 1Gi on n0 is too small for 5Gi.
    Scenario(
        "capacity-mismatch",
        [
            *TWO,
            pv("small", "1Gi", node="n0"),
            pv("big", "10Gi", node="n1"),
            pvc("data", "5Gi"),
            volume_job("j", "q", ["data"]),
        ],
        binds={"j-0": "n1"},
    ),
    # Storage class must match: the PV on n0 is of another class.
    Scenario(
        "class-mismatch",
        [
            *TWO,
            pv("other", node="n0", storage_class="slow"),
            pv("mine", node="n1"),
            pvc("data"),
            volume_job("j", "q", ["data"]),
        ],
        binds={"j-0": "n1"},
    ),
    # Volume mode must match: a Block PV does not serve a Filesystem claim.
    Scenario(
        "volume-mode-mismatch",
        [
            *TWO,
            pv("block", node="n0", volume_mode="Block"),
            pv("fs", node="n1"),
            pvc("data"),
            volume_job("j", "q", ["data"]),
        ],
        binds={"j-0": "n1"},
    ),
    # The claim's selector: only the PV labelled tier=gold (on n1) serves it.
    Scenario(
        "selector",
        [
            *TWO,
            pv("plain", node="n0"),
            pv("gold", node="n1", labels={"tier": "gold"}),
            pvc("data", selector={"matchLabels": {"tier": "gold"}}),
            volume_job("j", "q", ["data"]),
        ],
        binds={"j-0": "n1"},
    ),
    # A PV bound (claimRef) to another claim, or not Available, serves nobody else.
    Scenario(
        "claimed-or-released-pv",
        [
            *TWO,
            pv("theirs", node="n0", claim="other"),
            pv("released", node="n0", phase="Released"),
            pv("free", node="n1"),
            pvc("data"),
            volume_job("j", "q", ["data"]),
        ],
        binds={"j-0": "n1"},
    ),
    # A gang of two pods, one claim each, and one PV per node: reserved PVs are not
    # shared, so the second pod goes to n1 although n0 still has room.
    Scenario(
        "gang-takes-two-pvs",
        [
            *TWO,
            pv("pv0", node="n0"),
            pv("pv1", node="n1"),
            pvc("c0"),
            pvc("c1"),
            volume_job("g", "q", ["c0"], ["c1"]),
        ],
        binds={"g-0": "n0", "g-1": "n1"},
    ),
    # The same gang with only one PV: not started in part, the reason names the claim
    # that found none.
    Scenario(
        "gang-two-pods-one-pv",
        [*TWO, pv("pv0", node="n0"), pvc("c0"), pvc("c1"), volume_job("g", "q", ["c0"], ["c1"])],
        pending=["g"],
        reasons={"g": ['persistent volumes to bind persistentvolumeclaim "c1"']},
    ),
    # One pod, two claims, one PV on each node: no node serves both.
    Scenario(
        "two-claims-one-pod-need-two-pvs",
        [
            *TWO,
            pv("pv0", node="n0"),
            pv("pv1", node="n1"),
            pvc("c0"),
            pvc("c1"),
            volume_job("j", "q", ["c0", "c1"]),
        ],
        pending=["j"],
        reasons={"j": ['persistentvolumeclaims "c0", "c1"']},
    ),
    # One pod, two claims, two PVs on n1.
    Scenario(
        "two-claims-one-node",
        [
            *TWO,
            pv("pv0", node="n0"),
            pv("pv1", node="n1"),
            pv("pv2", node="n1"),
            pvc("c0"),
            pvc("c1"),
            volume_job("j", "q", ["c0", "c1"]),
        ],
        binds={"j-0": "n1"},
    ),
    # Dynamic provisioning: no PV, a provisioner, allowed only in zone b (n1).
    Scenario(
        "dynamic-allowed-topologies",
        [
            queue("q"),
            storage_class("fast", provisioner="ebs.csi.aws.com", allowed={"zone": ["b"]}),
            host("n0", labels={"zone": "a"}),
            host("n1", labels={"zone": "b"}),
            pvc("data", storage_class="fast"),
            volume_job("j", "q", ["data"]),
        ],
        binds={"j-0": "n1"},
    ),
    # Dynamic provisioning without allowed topologies: any node (n0 by name).
    Scenario(
        "dynamic-anywhere",
        [
            *TWO,
            storage_class("fast", provisioner="ebs.csi.aws.com"),
            pvc("data", storage_class="fast"),
            volume_job("j", "q", ["data"]),
        ],
        binds={"j-0": "n0"},
    ),
    # no-provisioner and no PV: nowhere.
    Scenario(
        "wffc-no-pv-no-provisioner",
        [*TWO, pvc("data"), volume_job("j", "q", ["data"])],
        pending=["j"],
        reasons={
            "j": [
                "2 node(s) didn't find available persistent volumes to bind "
                'persistentvolumeclaim "data"'
            ]
        },
    ),
    # An unbound claim of an Immediate class waits for the PV controller.
    Scenario(
        "immediate-unbound",
        [
            *TWO,
            storage_class("imm", mode="Immediate"),
            pv("pv1", node="n1", storage_class="imm"),
            pvc("data", storage_class="imm"),
            volume_job("j", "q", ["data"]),
        ],
        pending=["j"],
        reasons={"j": ["pod has unbound immediate PersistentVolumeClaims"]},
    ),
    # An unset storageClassName takes the default class.
    Scenario(
        "default-class",
        [
            queue("q"),
            storage_class("local", default=True),
            host("n0"),
            host("n1"),
            pv("pv1", node="n1"),
            pvc("data", storage_class=None),
            volume_job("j", "q", ["data"]),
        ],
        binds={"j-0": "n1"},
    ),
    # A pod placed by an earlier cycle (Binding on n0, its claim not yet bound) keeps the
    # PV it was placed for: b finds pv0 taken and goes to n1, where pv1 is.
    Scenario(
        "binding-pod-keeps-its-pv",
        [
            *TWO,
            pv("pv0", node="n0"),
            pv("pv1", node="n1"),
            pvc("a-data"),
            pvc("b-data"),
            with_claims(job("a", "q", 1, states=["Binding"], nodes=["n0"]), ["a-data"]),
            volume_job("b", "q", ["b-data"]),
        ],
        binds={"b-0": "n1"},
    ),
    # Two claims, only one servable: the reason names the claim that is not.
    Scenario(
        "two-claims-one-unservable",
        [
            *TWO,
            pv("pv0", node="n0"),
            pvc("c0"),
            pvc("c1", "50Gi"),
            volume_job("j", "q", ["c0", "c1"]),
        ],
        pending=["j"],
        reasons={"j": ['persistentvolumeclaim "c1"']},
    ),
    # A missing claim: the reason names it.
    Scenario(
        "missing-claim",
        [*TWO, volume_job("j", "q", ["nope"])],
        pending=["j"],
        reasons={"j": ['persistentvolumeclaim "nope" not found']},
    ),
    # A claim being deleted.
    Scenario(
        "claim-being-deleted",
        [*TWO, pv("pv1", node="n1"), pvc("data", deleting=True), volume_job("j", "q", ["data"])],
        pending=["j"],
        reasons={"j": ['persistentvolumeclaim "data" is being deleted']},
    ),
]


@pytest.mark.parametrize("scenario", SCENARIOS, ids=str)
def test_volume_scenario(scenario: Scenario) -> None:
    check(scenario)
