"""Running the real helm binary on charts/podmuster and reading what it renders.

Why this module exists: the chart is only as good as what ``helm`` makes of it, so the
tests render it with a real helm built from its Go module (tests/controlplane/build.sh,
``PODMUSTER_CP_OPTIONAL=helm``) into the control plane's cache, never with a
re-implementation of Go templates. This module finds that binary (or says why it is
missing), runs ``helm template`` and ``helm lint`` with values given as Python data, and
indexes the rendered documents by kind and name.
"""

from __future__ import annotations

import contextlib
import json
import subprocess
import tempfile
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from tests.e2e.controlplane import Binaries, Cluster

REPO = Path(__file__).resolve().parents[2]
CHART = REPO / "charts" / "podmuster"
RELEASE = "podmuster"
NAMESPACE = "podmuster-system"

Obj = dict[str, Any]


class HelmError(RuntimeError):
    """helm exited non-zero; ``stderr`` holds its message."""

    def __init__(self, argv: Sequence[str], code: int, stderr: str) -> None:
        super().__init__(f"helm {' '.join(argv)} exited {code}: {stderr.strip()}")
        self.stderr = stderr


def helm_binary() -> tuple[Path | None, str]:
    """The cached helm and, when it is missing, why (for a skip reason)."""
    binaries = Binaries.default()
    path = binaries.path("helm")
    if path is not None:
        return path, ""
    why = f"helm is not built in {binaries.root}/bin: run make chart-test (it builds helm)"
    return None, why + binaries.failure("helm")


@dataclass(frozen=True)
class Rendered:
    """The documents of one ``helm template``, in order."""

    docs: list[Obj]

    def of_kind(self, kind: str) -> list[Obj]:
        return [d for d in self.docs if d.get("kind") == kind]

    def get(self, kind: str, name: str) -> Obj:
        for doc in self.of_kind(kind):
            if doc["metadata"]["name"] == name:
                return doc
        names = [d["metadata"]["name"] for d in self.of_kind(kind)]
        raise KeyError(f"no {kind} {name!r} rendered; {kind}s: {names}")

    def names(self, kind: str) -> list[str]:
        return sorted(d["metadata"]["name"] for d in self.of_kind(kind))

    def yaml(self) -> str:
        return yaml.safe_dump_all(self.docs, sort_keys=False)


@dataclass(frozen=True)
class Helm:
    """The helm binary, run on charts/podmuster with a private, empty home."""

    binary: Path

    @staticmethod
    def _env(home: str) -> dict[str, str]:
        return {
            "HOME": home,
            "PATH": "/usr/bin:/bin",
            "HELM_CACHE_HOME": f"{home}/cache",
            "HELM_CONFIG_HOME": f"{home}/config",
            "HELM_DATA_HOME": f"{home}/data",
        }

    @contextlib.contextmanager
    def started(
        self, *args: str, values: Mapping[str, Any] | None = None
    ) -> Iterator[subprocess.Popen[str]]:
        """helm running in the background (e.g. an install waiting for its hook Jobs);
        stopped if still running when the block ends."""
        with tempfile.TemporaryDirectory(prefix="podmuster-helm-") as home:
            argv = [str(self.binary), *args]
            if values:
                path = Path(home) / "values.json"
                path.write_text(json.dumps(values))
                argv += ["--values", str(path)]
            proc = subprocess.Popen(
                argv,
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                text=True,
                env=self._env(home),
            )
            try:
                yield proc
            finally:
                if proc.poll() is None:
                    proc.kill()
                proc.communicate()

    def run(self, *args: str, timeout: float = 120) -> str:
        with tempfile.TemporaryDirectory(prefix="podmuster-helm-") as home:
            env = self._env(home)
            proc = subprocess.run(
                [str(self.binary), *args],
                capture_output=True,
                text=True,
                timeout=timeout,
                check=False,
                env=env,
            )
        if proc.returncode != 0:
            raise HelmError(args, proc.returncode, proc.stderr)
        return proc.stdout

    def _run_with_values(self, args: list[str], values: Mapping[str, Any] | None) -> str:
        if not values:
            return self.run(*args)
        # A values file, not --set: types (numbers, booleans, lists) stay as written.
        with tempfile.TemporaryDirectory(prefix="podmuster-values-") as tmp:
            path = Path(tmp) / "values.json"
            path.write_text(json.dumps(values))
            return self.run(*args, "--values", str(path))

    def template(
        self,
        values: Mapping[str, Any] | None = None,
        *,
        release: str = RELEASE,
        namespace: str = NAMESPACE,
        api_versions: Sequence[str] = (),
    ) -> Rendered:
        """``helm template`` with the CRDs and hooks included, parsed. ``api_versions``:
        what the cluster would serve beyond Kubernetes' own (``--api-versions``)."""
        args = ["template", release, str(CHART), "--namespace", namespace, "--include-crds"]
        for api in api_versions:
            args += ["--api-versions", api]
        out = self._run_with_values(args, values)
        return Rendered([d for d in yaml.safe_load_all(out) if d])

    def lint(self, values: Mapping[str, Any] | None = None) -> str:
        return self._run_with_values(["lint", "--strict", str(CHART)], values)


def container(deployment: Obj) -> Obj:
    """The one container of a chart Deployment."""
    containers: list[Obj] = deployment["spec"]["template"]["spec"]["containers"]
    assert len(containers) == 1, deployment["metadata"]["name"]
    return containers[0]


def token_kubeconfig(cluster: Cluster, namespace: str, account: str, path: Path) -> Path:
    """A kubeconfig that authenticates as ServiceAccount ``account`` with a fresh token."""
    token = cluster.kubectl.run(
        "create", "token", account, "-n", namespace, "--duration=1h"
    ).strip()
    config = json.loads(cluster.kubeconfig.read_text())
    for user in config["users"]:
        user["user"] = {"token": token}
    path.write_text(json.dumps(config))
    return path
