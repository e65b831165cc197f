"""RayCluster / RayJob / RayService grouping (docs/semantics.md §4.3 Ray, §12).

Covers: the §4.3 minimum example (head + gpu group replicas 4, minReplicas 2,
numOfHosts 2 => 5); skipped groups (both counts 0, ``suspend`` — KubeRay's field —
and ``suspended``; KAI-compatible mode reads only ``suspended``); errors
(minReplicas > replicas, missing groupName, non-integer minReplicas, placement
without topology); subgroup topology from templates; ``ray.io/priority-class-name``;
the cluster found through RayJob/RayService status, then the owner chain, then the
embedded spec; pods mapped by ``ray.io/group``.
"""

from __future__ import annotations

from typing import Any

import pytest
from adapter_builders import Lookup, ctx, group, obj, pod, subgroups

from integrations import base
from integrations.grouping import group_workloads

RAY = "ray.io/v1"


def worker(
    name: str | None, replicas: Any = 1, min_replicas: Any = 0, **extra: Any
) -> dict[str, Any]:
    spec: dict[str, Any] = {
        "replicas": replicas,
        "minReplicas": min_replicas,
        "template": {},
        **extra,
    }
    if name is not None:
        spec["groupName"] = name
    return spec


def cluster(*groups: dict[str, Any], **kwargs: Any) -> dict[str, Any]:
    spec = {"headGroupSpec": {"template": {}}, "workerGroupSpecs": list(groups)}
    return obj(RAY, "RayCluster", "rc", spec=spec, **kwargs)


def ray_pod(group_name: str, owner: dict[str, Any]) -> dict[str, Any]:
    return pod(f"rc-{group_name}", labels={"ray.io/group": group_name}, owner=owner)


def test_min_member_example_from_the_reference() -> None:
    rc = cluster(worker("gpu", 4, 2, numOfHosts=2))
    spec = group(ctx(rc, ray_pod("gpu", rc)))
    assert spec.min_member == 5
    assert subgroups(spec) == [("headgroup", 1, None), ("gpu", 4, None)]
    assert spec.subgroup_of("rc-gpu") == "gpu"
    assert group(ctx(rc, ray_pod("headgroup", rc))).subgroup_of("rc-headgroup") == "headgroup"


def test_unknown_group_label_gets_no_subgroup() -> None:
    rc = cluster(worker("gpu", 1))
    spec = group(ctx(rc, ray_pod("cpu", rc)))
    assert spec.subgroup_of("rc-cpu") is None


def test_skipped_groups() -> None:
    rc = cluster(
        worker("zero", 0, 0),
        worker("paused", 3, 1, suspend=True),
        worker("paused-too", 3, 1, suspended=True),
        worker("cpu", 2, 0),
    )
    spec = group(ctx(rc, ray_pod("cpu", rc)))
    assert spec.min_member == 3
    assert [s.name for s in spec.subgroups] == ["headgroup", "cpu"]
    kai = group(ctx(rc, ray_pod("cpu", rc), reproduce_kai_bugs=True))
    assert kai.min_member == 4  # KAI does not see KubeRay's `suspend`
    assert [s.name for s in kai.subgroups] == ["headgroup", "paused", "cpu"]


@pytest.mark.parametrize(
    ("group_spec", "field", "problem"),
    [
        (worker("g", 1, 2), "spec.workerGroupSpecs[0].minReplicas", "greater than replicas"),
        (worker(None, 1), "spec.workerGroupSpecs[0].groupName", "is required"),
        (worker("g", 2, "one"), "spec.workerGroupSpecs[0].minReplicas", "expected an integer"),
        (worker("g", -1), "spec.workerGroupSpecs[0].replicas", "must be >= 0"),
    ],
)
def test_bad_worker_groups(group_spec: dict[str, Any], field: str, problem: str) -> None:
    rc = cluster(group_spec)
    with pytest.raises(base.GroupingError) as caught:
        group(ctx(rc, ray_pod("g", rc)))
    assert caught.value.obj == "RayCluster ns/rc"
    assert caught.value.field == field
    assert problem in str(caught.value)


def test_subgroup_topology_from_templates() -> None:
    notes = {"kai.scheduler/topology": "dc", "kai.scheduler/topology-required-placement": "rack"}
    rc = cluster(worker("gpu", 2, template={"metadata": {"annotations": notes}}))
    spec = group(ctx(rc, ray_pod("gpu", rc)))
    assert spec.subgroups[1].topology == base.TopologyConstraint("dc", "rack", "")
    assert spec.subgroups[0].topology is None
    bad = cluster(
        worker(
            "gpu",
            2,
            template={
                "metadata": {"annotations": {"kai.scheduler/topology-preferred-placement": "x"}}
            },
        )
    )
    with pytest.raises(base.GroupingError, match=r"needs kai\.scheduler/topology"):
        group(ctx(bad, ray_pod("gpu", bad)))


