"""``helm install``, ``helm upgrade`` and ``helm uninstall`` of charts/podmuster on the
real API server, hook Jobs included.

Why: hooks only show what they do when Helm runs them: the order (CRDs before the
default queues), that Helm waits for each hook Job, that the hook's RBAC is enough, and
that a finished hook leaves nothing behind. The control plane has no kubelet, so this
test plays the node for each hook Job's pod: it runs the pod's own command (kubectl with
the pod's arguments, the mounted ConfigMap's files, the pod's ServiceAccount token)
against the API server, then binds the pod to a kwok node and lets kwok finish it with
exit code 0, so the real Job controller marks the Job Complete and Helm goes on. The
image's kubectl is not run; the same kubectl version (the control plane's) is.
"""

from __future__ import annotations

import json
import subprocess
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
import yaml
from chartkit import CHART, Helm, token_kubeconfig
from test_chart_apply import kai_queue, may, release_name, reservations_in

from crds.names import ADMISSION_GATE, DEFAULT_SCHEDULER_NAME
from scheduler.binder.sharing import Fraction, Settings, configmap
from scheduler.live.committing import bind_request
from tests.e2e.controlplane import Cluster
from tests.e2e.kube import Kubectl, NotYet, wait_for
from tests.e2e.objects import bind, request_completion, wait_phase

pytestmark = [pytest.mark.chart, pytest.mark.e2e, pytest.mark.timeout(1200)]

QUEUES_CRD = "queues.scheduling.run.ai"
INSTANCE = "app.kubernetes.io/instance"
NAMESPACED = (
    "deployments", "services", "configmaps", "secrets", "serviceaccounts", "roles",
    "rolebindings", "jobs", "poddisruptionbudgets", "pods",
)  # fmt: skip
CLUSTER_SCOPED = (
    "clusterroles", "clusterrolebindings",
    "validatingwebhookconfigurations", "mutatingwebhookconfigurations",
)  # fmt: skip


def helm_args(helm_verb: str, release: str, namespace: str, cluster: Cluster) -> list[str]:
    args = [helm_verb, release]
    if helm_verb in ("install", "upgrade"):
        args.append(str(CHART))
    return [*args, "--namespace", namespace, "--kubeconfig", str(cluster.kubeconfig),
            "--timeout", "8m"]  # fmt: skip


def hook_pod(cluster: Cluster, namespace: str, job: str, proc: subprocess.Popen[str]) -> Any:
    """The pod the Job controller made for hook Job ``job`` (helm must still be waiting).
    Selected by the Job's uid: the pod of an earlier run of the hook may still be there."""
    if proc.poll() is not None:
        _, err = proc.communicate()
        raise AssertionError(f"helm exited {proc.returncode} before hook {job} ran: {err}")
    jobs = cluster.kubectl.items("jobs", "-n", namespace, f"--field-selector=metadata.name={job}")
    if not jobs:
        return NotYet(f"no Job {job} yet")
    uid = jobs[0]["metadata"]["uid"]
    pods = cluster.kubectl.items(
        "pods", "-n", namespace, "-l", f"batch.kubernetes.io/controller-uid={uid}"
    )
    return pods[0] if pods else NotYet(f"no pod of Job {job} yet")


