"""The binder's fractional-GPU rules as tables: reading the BindRequest, reservation pod
names and shape, the reserve steps (create, wait, timeout, wrong node, ready), the pod's
labels and its ConfigMap."""

from __future__ import annotations

import re
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from crds.names import CREATED_BY_LABEL
from scheduler.binder.sharing import (
    Fraction,
    Settings,
    configmap,
    fraction_of,
    pod_patch,
    reservation_name,
    reservation_pod,
    reserve,
)

SETTINGS = Settings(timeout=40.0)


def request(
    groups: list[str] | None = None,
    portion: str = "0.50",
    count: int | None = 1,
    kind: str = "Fraction",
) -> dict[str, Any]:
    received: dict[str, Any] = {"portion": portion}
    if count is not None:
        received["count"] = count
    return {
        "spec": {
            "podName": "p",
            "selectedNode": "n1",
            "receivedResourceType": kind,
            "receivedGPU": received,
            "selectedGPUGroups": ["g1"] if groups is None else groups,
        }
    }


def test_regular_requests_are_not_fractions() -> None:
    assert fraction_of(request(kind="Regular")) is None
    assert fraction_of({"spec": {}}) is None


def test_a_fraction_request() -> None:
    assert fraction_of(request()) == Fraction(("g1",), "0.50")
    # a fraction below 0.005 (the scheduler charges at least 0.001) is written "0.00"
    assert fraction_of(request(portion="0.00")) == Fraction(("g1",), "0.00")
    assert fraction_of(request(["a", "b"], count=2)) == Fraction(("a", "b"), "0.50")


@pytest.mark.parametrize(
    ("req", "message"),
    [
        (
            request(portion="-0.01"),
            "spec.receivedGPU.portion: must be a number in [0, 1], got '-0.01'",
        ),
        (request(portion="1.5"), "got '1.5'"),
        (request(portion="half"), "got 'half'"),
        (
            request([]),
            "spec.selectedGPUGroups: a Fraction BindRequest needs at least one GPU group",
        ),
        (request(["a"], count=2), "1 group(s) for receivedGPU.count 2 (one group per device)"),
        (request(["a", "a"], count=2), "a group is listed twice (a, a)"),
    ],
)
def test_broken_fraction_requests_say_which_field(req: dict[str, Any], message: str) -> None:
    got = fraction_of(req)
    assert isinstance(got, str)
    assert message in got


def test_reservation_names_are_short_stable_and_distinct() -> None:
    name = reservation_name("n1", "group-a")
    assert name.startswith("gpu-reservation-n1-")
    assert name == reservation_name("n1", "group-a")
    assert name != reservation_name("n1", "group-b")
    long = reservation_name("node-" + "x" * 200, "g")
    assert len(long) <= 63
    assert not long.replace("gpu-reservation-", "").startswith("-")


LABEL = st.from_regex(r"[a-z0-9]([a-z0-9-]{0,20}[a-z0-9])?", fullmatch=True)
SUBDOMAIN = re.compile(r"[a-z0-9]([a-z0-9-]*[a-z0-9])?(\.[a-z0-9]([a-z0-9-]*[a-z0-9])?)*")


@given(st.lists(LABEL, min_size=1, max_size=8).map(".".join), st.text(min_size=1))
def test_reservation_names_are_valid_pod_names_of_at_most_63(node: str, group: str) -> None:
    name = reservation_name(node, group)
    assert len(name) <= 63
    assert SUBDOMAIN.fullmatch(name), name


def test_the_reservation_pod() -> None:
    pod = reservation_pod("n1", "g1", SETTINGS)
    meta, spec = pod["metadata"], pod["spec"]
    assert meta["namespace"] == "kai-resource-reservation"
    assert meta["labels"] == {
        "app": "kai-resource-reservation",
        "runai-gpu-group": "g1",
        # this binder's, so its sync and the chart's cleanup touch no other reservation pod
        "podmuster.io/created-by": "binder",
        "podmuster.io/scheduler-name": "kai-scheduler",
    }
    assert meta["annotations"] == {"karpenter.sh/do-not-disrupt": "true"}
    assert spec["nodeName"] == "n1"
    assert "schedulerName" not in spec
    assert spec["serviceAccountName"] == "kai-resource-reservation"
    assert "runtimeClassName" not in spec  # none by default, as KAI's
    assert spec["tolerations"] == [{"operator": "Exists"}]
    resources = spec["containers"][0]["resources"]
    # only the GPU is limited: a 20Mi memory limit could OOM-kill the reservation image
    assert resources["limits"] == {"nvidia.com/gpu": "1"}
    assert resources["requests"] == {"cpu": "2m", "memory": "20Mi", "nvidia.com/gpu": "1"}
    bare = reservation_pod(
        "n1",
        "g1",
        Settings(runtime_class="nvidia", namespace="rr", image="img", scheduler_name="pm"),
    )
    assert bare["metadata"]["labels"]["podmuster.io/scheduler-name"] == "pm"
    assert bare["spec"]["runtimeClassName"] == "nvidia"
    assert bare["metadata"]["namespace"] == "rr"
    assert bare["spec"]["containers"][0]["image"] == "img"


def reservation(
    group: str = "g1", node: str = "n1", uuid: str = "", deleting: bool = False
) -> dict[str, Any]:
    pod = reservation_pod(node, group, SETTINGS)
    if uuid:
        pod["metadata"]["annotations"]["run.ai/reserve_for_gpu_index"] = uuid
    if deleting:
        pod["metadata"]["deletionTimestamp"] = "2026-01-01T00:00:00Z"
    return pod


