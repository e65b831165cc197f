"""The GVK registry: lookup order, duplicates, the builtin table and KAI-exact mode."""

from __future__ import annotations

import pytest
from adapter_builders import obj

from integrations import base, default, registry
from integrations.kubeflow import pytorch

GVK = base.GroupVersionKind


def test_lookup_exact_then_wildcard_then_default() -> None:
    reg = registry.build_registry()
    assert isinstance(reg.lookup(GVK("kubeflow.org", "v1", "PyTorchJob")), pytorch.PyTorchGrouper)
    assert reg.lookup(GVK("ray.io", "v1alpha1", "RayCluster")).name == "ray"
    assert reg.lookup_exact(GVK("ray.io", "v1", "RayCluster")) is None
    assert reg.has_match(GVK("ray.io", "v1", "RayJob"))
    assert not reg.has_match(GVK("example.com", "v1", "Widget"))
    assert reg.lookup(GVK("example.com", "v1", "Widget")) is reg.default
    assert reg.lookup(GVK("kubeflow.org", "v2", "PyTorchJob")) is reg.default


def test_duplicates_are_rejected() -> None:
    entry = (GVK("apps", "v1", "Deployment"), lambda _r: default.DefaultGrouper())
    with pytest.raises(registry.DuplicateGrouperError, match="apps/v1 Deployment"):
        registry.build_registry([entry, entry])


def test_builtin_table_has_unique_keys_and_kai_mode_drops_podmuster_kinds() -> None:
    keys = [gvk for gvk, _ in (*registry.BUILTIN, *registry.PODMUSTER_ONLY)]
    assert len(keys) == len(set(keys))
    kai = registry.build_registry(settings=base.GroupingSettings(reproduce_kai_bugs=True))
    assert kai.lookup(GVK("kubeflow.org", "v1", "PaddleJob")) is kai.default


def test_gvk_of_a_core_object() -> None:
    gvk = GVK.of(obj("v1", "Pod", "p"))
    assert (gvk.group, gvk.version, gvk.kind, gvk.api_version) == ("", "v1", "Pod", "v1")
    assert str(GVK("apps", "v1", "Deployment")) == "apps/v1 Deployment"