def run_hook_pod(
    cluster: Cluster,
    namespace: str,
    job: str,
    node: str,
    proc: subprocess.Popen[str],
    tmp: Path,
    while_running: Callable[[str], None] = lambda user: None,
) -> list[str]:
    """Play the kubelet for hook Job ``job``: run each container's command as its pod
    would, call ``while_running`` with the pod's user name (its account and RBAC exist
    only until the hook succeeds), then let kwok finish the pod. Returns each
    container's output."""
    pod = wait_for(f"hook Job {job}'s pod", lambda: hook_pod(cluster, namespace, job, proc), 240)
    spec = pod["spec"]
    kubeconfig = token_kubeconfig(cluster, namespace, spec["serviceAccountName"], tmp / f"{job}.kc")
    as_hook = Kubectl(cluster.kubectl.binary, kubeconfig)
    mounted: dict[str, str] = {}  # the pod's ConfigMap mounts, as local directories
    for volume in spec.get("volumes", []):
        if "configMap" in volume:
            name = volume["configMap"]["name"]
            data = cluster.kubectl.get("configmap", name, "-n", namespace)["data"]
            local = tmp / f"{job}-{volume['name']}"
            local.mkdir(exist_ok=True)
            for key, text in data.items():
                (local / key).write_text(text)
            mounted[volume["name"]] = str(local)
    outputs = []
    for box in spec["containers"]:
        assert box["command"] == ["kubectl"], box
        args: list[str] = box["args"]
        for mount in box.get("volumeMounts", []):
            if mount["name"] in mounted:
                args = [a.replace(mount["mountPath"], mounted[mount["name"]]) for a in args]
        outputs.append(as_hook.run(*args))
    while_running(f"system:serviceaccount:{namespace}:{spec['serviceAccountName']}")
    name = pod["metadata"]["name"]
    bind(cluster, namespace, name, node)
    wait_phase(cluster, namespace, name, "Running", timeout=120)
    request_completion(cluster, namespace, name)
    return outputs


def finish(proc: subprocess.Popen[str], what: str) -> str:
    out, err = proc.communicate(timeout=600)
    assert proc.returncode == 0, f"{what} exited {proc.returncode}: {err}"
    return out


def crd_manifest(name: str) -> Any:
    for path in (CHART / "crds").glob("*.yaml"):
        doc = next(d for d in yaml.safe_load_all(path.read_text()) if d)
        if doc["metadata"]["name"] == name:
            return doc
    raise KeyError(name)


def scheduler_may_bind(cluster: Cluster, release: str) -> bool:
    role = cluster.kubectl.get("clusterrole", f"{release}-podmuster-scheduler")
    return any("pods/binding" in r.get("resources", []) for r in role["rules"])


def left_of(cluster: Cluster, namespace: str, release: str) -> list[str]:
    """Objects of the release still on the server."""
    found = []
    for kind in NAMESPACED:
        items = cluster.kubectl.items(kind, "-n", namespace, "-l", f"{INSTANCE}={release}")
        found += [f"{kind}/{o['metadata']['name']}" for o in items]
    for kind in CLUSTER_SCOPED:
        items = cluster.kubectl.items(kind, "-l", f"{INSTANCE}={release}")
        found += [f"{kind}/{o['metadata']['name']}" for o in items]
    return found


def lease(name: str, namespace: str) -> dict[str, Any]:
    return {
        "apiVersion": "coordination.k8s.io/v1",
        "kind": "Lease",
        "metadata": {"name": name, "namespace": namespace},
        "spec": {"holderIdentity": "a-replica", "leaseDurationSeconds": 15},
    }


def bare_pod(name: str, namespace: str, app: str) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name, "namespace": namespace, "labels": {"app": app}},
        "spec": {"containers": [{"name": "main", "image": "busybox"}]},
    }


BINDREQUESTS = "bindrequests.scheduling.run.ai"


def made_at_run_time(cluster: Cluster, namespace: str, node: str) -> dict[str, list[str]]:
    """In a user's namespace: a pod of our scheduler held behind the admission gate, the
    BindRequest and GPU-sharing ConfigMap the components would make for it (by their own
    builders, so with the label they really write), and look-alikes that are not ours.
    Returns the (kind, name)s cleanup must delete ("ours") and keep ("theirs")."""
    pod = bare_pod("gated", namespace, "trainer")
    pod["spec"] |= {"schedulerName": DEFAULT_SCHEDULER_NAME,
                    "schedulingGates": [{"name": ADMISSION_GATE}]}  # fmt: skip
    cluster.kubectl.create(pod)
    stored = cluster.kubectl.get("pod", "gated", "-n", namespace)
    ours = bind_request(stored, node, 3)
    cluster.kubectl.create(ours)
    shared = configmap(stored, Fraction(("g1",), "0.50"), ("GPU-1",))
    cluster.kubectl.create(shared)
    theirs = bind_request(stored, node, 3)  # another scheduler's: not labelled by us
    theirs["metadata"] |= {"name": "another-schedulers", "labels": {}}
    cluster.kubectl.create(theirs)
    own = {"apiVersion": "v1", "kind": "ConfigMap",
           "metadata": {"name": "settings", "namespace": namespace}, "data": {"a": "b"}}  # fmt: skip
    cluster.kubectl.create(own)
    return {
        "ours": [f"{BINDREQUESTS}/{ours['metadata']['name']}",
                 f"configmap/{shared['metadata']['name']}"],
        "theirs": [f"{BINDREQUESTS}/another-schedulers", "configmap/settings", "pod/gated"],
    }  # fmt: skip


