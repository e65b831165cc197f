"""Start and stop a real control plane on loopback, or adopt an existing cluster.

``LocalControlPlane`` runs etcd, kube-apiserver and (optionally)
kube-controller-manager and kwok from the binaries that
``tests/controlplane/build.sh`` caches, each in its own process group with its
own log, on free loopback ports, and writes an admin kubeconfig. Further
components (kube-scheduler, operators) are started on it by name.
``existing_cluster`` wraps a cluster named by ``KUBECONFIG`` instead, so the
same tests run on a kind cluster.
"""

from __future__ import annotations

import json
import os
import shutil
import ssl
import tempfile
import urllib.request
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

from .kube import Kubectl, RestClient
from .pki import ClientCert, Pki
from .procs import ManagedProcess, free_port, wait_until

REPO = Path(__file__).resolve().parents[2]
BUILD_DIR = REPO / "tests" / "controlplane"
PODMUSTER_CRDS = REPO / "crds"
KWOK_STAGES_OWN = Path(__file__).resolve().parent / "kwok"
SERVICE_CIDR = "10.0.0.0/24"
KWOK_NODE_ANNOTATION = "kwok.x-k8s.io/node"


def versions() -> dict[str, str]:
    """The pinned versions from tests/controlplane/versions.env."""
    out: dict[str, str] = {}
    for line in (BUILD_DIR / "versions.env").read_text().splitlines():
        line = line.strip()
        if line and not line.startswith("#") and "=" in line:
            key, value = line.split("=", 1)
            out[key] = value
    return out


@dataclass(frozen=True)
class Binaries:
    """The cache directory build.sh fills: bin/, share/ and failed/."""

    root: Path

    @classmethod
    def default(cls) -> Binaries:
        v = versions()
        base = Path(os.environ.get("PODMUSTER_CACHE_DIR", Path.home() / ".cache" / "podmuster"))
        return cls(base / "controlplane" / f"v{v['K8S_VERSION']}-v{v['ETCD_VERSION']}")

    def path(self, name: str) -> Path | None:
        exe = self.root / "bin" / name
        return exe if os.access(exe, os.X_OK) else None

    def require(self, name: str) -> Path:
        exe = self.path(name)
        if exe is None:
            raise FileNotFoundError(
                f"{name} is not built in {self.root}/bin: run bash tests/controlplane/build.sh"
                + self.failure(name)
            )
        return exe

    def failure(self, name: str) -> str:
        """Why ``name`` is missing, from build.sh's failure log, or ''."""
        log = self.root / "failed" / f"{name}.log"
        if not log.exists():
            return ""
        lines = log.read_text(errors="replace").splitlines()
        return f" (its build failed; {log}:\n" + "\n".join(lines[-8:]) + ")"

    def share(self, *parts: str) -> Path:
        return self.root.joinpath("share", *parts)


@dataclass
class Cluster:
    """What a test gets: a kubeconfig, kubectl, and the processes run for it."""

    kubeconfig: Path
    kubectl: Kubectl
    binaries: Binaries
    workdir: Path
    local: LocalControlPlane | None = None
    processes: dict[str, ManagedProcess] = field(default_factory=dict)

    def spawn(self, name: str, argv: Sequence[str]) -> ManagedProcess:
        proc = ManagedProcess(name, argv, self.workdir).start()
        self.processes[name] = proc
        return proc

    def stop(self) -> None:
        for proc in reversed(list(self.processes.values())):
            proc.stop()

    def cleanup(self) -> None:
        """Remove the work directory (logs included): only after a green run."""
        shutil.rmtree(self.workdir, ignore_errors=True)

    def log_report(self, lines: int = 15) -> str:
        """Where each component's log is, and its last lines."""
        out = []
        for name, proc in self.processes.items():
            state = "running" if proc.alive() else "EXITED"
            out.append(f"--- {name} [{state}] {proc.log_path}\n{proc.tail(lines)}")
        return "\n".join(out)

    def start_kwok(self) -> ManagedProcess:
        """kwok keeps nodes annotated kwok.x-k8s.io/node=fake Ready and runs their pods."""
        port = free_port()
        stages = sorted(self.binaries.share("kwok-stages").glob("*.yaml"))
        stages += sorted(KWOK_STAGES_OWN.glob("*.yaml"))
        kwok = self.spawn(
            "kwok",
            [
                str(self.binaries.require("kwok")),
                f"--kubeconfig={self.kubeconfig}",
                "--manage-all-nodes=false",
                f"--manage-nodes-with-annotation-selector={KWOK_NODE_ANNOTATION}=fake",
                "--manage-nodes-with-label-selector=",
                "--manage-single-node=",
                "--cidr=10.244.0.0/16",
                "--node-ip=10.244.0.1",
                f"--server-address=127.0.0.1:{port}",
                *(f"--config={s}" for s in stages),
            ],
        )
        wait_until("kwok /healthz", lambda: http_ok(f"http://127.0.0.1:{port}/healthz"), 60, [kwok])
        return kwok


