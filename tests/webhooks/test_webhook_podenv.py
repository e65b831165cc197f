"""The admission mutation of GPU-sharing pods: which pods, the ConfigMap name, which
container, env entries replaced and kept, idempotence."""

from __future__ import annotations

import copy
from typing import Any

import pytest

from webhooks.podenv import mutate_pod

ENV = [
    {
        "name": "NVIDIA_VISIBLE_DEVICES",
        "valueFrom": {
            "configMapKeyRef": {"name": "nb-shared-gpu", "key": "NVIDIA_VISIBLE_DEVICES"}
        },
    },
    {
        "name": "GPU_PORTION",
        "valueFrom": {"configMapKeyRef": {"name": "nb-shared-gpu", "key": "GPU_PORTION"}},
    },
    {  # KAI's deprecated name of the portion, which KAI's binder still writes (finding 4)
        "name": "RUNAI_NUM_OF_GPUS",
        "valueFrom": {
            "configMapKeyRef": {
                "name": "nb-shared-gpu",
                "key": "RUNAI_NUM_OF_GPUS",
                "optional": True,
            }
        },
    },
]


def pod(
    annotations: dict[str, str], *, name: str = "nb", scheduler: str = "kai-scheduler"
) -> dict[str, Any]:
    metadata: dict[str, Any] = {"namespace": "ml", "annotations": annotations}
    if name:
        metadata["name"] = name
    else:
        metadata["generateName"] = "nb-"
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": metadata,
        "spec": {
            "schedulerName": scheduler,
            "containers": [
                {"name": "main", "image": "x"},
                {"name": "sidecar", "image": "x", "env": [{"name": "A", "value": "1"}]},
            ],
            "initContainers": [{"name": "setup", "image": "x"}],
        },
    }


def apply(obj: dict[str, Any], patch: list[dict[str, Any]]) -> dict[str, Any]:
    """RFC 6902 ``add`` on object members and list items (all the mutation uses)."""
    out = copy.deepcopy(obj)
    for op in patch:
        assert op["op"] == "add"
        *parents, last = [
            p.replace("~1", "/").replace("~0", "~") for p in op["path"][1:].split("/")
        ]
        target: Any = out
        for part in parents:
            target = target[int(part)] if isinstance(target, list) else target[part]
        target[last] = op["value"]
    return out


def mutated(obj: dict[str, Any]) -> dict[str, Any]:
    return apply(obj, mutate_pod(obj, "kai-scheduler", "abc123"))


def test_a_fraction_pod_gets_the_annotation_and_env_on_its_first_container() -> None:
    out = mutated(pod({"gpu-fraction": "0.5"}))
    assert out["metadata"]["annotations"]["runai/shared-gpu-configmap"] == "nb-shared-gpu"
    assert out["spec"]["containers"][0]["env"] == ENV
    assert "env" not in out["spec"]["initContainers"][0]


def test_a_memory_pod_too() -> None:
    assert mutated(pod({"gpu-memory": "2000"}))["spec"]["containers"][0]["env"] == ENV


@pytest.mark.parametrize("annotations", [{"gpu-fraction": "0.5"}, {"gpu-memory": "2000"}])
def test_a_sharing_pod_gets_the_nvidia_runtime_class_as_kais_admission_gives(
    annotations: dict[str, str],
) -> None:
    # Finding 17: KAI's runtimeenforcement plugin, --gpu-fraction-runtime-class-name=nvidia
    assert mutated(pod(annotations))["spec"]["runtimeClassName"] == "nvidia"
    obj = pod(annotations)
    out = apply(obj, mutate_pod(obj, "kai-scheduler", "s", runtime_class="gpu"))
    assert out["spec"]["runtimeClassName"] == "gpu"


def test_a_runtime_class_of_the_pods_own_is_kept_and_none_is_given_when_disabled() -> None:
    own = pod({"gpu-fraction": "0.5"})
    own["spec"]["runtimeClassName"] = "kata-nvidia"
    assert mutated(own)["spec"]["runtimeClassName"] == "kata-nvidia"
    obj = pod({"gpu-fraction": "0.5"})
    out = apply(obj, mutate_pod(obj, "kai-scheduler", "s", runtime_class=""))
    assert "runtimeClassName" not in out["spec"]
    assert out["spec"]["containers"][0]["env"] == ENV
    assert "runtimeClassName" not in mutated(pod({}))["spec"]  # not a sharing pod


@pytest.mark.parametrize(
    "obj",
    [
        pod({}),
        pod({"gpu-fraction-num-devices": "2"}),
        pod({"mps": "true"}),
        pod({"gpu-fraction": "0.5"}, scheduler="default-scheduler"),
    ],
    ids=["no annotations", "devices only", "mps only", "another scheduler"],
)
def test_other_pods_are_left_alone(obj: dict[str, Any]) -> None:
    assert mutate_pod(obj, "kai-scheduler", "abc123") == []


def test_the_named_container_keeps_its_env_first() -> None:
    out = mutated(pod({"gpu-fraction": "0.5", "gpu-fraction-container-name": "sidecar"}))
    assert out["spec"]["containers"][1]["env"] == [{"name": "A", "value": "1"}, *ENV]
    assert "env" not in out["spec"]["containers"][0]


def test_an_init_container_can_be_named() -> None:
    out = mutated(pod({"gpu-fraction": "0.5", "gpu-fraction-container-name": "setup"}))
    assert out["spec"]["initContainers"][0]["env"] == ENV


def test_an_unknown_container_gets_nothing_but_the_annotation() -> None:
    patch = mutate_pod(
        pod({"gpu-fraction": "0.5", "gpu-fraction-container-name": "x"}), "kai-scheduler", "s"
    )
    assert [op["path"] for op in patch] == ["/metadata/annotations/runai~1shared-gpu-configmap"]


def test_user_entries_of_our_names_are_replaced() -> None:
    obj = pod({"gpu-fraction": "0.5"})
    obj["spec"]["containers"][0]["env"] = [
        {"name": "GPU_PORTION", "value": "1"},
        {"name": "B", "value": "2"},
    ]
    assert mutated(obj)["spec"]["containers"][0]["env"] == [{"name": "B", "value": "2"}, *ENV]


def test_an_existing_configmap_annotation_is_kept() -> None:
    out = mutated(pod({"gpu-fraction": "0.5", "runai/shared-gpu-configmap": "mine"}))
    assert out["metadata"]["annotations"]["runai/shared-gpu-configmap"] == "mine"
    refs = {e["valueFrom"]["configMapKeyRef"]["name"] for e in out["spec"]["containers"][0]["env"]}
    assert refs == {"mine"}


def test_a_generated_name_gets_the_suffix() -> None:
    out = mutated(pod({"gpu-fraction": "0.5"}, name=""))
    assert out["metadata"]["annotations"]["runai/shared-gpu-configmap"] == "nb-abc123-shared-gpu"


def test_the_mutation_is_idempotent() -> None:
    once = mutated(pod({"gpu-fraction": "0.5", "gpu-fraction-container-name": "sidecar"}))
    assert mutate_pod(once, "kai-scheduler", "zzz") == []