def test_install_upgrade_uninstall_with_hooks(
    helm: Helm, cluster: Cluster, namespace: str, kwok_node: str, tmp_path: Path
) -> None:
    release = release_name()
    queues = [f"{release}-parent", f"{release}-default"]
    values: dict[str, Any] = {
        # The test cluster is shared: cluster-wide objects other tests also make are left
        # out or named for this release.
        "priorityClasses": {"create": False},
        "defaultQueues": {"parent": {"name": queues[0]}, "child": {"name": queues[1]}},
        "dashboard": {"enabled": True},
        "grafanaDashboard": {"enabled": True},
        **reservations_in(namespace),
    }
    job = f"{release}-podmuster-crd-upgrade"
    try:
        # --- install: the CRD hook runs before the default queues --------------------
        def crd_upgrader_may(user: str) -> None:
            """Create (a missing CRD, e.g. after --skip-crds) and patch the chart's
            CRDs, by name; nothing else."""
            group = "apiextensions.k8s.io"
            for verb in ("create", "patch"):
                assert may(cluster, user, verb, "customresourcedefinitions", group, QUEUES_CRD)
                assert not may(cluster, user, verb, "customresourcedefinitions", group, "x.io")
            for verb in ("delete", "update", "list", "get"):
                assert not may(cluster, user, verb, "customresourcedefinitions", group, QUEUES_CRD)

        with helm.started(
            *helm_args("install", release, namespace, cluster), values=values
        ) as proc:
            out = run_hook_pod(cluster, namespace, job, kwok_node, proc, tmp_path, crd_upgrader_may)
            assert "serverside-applied" in out[0], out
            finish(proc, "helm install")
        crd = cluster.kubectl.get("crd", QUEUES_CRD, "--show-managed-fields")
        managers = {(m["manager"], m["operation"]) for m in crd["metadata"]["managedFields"]}
        assert ("podmuster-crd-upgrade", "Apply") in managers
        for name in queues:
            assert cluster.kubectl.exists("queues.scheduling.run.ai", name)
        deployments = {
            d["metadata"]["name"] for d in cluster.kubectl.items("deployments", "-n", namespace)
        }
        assert deployments == {
            f"{release}-podmuster-{c}"
            for c in ("podgrouper", "scheduler", "binder", "controllers", "webhooks", "dashboard")
        }
        assert cluster.kubectl.exists(
            "configmap", f"{release}-podmuster-grafana-dashboard", "-n", namespace
        )
        assert not scheduler_may_bind(cluster, release)
        # hook-succeeded: the hook's Job, account, RBAC and ConfigMap are gone
        for kind in ("job", "serviceaccount", "configmap"):
            assert not cluster.kubectl.exists(kind, job, "-n", namespace), kind
        for kind in ("clusterrole", "clusterrolebinding"):
            assert not cluster.kubectl.exists(kind, job), kind

        # --- upgrade: a CRD an older release left behind is brought up to date -------
        stale = [{"op": "replace", "path": "/spec/versions/0/schema/openAPIV3Schema/description",
                  "value": "an older release's Queue"}]  # fmt: skip
        cluster.kubectl.run("patch", "crd", QUEUES_CRD, "--type=json", "-p", json.dumps(stale))
        assert (
            cluster.kubectl.get("crd", QUEUES_CRD)["spec"]["versions"][0]["schema"][
                "openAPIV3Schema"
            ]["description"]
            == "an older release's Queue"
        )
        upgraded = {**values, "scheduler": {"directBind": True}}
        with helm.started(
            *helm_args("upgrade", release, namespace, cluster), values=upgraded
        ) as proc:
            run_hook_pod(cluster, namespace, job, kwok_node, proc, tmp_path)
            finish(proc, "helm upgrade")
        want = crd_manifest(QUEUES_CRD)["spec"]["versions"][0]["schema"]["openAPIV3Schema"]
        got = cluster.kubectl.get("crd", QUEUES_CRD)["spec"]["versions"][0]["schema"]
        assert got["openAPIV3Schema"]["description"] == want["description"]
        assert scheduler_may_bind(cluster, release)
        scheduler = cluster.kubectl.get(
            "deployment", f"{release}-podmuster-scheduler", "-n", namespace
        )
        assert "--direct-bind" in scheduler["spec"]["template"]["spec"]["containers"][0]["args"]
        assert not cluster.kubectl.exists("job", job, "-n", namespace)

        # --- uninstall: the cleanup hook removes what the components made ------------
        leases = ["podmuster-scheduler", "podmuster-binder", "someone-elses"]
        for name in leases:
            cluster.kubectl.create(lease(name, namespace))
        ours = bare_pod("reservation", namespace, "kai-resource-reservation")
        ours["metadata"]["labels"] |= Settings().owner_labels()  # as the binder's
        cluster.kubectl.create(ours)
        # KAI's binder labels its reservation pods alike but for the binder's own labels
        cluster.kubectl.create(bare_pod("kais-reservation", namespace, "kai-resource-reservation"))
        cluster.kubectl.create(bare_pod("bystander", namespace, "other"))
        users = f"{release}-users"
        cluster.kubectl.run("create", "namespace", users)
        made = made_at_run_time(cluster, users, kwok_node)
        cleanup = f"{release}-podmuster-cleanup"

        def cleaner_may(user: str) -> None:
            """Delete the components' Leases by name and pods here; nothing else."""
            lease_group = "coordination.k8s.io"
            assert may(cluster, user, "delete", "leases", lease_group, leases[0], namespace)
            assert not may(cluster, user, "delete", "leases", lease_group, leases[2], namespace)
            assert not may(cluster, user, "update", "leases", lease_group, leases[0], namespace)
            assert may(cluster, user, "delete", "pods", "", "reservation", namespace)
            assert not may(cluster, user, "delete", "pods", "", "reservation", "default")
            assert not may(cluster, user, "create", "pods", "", "", namespace)
            # in every namespace, only listing and deleting BindRequests and ConfigMaps
            for resource, group in ((BINDREQUESTS.split(".")[0], "scheduling.run.ai"),
                                    ("configmaps", "")):  # fmt: skip
                assert may(cluster, user, "list", resource, group)
                assert may(cluster, user, "delete", resource, group, "x", users)
                for verb in ("create", "update", "patch", "get"):
                    assert not may(cluster, user, verb, resource, group, "x", users)
            assert not may(cluster, user, "delete", "secrets", "", "x", users)
            assert not may(cluster, user, "delete", "podgroups", "scheduling.run.ai", "x", users)
            assert not may(cluster, user, "patch", "pods", "", "gated", users)

        with helm.started(*helm_args("uninstall", release, namespace, cluster)) as proc:
            run_hook_pod(cluster, namespace, cleanup, kwok_node, proc, tmp_path, cleaner_may)
            finish(proc, "helm uninstall")
        left = {o["metadata"]["name"] for o in cluster.kubectl.items("leases", "-n", namespace)}
        assert left == {"someone-elses"}
        assert not cluster.kubectl.exists("pod", "reservation", "-n", namespace)
        assert cluster.kubectl.exists("pod", "kais-reservation", "-n", namespace)
        assert cluster.kubectl.exists("pod", "bystander", "-n", namespace)
        wait_for(
            "the BindRequest and ConfigMap the components labelled gone",
            lambda: (lambda rest: NotYet(f"left: {rest}") if rest else True)(
                [o for o in made["ours"] if cluster.kubectl.exists(o, "-n", users)]
            ),
            timeout=60,
        )
        for kept in made["theirs"]:
            assert cluster.kubectl.exists(kept, "-n", users), kept
        # the gate stays: the pod names our scheduler, so no other scheduler could place
        # it ungated, and a reinstall admits it through its queue (docs/install.md)
        gates = cluster.kubectl.get("pod", "gated", "-n", users)["spec"]["schedulingGates"]
        assert gates == [{"name": ADMISSION_GATE}]
        wait_for(
            "every object of the release gone",
            lambda: (lambda rest: NotYet(f"left: {rest}") if rest else True)(
                left_of(cluster, namespace, release)
            ),
            timeout=120,
        )
        # kept on purpose: the CRDs and the default queues (docs/install.md)
        assert cluster.kubectl.exists("crd", QUEUES_CRD)
        for name in queues:
            assert cluster.kubectl.exists("queues.scheduling.run.ai", name)
    finally:
        try:
            helm.run(*helm_args("uninstall", release, namespace, cluster), "--no-hooks",
                     "--ignore-not-found")  # fmt: skip
        finally:
            cluster.kubectl.run("delete", "queues.scheduling.run.ai", *queues, "--ignore-not-found")
            cluster.kubectl.run(
                "delete", "namespace", f"{release}-users", "--ignore-not-found", "--wait=false"
            )
            # the chart's own CRDs, whatever the test did to them
            cluster.kubectl.run(
                "apply", "--server-side", "--force-conflicts",
                "--field-manager=podmuster-chart-test", "-f", str(CHART / "crds"),
            )  # fmt: skip


