"""The scheduler on a kubeconfig whose user is an exec credential plugin.

The plugin is a script this test writes: its first run prints a token the API server
refuses, every later run a ServiceAccount token it accepts (the SA is bound to
cluster-admin). ``podmuster run scheduler --kubeconfig FILE`` must get a 401, run the
plugin again, retry, and then schedule a pod on a kwok node (a BindRequest appears).
"""

from __future__ import annotations

import json
import sys
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest

from .controlplane import Cluster
from .kube import wait_for
from .live import component
from .test_live_scheduler import bind_requests, gang, queue

pytestmark = pytest.mark.e2e

PLUGIN = """#!{python}
import json, pathlib
here = pathlib.Path(__file__).parent
calls = here / "calls"
n = len(calls.read_text()) if calls.exists() else 0
calls.write_text("x" * (n + 1))
token = "not-a-valid-token" if n == 0 else (here / "token").read_text().strip()
print(json.dumps({{"apiVersion": "client.authentication.k8s.io/v1", "kind": "ExecCredential",
    "status": {{"token": token, "expirationTimestamp": "2999-01-01T00:00:00Z"}}}}))
"""


@pytest.fixture
def exec_kubeconfig(cluster: Cluster, namespace: str, tmp_path: Path) -> Iterator[Path]:
    """A kubeconfig for ``cluster`` whose user runs the plugin above."""
    account = "exec-user"
    binding = f"exec-user-{uuid.uuid4().hex[:6]}"
    cluster.kubectl.run("create", "serviceaccount", account, "-n", namespace)
    cluster.kubectl.run("create", "clusterrolebinding", binding,
                        "--clusterrole=cluster-admin", f"--serviceaccount={namespace}:{account}")  # fmt: skip
    token = cluster.kubectl.run("create", "token", account, "-n", namespace, "--duration=1h")
    (tmp_path / "token").write_text(token.strip())
    script = tmp_path / "plugin.py"
    script.write_text(PLUGIN.format(python=sys.executable))
    script.chmod(0o755)
    admin = json.loads(cluster.kubeconfig.read_text())
    config = {
        "apiVersion": "v1",
        "kind": "Config",
        "clusters": admin["clusters"],
        "users": [
            {
                "name": "plugin",
                "user": {
                    "exec": {
                        "apiVersion": "client.authentication.k8s.io/v1",
                        "command": "./plugin.py",
                        "interactiveMode": "Never",
                    }
                },
            }
        ],
        "contexts": [
            {
                "name": "plugin",
                "context": {"cluster": admin["clusters"][0]["name"], "user": "plugin"},
            }
        ],
        "current-context": "plugin",
    }
    path = tmp_path / "kubeconfig"
    path.write_text(json.dumps(config))
    yield path
    cluster.kubectl.run("delete", "clusterrolebinding", binding, "--ignore-not-found")


def test_scheduler_authenticates_with_an_exec_plugin_and_reexecs_on_401(
    cluster: Cluster, namespace: str, kwok_node: str, exec_kubeconfig: Path
) -> None:
    queue_name = f"q-{uuid.uuid4().hex[:6]}"
    cluster.kubectl.create(queue(queue_name))
    flags = [f"--kubeconfig={exec_kubeconfig}", "--schedule-period=0.5", "--metrics-port=-1",
             "--log-format=json"]  # fmt: skip
    try:
        with component(cluster, "scheduler", flags):
            for obj in gang(namespace, "viaexec", queue_name, kwok_node, 1, "1"):
                cluster.kubectl.create(obj)
            found = wait_for(
                "a BindRequest for viaexec-0",
                lambda: bind_requests(cluster, namespace).get("viaexec-0"),
                timeout=60,
            )
        assert found["spec"]["selectedNode"] == kwok_node
        # run 1 (start-up) printed the refused token; a 401 made it run again
        runs = len((exec_kubeconfig.parent / "calls").read_text())
        assert runs >= 2
    finally:
        cluster.kubectl.run("delete", "queue.scheduling.run.ai", queue_name, "--ignore-not-found")