def http_ok(url: str, ctx: ssl.SSLContext | None = None) -> bool:
    with urllib.request.urlopen(url, timeout=2, context=ctx) as resp:
        status: int = resp.status
        return status == 200


WORKLOAD_API_GATES = (
    "GenericWorkload",
    "CompositePodGroup",
    "TopologyAwareWorkloadScheduling",
    "WorkloadWithJob",
)
"""Kubernetes 1.37's workload-aware scheduling API (``scheduling.k8s.io`` Workload,
PodGroup, CompositePodGroup; Job ``spec.scheduling``), served by every test cluster:
harmless for pods that name no PodGroup. The Job controller's own Workloads
(``WorkloadWithJob`` on kube-controller-manager) are left off by default, as they would
change how every Job is grouped; ``controller_manager_args`` turns them on."""
WORKLOAD_API_ARGS = (
    f"--feature-gates={','.join(f'{gate}=true' for gate in WORKLOAD_API_GATES)}",
    "--runtime-config=scheduling.k8s.io/v1beta1=true,scheduling.k8s.io/v1alpha3=true",
)


class LocalControlPlane:
    """etcd + kube-apiserver (+ kube-controller-manager, kwok) on loopback ports."""

    def __init__(
        self,
        binaries: Binaries,
        *,
        workdir: Path | None = None,
        controller_manager: bool = True,
        kwok: bool = True,
        disable_admission: Sequence[str] = (),
        apiserver_args: Sequence[str] = (),
        controller_manager_args: Sequence[str] = (),
    ) -> None:
        self.binaries = binaries
        self.workdir = workdir or Path(tempfile.mkdtemp(prefix="podmuster-e2e-"))
        self.want_kcm = controller_manager
        self.want_kwok = kwok
        self.disable_admission = list(disable_admission)
        self.apiserver_args = list(apiserver_args)
        self.controller_manager_args = list(controller_manager_args)
        self.api_port = 0
        self.pki: Pki | None = None
        self.admin: ClientCert | None = None
        self.kubeconfig = self.workdir / "kubeconfig"
        kubectl = Kubectl(str(binaries.require("kubectl")), self.kubeconfig)
        self.cluster = Cluster(self.kubeconfig, kubectl, binaries, self.workdir, self)

    @property
    def server(self) -> str:
        return f"https://127.0.0.1:{self.api_port}"

    # -- lifecycle -----------------------------------------------------------

    def start(self) -> Cluster:
        """Start the components; on any failure stop what was started and re-raise."""
        try:
            self._start_etcd_and_apiserver()
            if self.want_kcm:
                self._start_kcm()
            if self.want_kwok and self.binaries.path("kwok") is not None:
                self.cluster.start_kwok()
        except BaseException:
            self.cluster.stop()
            raise
        return self.cluster

    def cleanup(self) -> None:
        self.cluster.cleanup()

    def rest(self) -> RestClient:
        assert self.pki is not None
        assert self.admin is not None
        return RestClient(
            "127.0.0.1", self.api_port, self.pki.ca_cert, self.admin.cert, self.admin.key
        )

    # -- components ----------------------------------------------------------

    def spawn(self, name: str, argv: Sequence[str]) -> ManagedProcess:
        return self.cluster.spawn(name, argv)

    def _start_etcd_and_apiserver(self) -> None:
        self.pki = Pki.create(self.workdir / "pki")
        self.admin = self.pki.client("admin", ("system:masters",))
        etcd_port, peer_port = free_port(), free_port()
        etcd_url = f"http://127.0.0.1:{etcd_port}"
        peer_url = f"http://127.0.0.1:{peer_port}"
        etcd = self.spawn(
            "etcd",
            [
                str(self.binaries.require("etcd")),
                "--name=default",
                f"--data-dir={self.workdir / 'etcd-data'}",
                f"--listen-client-urls={etcd_url}",
                f"--advertise-client-urls={etcd_url}",
                f"--listen-peer-urls={peer_url}",
                f"--initial-advertise-peer-urls={peer_url}",
                f"--initial-cluster=default={peer_url}",
                "--listen-metrics-urls=",
                "--unsafe-no-fsync=true",
                "--quota-backend-bytes=8589934592",
                "--log-level=warn",
            ],
        )
        wait_until("etcd /health", lambda: http_ok(f"{etcd_url}/health"), 60, [etcd])

        self.api_port = free_port()
        pki = self.pki
        admission = ",".join(self.disable_admission)
        apiserver = self.spawn(
            "kube-apiserver",
            [
                str(self.binaries.require("kube-apiserver")),
                f"--etcd-servers={etcd_url}",
                "--bind-address=127.0.0.1",
                "--advertise-address=127.0.0.1",
                f"--secure-port={self.api_port}",
                "--endpoint-reconciler-type=none",
                f"--cert-dir={self.workdir / 'apiserver-certs'}",
                f"--tls-cert-file={pki.serving_cert}",
                f"--tls-private-key-file={pki.serving_key}",
                f"--client-ca-file={pki.ca_cert}",
                f"--service-account-issuer=https://127.0.0.1:{self.api_port}",
                f"--service-account-key-file={pki.sa_pub}",
                f"--service-account-signing-key-file={pki.sa_key}",
                f"--service-cluster-ip-range={SERVICE_CIDR}",
                "--authorization-mode=Node,RBAC",
                "--allow-privileged=true",
                *([f"--disable-admission-plugins={admission}"] if admission else []),
                *WORKLOAD_API_ARGS,
                *self.apiserver_args,
            ],
        )
        ctx = ssl.create_default_context(cafile=str(pki.ca_cert))
        wait_until(
            "kube-apiserver /readyz",
            lambda: http_ok(f"{self.server}/readyz", ctx),
            120,
            [etcd, apiserver],
        )
        self._write_kubeconfig()

    def _write_kubeconfig(self) -> None:
        assert self.pki is not None
        assert self.admin is not None
        config = {
            "apiVersion": "v1",
            "kind": "Config",
            "clusters": [
                {
                    "name": "podmuster-e2e",
                    "cluster": {
                        "server": self.server,
                        "certificate-authority": str(self.pki.ca_cert),
                    },
                }
            ],
            "users": [
                {
                    "name": "admin",
                    "user": {
                        "client-certificate": str(self.admin.cert),
                        "client-key": str(self.admin.key),
                    },
                }
            ],
            "contexts": [
                {"name": "podmuster-e2e", "context": {"cluster": "podmuster-e2e", "user": "admin"}}
            ],
            "current-context": "podmuster-e2e",
        }
        self.kubeconfig.write_text(json.dumps(config, indent=2))

    def _start_kcm(self) -> None:
        assert self.pki is not None
        kcm = self.spawn(
            "kube-controller-manager",
            [
                str(self.binaries.require("kube-controller-manager")),
                f"--kubeconfig={self.kubeconfig}",
                "--leader-elect=false",
                "--secure-port=0",
                f"--service-cluster-ip-range={SERVICE_CIDR}",
                f"--service-account-private-key-file={self.pki.sa_key}",
                f"--root-ca-file={self.pki.ca_cert}",
                "--use-service-account-credentials=false",
                "--kube-api-qps=200",
                "--kube-api-burst=400",
                "--concurrent-job-syncs=20",
                *self.controller_manager_args,
            ],
        )
        kubectl = self.cluster.kubectl
        # The service-account controller answers for the whole KCM being up.
        wait_until(
            "kube-controller-manager (default/default ServiceAccount)",
            lambda: kubectl.exists("serviceaccount", "default", "-n", "default"),
            120,
            [kcm],
            interval=0.5,
        )


def existing_cluster(binaries: Binaries) -> Cluster:
    """The cluster named by KUBECONFIG (for example a kind cluster)."""
    raw = os.environ.get("KUBECONFIG", "")
    if not raw:
        raise RuntimeError("PODMUSTER_E2E_EXISTING_CLUSTER=1 needs KUBECONFIG to name the cluster")
    path = Path(raw.split(os.pathsep)[0]).expanduser()
    built = binaries.path("kubectl")
    exe = str(built) if built is not None else shutil.which("kubectl")
    if exe is None:
        raise RuntimeError("no kubectl: build it (tests/controlplane/build.sh) or put it on PATH")
    kubectl = Kubectl(exe, path)
    kubectl.run("version")  # fail fast, with the server's own message
    return Cluster(path, kubectl, binaries, Path(tempfile.mkdtemp(prefix="podmuster-e2e-")))
