"""Framework operators (KubeRay, Kubeflow training operator) and their CRDs.

Each operator that tests/controlplane/build.sh could build from the Go module
proxy runs out of cluster with the admin kubeconfig; its CRDs come from its own
module (copied into the binary cache by build.sh). On an existing cluster
that already serves the operator's CRDs, the installed operator is used.
Frameworks whose modules the proxy does not serve (JobSet, LeaderWorkerSet)
get only their CRDs, from the shared corpus, so podgrouper tests can create
their objects.
"""

from __future__ import annotations

import base64
import os
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

import pytest
import yaml

from .controlplane import REPO, Cluster, http_ok
from .kube import Kubectl, Obj, wait_for
from .procs import ManagedProcess, free_port, wait_until

CORPUS_CRDS = REPO.parent / "shared" / "corpus" / "crds"


@dataclass(frozen=True)
class Operator:
    """How to run one operator binary out of cluster."""

    binary: str
    crd_dir: str  # under the cache's share/crds/
    probe_crd: str  # the CRD whose presence means "installed"
    args: tuple[str, ...]  # {probe_port} and {webhook_port} are filled in
    prepare: tuple[Obj, ...] = ()  # applied before the operator starts
    after_start: Callable[[Cluster], None] | None = None  # what a kubelet would do for it


TRAINING_CERT_DIR = Path("/tmp/k8s-webhook-server/serving-certs")  # fixed in v1.8.1


def mount_training_operator_certs(cluster: Cluster) -> None:
    """Copy the webhook Secret the operator's cert rotator filled into its cert dir.

    In a pod the kubelet mounts that Secret there; the rotator reports ready
    only once the files appear.
    """

    def secret() -> dict[str, str] | None:
        got = cluster.kubectl.get("secret", "training-operator-webhook-cert", "-n", "kubeflow")
        data: dict[str, str] = got.get("data") or {}
        return data if {"ca.crt", "tls.crt", "tls.key"} <= set(data) else None

    data = wait_for("the training operator's webhook Secret", secret, timeout=60)
    TRAINING_CERT_DIR.mkdir(parents=True, exist_ok=True)
    for key in ("ca.crt", "tls.crt", "tls.key"):
        (TRAINING_CERT_DIR / key).write_bytes(base64.b64decode(data[key]))


OPERATORS: dict[str, Operator] = {
    "kuberay": Operator(
        binary="kuberay",
        crd_dir="kuberay",
        probe_crd="rayclusters.ray.io",
        args=(
            "--metrics-addr=0",
            "--health-probe-bind-address=127.0.0.1:{probe_port}",
            "--enable-leader-election=false",
        ),
    ),
    "training-operator": Operator(
        binary="training-operator",
        crd_dir="training-operator",
        probe_crd="pytorchjobs.kubeflow.org",
        args=(
            "--metrics-bind-address=0",
            "--health-probe-bind-address=127.0.0.1:{probe_port}",
            "--leader-elect=false",
            "--webhook-server-port={webhook_port}",
        ),
        # Its cert rotator fills this Secret (it must exist) and patches this
        # (here empty) webhook configuration before the controllers start.
        prepare=(
            {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "kubeflow"}},
            {
                "apiVersion": "v1",
                "kind": "Secret",
                "metadata": {"name": "training-operator-webhook-cert", "namespace": "kubeflow"},
            },
            {
                "apiVersion": "admissionregistration.k8s.io/v1",
                "kind": "ValidatingWebhookConfiguration",
                "metadata": {"name": "validator.training-operator.kubeflow.org"},
                "webhooks": [],
            },
        ),
        after_start=mount_training_operator_certs,
    ),
}

# Frameworks with no operator module on the proxy: CRDs only, from the corpus.
CORPUS_ONLY = {
    "jobset": "jobset.x-k8s.io_jobsets.yaml",
    "leaderworkerset": "leaderworkerset.x-k8s.io_leaderworkersets.yaml",
}


def crd_names(files: Sequence[Path]) -> list[str]:
    names = []
    for path in files:
        for doc in yaml.safe_load_all(path.read_text()):
            if isinstance(doc, dict) and doc.get("kind") == "CustomResourceDefinition":
                names.append(str(doc["metadata"]["name"]))
    return names


def apply_crds(kubectl: Kubectl, files: Sequence[Path], timeout: int = 60) -> list[str]:
    """Server-side apply CRD files and wait until each is Established."""
    for path in files:
        kubectl.run(
            "apply", "--server-side", "--force-conflicts", "--field-manager=podmuster-e2e",
            "-f", str(path),
        )  # fmt: skip
    names = crd_names(files)
    if names:
        kubectl.run(
            "wait", "--for=condition=Established", f"--timeout={timeout}s",
            *(f"crd/{n}" for n in names),
        )  # fmt: skip
    return names


def start_operator(cluster: Cluster, name: str) -> str:
    """Make sure operator ``name`` serves the cluster; skip the test if it cannot."""
    op = OPERATORS[name]
    if name in cluster.processes:
        return name
    local = cluster.local is not None
    if not local and cluster.kubectl.exists("crd", op.probe_crd):
        return name  # installed in the existing cluster: use it
    exe = cluster.binaries.path(op.binary)
    if exe is None:
        pytest.skip(f"operator {name} is not built" + cluster.binaries.failure(op.binary))
    crds = sorted(cluster.binaries.share("crds", op.crd_dir).glob("*.yaml"))
    apply_crds(cluster.kubectl, crds)
    for manifest in op.prepare:
        cluster.kubectl.apply(manifest)
    port = free_port()
    argv = [str(exe), *(a.format(probe_port=port, webhook_port=free_port()) for a in op.args)]
    proc = ManagedProcess(
        name, argv, cluster.workdir, env={**os.environ, "KUBECONFIG": str(cluster.kubeconfig)}
    ).start()
    cluster.processes[name] = proc
    if op.after_start is not None:
        op.after_start(cluster)
    wait_until(f"{name} /readyz", lambda: http_ok(f"http://127.0.0.1:{port}/readyz"), 120, [proc])
    return name


def install_corpus_crds(cluster: Cluster, framework: str) -> list[str]:
    """CRDs of a framework with no served operator, from ../shared/corpus/crds."""
    path = CORPUS_CRDS / CORPUS_ONLY[framework]
    if not path.exists():
        pytest.skip(f"{path} is not there (the shared corpus sits beside the repository)")
    return apply_crds(cluster.kubectl, [path])
