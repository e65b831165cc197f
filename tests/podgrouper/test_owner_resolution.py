"""Top-owner walk: owner-less pod, chains, uid check, several owners, Forbidden at each
level, NotFound, first pod owner only."""

from __future__ import annotations

import pytest
from podgrouper_objects import fake, obj, pod, run

from kubeapi.errors import ForbiddenError, NotFoundError, TransientError
from podgrouper import owners

DEPLOY = obj("apps/v1", "Deployment", "web")
RS = obj("apps/v1", "ReplicaSet", "web-1", owners=(DEPLOY,))
POD = pod("web-1-a", RS)


def names(chain: owners.OwnerChain) -> list[str]:
    return [o["metadata"]["name"] for o in chain.owners]


def test_owner_less_pod_is_its_own_top_owner() -> None:
    bare = pod("bare")
    chain = run(owners.resolve_owners(bare, fake()))
    assert chain.owners == ()
    assert chain.top is bare


def test_walks_to_the_top_bottom_to_top_metadata_only() -> None:
    kube_ = fake(DEPLOY, RS)
    chain = run(owners.resolve_owners(POD, kube_))
    assert names(chain) == ["web-1", "web"]
    assert "spec" not in chain.top
    assert kube_.count("get_metadata") == 2
    assert kube_.count("get") == 0


def test_only_the_first_pod_owner_is_followed() -> None:
    other = obj("v1", "ConfigMap", "cm")
    two = pod("two", RS, other)
    chain = run(owners.resolve_owners(two, fake(DEPLOY, RS, other)))
    assert names(chain) == ["web-1", "web"]


def test_uid_mismatch_is_an_error_naming_the_field() -> None:
    replaced = {**DEPLOY, "metadata": {**DEPLOY["metadata"], "uid": "new-uid"}}
    with pytest.raises(owners.OwnerError, match=r"ReplicaSet ns/web-1 field .*uid.*new-uid"):
        run(owners.resolve_owners(POD, fake(replaced, RS)))


def test_an_intermediate_owner_with_two_owners_is_an_error() -> None:
    other = obj("apps/v1", "Deployment", "other")
    shared = obj("apps/v1", "ReplicaSet", "web-1", owners=(DEPLOY, other))
    with pytest.raises(owners.OwnerError, match=r"ReplicaSet ns/web-1.*2 owners"):
        run(owners.resolve_owners(POD, fake(DEPLOY, other, shared)))


@pytest.mark.parametrize(("forbidden", "expected"), [("web-1", []), ("web", ["web-1"])])
def test_forbidden_stops_at_the_last_reachable_owner(forbidden: str, expected: list[str]) -> None:
    kube_ = fake(DEPLOY, RS)
    kind = "ReplicaSet" if forbidden == "web-1" else "Deployment"
    kube_.fail("get_metadata", kind, "ns", forbidden, ForbiddenError)
    chain = run(owners.resolve_owners(POD, kube_))
    assert names(chain) == expected
    assert isinstance(chain.stopped_by, ForbiddenError)
    assert chain.top["metadata"]["name"] == (expected[-1] if expected else "web-1-a")


def test_not_found_owner_fails() -> None:
    with pytest.raises(NotFoundError, match="Deployment ns/web"):
        run(owners.resolve_owners(POD, fake(RS)))


def test_transient_error_propagates() -> None:
    kube_ = fake(DEPLOY, RS)
    kube_.fail("get_metadata", "ReplicaSet", "ns", "web-1", TransientError)
    with pytest.raises(TransientError):
        run(owners.resolve_owners(POD, kube_))


def test_owner_cycle_is_an_error() -> None:
    a = obj("v1", "ConfigMap", "a")
    b = obj("v1", "ConfigMap", "b", owners=(a,))
    a["metadata"]["ownerReferences"] = [
        {"apiVersion": "v1", "kind": "ConfigMap", "name": "b", "uid": "uid-b"}
    ]
    with pytest.raises(owners.OwnerError, match="cycle"):
        run(owners.resolve_owners(pod("p", a), fake(a, b)))


def test_cluster_scoped_owner_is_found() -> None:
    queue = {
        "apiVersion": "scheduling.run.ai/v2",
        "kind": "Queue",
        "metadata": {"name": "q1", "uid": "uid-q1"},
    }
    chain = run(owners.resolve_owners(pod("queued", queue), fake(queue)))
    assert names(chain) == ["q1"]