TWO = Fraction(("g1", "g2"), "0.50")


def test_missing_reservation_pods_are_created() -> None:
    step = reserve(TWO, "n1", {"g1": reservation(uuid="GPU-1"), "g2": None}, 0.0, SETTINGS)
    assert step.kind == "create"
    assert [p["metadata"]["labels"]["runai-gpu-group"] for p in step.pods] == ["g2"]


def test_waits_until_every_gpu_is_reported_then_times_out() -> None:
    found = {"g1": reservation(uuid="GPU-1"), "g2": reservation("g2")}
    step = reserve(TWO, "n1", found, 39.9, SETTINGS)
    assert step.kind == "wait"
    step = reserve(TWO, "n1", found, 40.0, SETTINGS)
    assert step.kind == "fail"
    assert step.timed_out
    name = reservation_name("n1", "g2")
    assert step.reason == (
        f"reservation pod(s) kai-resource-reservation/{name} did not report a GPU "
        "(annotation run.ai/reserve_for_gpu_index) within 40s"
    )


def test_a_reservation_pod_being_deleted_is_not_ready() -> None:
    found = {"g1": reservation(uuid="GPU-1", deleting=True)}
    assert reserve(Fraction(("g1",), "0.5"), "n1", found, 0, SETTINGS).kind == "wait"


def test_ready_gives_the_uuids_in_group_order() -> None:
    found = {"g2": reservation("g2", uuid="GPU-2"), "g1": reservation(uuid="GPU-1")}
    step = reserve(TWO, "n1", found, 0.0, SETTINGS)
    assert (step.kind, step.uuids) == ("ready", ("GPU-1", "GPU-2"))


def test_a_reservation_pod_on_another_node_fails() -> None:
    found = {"g1": reservation(node="n2", uuid="GPU-1")}
    found["g1"]["metadata"]["name"] = reservation_name("n1", "g1")
    step = reserve(Fraction(("g1",), "0.5"), "n1", found, 0.0, SETTINGS)
    assert step.kind == "fail"
    assert "of GPU group g1 is on node n2, not n1" in step.reason


def test_a_name_collision_fails() -> None:
    found = {"g1": reservation("other", uuid="GPU-1")}
    step = reserve(Fraction(("g1",), "0.5"), "n1", found, 0.0, SETTINGS)
    assert step.kind == "fail"
    assert "belongs to GPU group 'other', not 'g1'" in step.reason


def user_pod(
    labels: dict[str, str] | None = None, annotations: dict[str, str] | None = None
) -> dict[str, Any]:
    return {
        "metadata": {
            "name": "nb",
            "namespace": "ml",
            "uid": "u1",
            "labels": labels or {},
            "annotations": annotations or {},
        }
    }


def test_pod_patch_one_device() -> None:
    patch = pod_patch(
        user_pod(annotations={"runai/shared-gpu-configmap": "nb-x-shared-gpu"}),
        Fraction(("g1",), "0.50"),
    )
    assert patch == {
        "metadata": {
            "labels": {"runai-gpu-group": "g1"},
            "annotations": {
                "received-resource-type": "Fraction",
                "runai/shared-gpu-configmap": "nb-x-shared-gpu",
            },
        }
    }


def test_pod_patch_records_the_gpus() -> None:
    patch = pod_patch(user_pod(), TWO, ("GPU-1", "GPU-2"))
    assert patch["metadata"]["annotations"]["podmuster.io/gpu-uuids"] == "GPU-1,GPU-2"


def test_pod_patch_several_devices_replaces_stale_group_labels() -> None:
    pod = user_pod({"runai-gpu-group/old": "old", "app": "x"})
    labels = pod_patch(pod, TWO)["metadata"]["labels"]
    assert labels == {
        "runai-gpu-group/old": None,
        "runai-gpu-group": "g1",
        "runai-gpu-group/g1": "g1",
        "runai-gpu-group/g2": "g2",
    }
    assert (
        pod_patch(pod, TWO)["metadata"]["annotations"]["runai/shared-gpu-configmap"]
        == "nb-shared-gpu"
    )


def test_configmap_holds_uuids_and_portion_owned_by_the_pod() -> None:
    cm = configmap({"apiVersion": "v1", "kind": "Pod", **user_pod()}, TWO, ("GPU-1", "GPU-2"))
    assert cm["metadata"]["name"] == "nb-shared-gpu"
    assert cm["metadata"]["namespace"] == "ml"
    assert cm["metadata"]["ownerReferences"] == [
        {"apiVersion": "v1", "kind": "Pod", "name": "nb", "uid": "u1"}
    ]
    # the chart's cleanup hook deletes it by this label after an uninstall
    assert cm["metadata"]["labels"] == {CREATED_BY_LABEL: "binder"}
    assert cm["data"] == {
        "NVIDIA_VISIBLE_DEVICES": "GPU-1,GPU-2",
        "GPU_PORTION": "0.50",
        "RUNAI_NUM_OF_GPUS": "0.50",  # KAI still writes it (deprecated name of GPU_PORTION)
    }


def test_cdi_names_the_devices() -> None:
    cm = configmap(
        {"apiVersion": "v1", "kind": "Pod", **user_pod()}, TWO, ("GPU-1", "GPU-2"), cdi=True
    )
    assert cm["data"]["NVIDIA_VISIBLE_DEVICES"] == (
        "k8s.device-plugin.nvidia.com/gpu=GPU-1,k8s.device-plugin.nvidia.com/gpu=GPU-2"
    )