def test_ray_priority_label_overrides_unchecked() -> None:
    labels = {"ray.io/priority-class-name": "gold", "priorityClassName": "build"}
    rc = cluster(worker("gpu", 1), labels=labels)
    assert group(ctx(rc, ray_pod("gpu", rc))).priority_class_name == "gold"
    plain = cluster(worker("gpu", 1), labels={"priorityClassName": "build"})
    assert group(ctx(plain, ray_pod("gpu", plain))).priority_class_name == "build"


def test_rayjob_uses_the_cluster_named_in_its_status() -> None:
    embedded = {"headGroupSpec": {}, "workerGroupSpecs": [worker("small", 1)]}
    rayjob = obj(
        RAY,
        "RayJob",
        "job",
        labels={"kai.scheduler/queue": "rq"},
        spec={"rayClusterSpec": embedded},
        status={"rayClusterName": "job-live"},
    )
    live = obj(
        RAY,
        "RayCluster",
        "job-live",
        owner=rayjob,
        spec={"workerGroupSpecs": [worker("big", 6, 3)]},
    )
    the_pod = pod("job-live-big", labels={"ray.io/group": "big"}, owner=live)
    spec = group(ctx(rayjob, the_pod, (live, rayjob), lookup=Lookup(live)))
    assert (spec.name, spec.min_member, spec.queue) == ("pg-job-uid-job", 4, "rq")
    assert spec.owner.kind == "RayJob"
    # without the status: the cluster in the owner chain, then the embedded spec
    no_status = {k: v for k, v in rayjob.items() if k != "status"}
    assert group(ctx(no_status, the_pod, (live, no_status))).min_member == 4
    assert group(ctx(no_status, the_pod, (no_status,))).min_member == 2


def test_rayservice_prefers_the_active_cluster() -> None:
    active = obj(RAY, "RayCluster", "svc-a", spec={"workerGroupSpecs": [worker("w", 2)]})
    pending = obj(RAY, "RayCluster", "svc-p", spec={"workerGroupSpecs": [worker("w", 5)]})
    status = {
        "activeServiceStatus": {"rayClusterName": "svc-a"},
        "pendingServiceStatus": {"rayClusterName": "svc-p"},
    }
    svc = obj(RAY, "RayService", "svc", spec={"rayClusterConfig": {}}, status=status)
    lookup = Lookup(active, pending)
    assert group(ctx(svc, pod(owner=active), (active, svc), lookup=lookup)).min_member == 3
    status_pending = {"pendingServiceStatus": {"rayClusterName": "svc-p"}}
    svc2 = obj(RAY, "RayService", "svc", spec={"rayClusterConfig": {}}, status=status_pending)
    assert group(ctx(svc2, pod(owner=pending), (pending, svc2), lookup=lookup)).min_member == 6


def test_synthesized_ray_pods() -> None:
    rc = cluster(
        worker("tpu", 2, 1, numOfHosts=2),
        worker("off", 3, 0, suspend=True),
        labels={"kai.scheduler/queue": "team"},
    )
    result = group_workloads([rc])
    assert result.errors == ()
    pods = {p["metadata"]["name"]: p for p in result.pods}
    assert len(pods) == 5  # head + 2 replicas x 2 hosts; the suspended group has none
    head = next(p for n, p in pods.items() if n.startswith("rc-head-"))
    assert head["metadata"]["labels"]["ray.io/node-type"] == "head"
    assert head["metadata"]["labels"]["ray.io/group"] == "headgroup"
    workers = [p for n, p in pods.items() if n.startswith("rc-tpu-worker-")]
    assert len(workers) == 4
    assert {p["metadata"]["labels"]["ray.io/replica-host-index"] for p in workers} == {"0", "1"}
    assert all(p["metadata"]["labels"]["kai.scheduler/queue"] == "team" for p in workers)
    assert result.pod_groups[0]["spec"]["minMember"] == 3  # 1 + minReplicas 1 x 2 hosts


def test_legacy_podgroup_without_subgroups_stays_without() -> None:
    rc = cluster(worker("gpu", 2))
    legacy = obj("scheduling.run.ai/v2alpha2", "PodGroup", "pg-rc-uid-rc", spec={"minMember": 3})
    spec = group(ctx(rc, ray_pod("gpu", rc), lookup=Lookup(legacy)))
    assert (spec.min_member, spec.subgroups) == (3, ())
    current = obj(
        "scheduling.run.ai/v2alpha2",
        "PodGroup",
        "pg-rc-uid-rc",
        spec={"subGroups": [{"name": "headgroup"}]},
    )
    assert len(group(ctx(rc, ray_pod("gpu", rc), lookup=Lookup(current))).subgroups) == 2