def test_install_leaves_existing_queues_alone(helm: Helm, cluster: Cluster, namespace: str) -> None:
    """A default queue that exists already (a reinstall, or KAI's when installing beside
    it) keeps its quotas and uid; only a missing one is created. Helm's default hook
    policy, before-hook-creation, would delete it and create it afresh with quota 0."""
    release = release_name()
    parent, child = f"{release}-parent", f"{release}-default"
    values: dict[str, Any] = {
        "priorityClasses": {"create": False},
        "defaultQueues": {"parent": {"name": parent}, "child": {"name": child}},
        "crdUpgrade": {"enabled": False},
        "cleanup": {"enabled": False},
        # no webhook pod runs here: a Queue webhook would refuse the quota patch below
        "webhooks": {"enabled": False},
        **reservations_in(namespace),
    }
    gpu = {"quota": 4, "limit": -1, "overQuotaWeight": 1}

    def queue(name: str) -> tuple[str, Any]:
        got = cluster.kubectl.get("queues.scheduling.run.ai", name)
        return got["metadata"]["uid"], got["spec"]["resources"]["gpu"]

    def install() -> None:
        with helm.started(
            *helm_args("install", release, namespace, cluster), values=values
        ) as proc:
            finish(proc, "helm install")

    try:
        cluster.kubectl.create(kai_queue(parent, resources={"gpu": gpu}))
        before = queue(parent)
        install()
        assert queue(parent) == before  # left alone
        uid, created = queue(child)  # missing, so created
        assert created == {"quota": 0, "limit": -1, "overQuotaWeight": 1}
        assert (
            cluster.kubectl.get("queues.scheduling.run.ai", child)["spec"]["parentQueue"] == parent
        )
        # the platform team gives the child a quota; a reinstall keeps it
        cluster.kubectl.run("patch", "queues.scheduling.run.ai", child, "--type=merge",
                            "-p", json.dumps({"spec": {"resources": {"gpu": gpu}}}))  # fmt: skip
        helm.run(*helm_args("uninstall", release, namespace, cluster))
        install()
        assert queue(child) == (uid, gpu)
        assert queue(parent) == before
    finally:
        try:
            helm.run(*helm_args("uninstall", release, namespace, cluster), "--no-hooks",
                     "--ignore-not-found")  # fmt: skip
        finally:
            cluster.kubectl.run("delete", "queues.scheduling.run.ai", child, parent,
                                "--ignore-not-found")  # fmt: skip
