"""The dashboard and ``kubectl podmuster`` against a real API server.

The whole pipeline runs (podgrouper, scheduler, binder, controllers) with
``podmuster run dashboard`` beside it. A gang of three one-GPU pods meets one node
with two GPUs: on the page (a real headless chromium) it appears under "Waiting pod
groups" with the reason the scheduler wrote in its PodGroup's ``schedulingConditions``
and its scale-up hint; ``kubectl podmuster explain`` (run by the real ``kubectl``, which
finds ``kubectl-podmuster`` on PATH) says the same. A second node arrives and the gang
leaves the page; ``explain`` then says it is not waiting. ``queues`` and ``top`` show
the test's queue with its quota and what the queue controller wrote.

With ``PODMUSTER_DOCS_SCREENSHOTS=1`` the page's screenshots are written to docs/.
"""

from __future__ import annotations

import json
import os
import socket
import stat
import subprocess
import sys
import urllib.error
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from podmuster.cluster_view import shown_reason

from .browser import console_errors, headless
from .conftest import NodeFactory, QueueFactory
from .controlplane import Cluster
from .kube import wait_for
from .live import REPO, component
from .objects import batch_job, kai_gang, kai_template, pod_group, wait_running
from .procs import ManagedProcess

pytestmark = [pytest.mark.e2e, pytest.mark.timeout(600)]

DOCS = REPO / "docs" / "images"


def _detail(reason: dict[str, Any]) -> str:
    """A reason's message as the page and explain show it after its code (said once)."""
    return shown_reason("", str(reason["reason"]), str(reason["message"]))["detail"]


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@pytest.fixture(scope="module")
def dashboard(cluster: Cluster, podmuster: dict[str, ManagedProcess]) -> Iterator[str]:
    """``podmuster run dashboard`` on a free port; yields its URL once it has listed all."""
    port = free_port()
    flags = [f"--port={port}", "--address=127.0.0.1", "--refresh=0.5", "--log-format=json"]
    with component(cluster, "dashboard", flags) as proc:
        url = f"http://127.0.0.1:{port}/"

        def healthy() -> bool:
            proc.check_alive()
            try:
                with urllib.request.urlopen(url + "healthz", timeout=5) as response:
                    return bool(response.status == 200)
            except (urllib.error.URLError, OSError):
                return False

        wait_for("the dashboard listed the cluster", healthy, timeout=120)
        yield url
        proc.check_alive()


@pytest.fixture(scope="module")
def plugin_path(tmp_path_factory: pytest.TempPathFactory, cluster: Cluster) -> str:
    """PATH with ``kubectl`` and ``kubectl-podmuster``: the console script installed beside
    this Python when it runs this tree's code, else a script running this tree's plugin."""
    kubectl_dir = Path(str(cluster.binaries.require("kubectl"))).parent
    installed = Path(sys.executable).parent / "kubectl-podmuster"
    if installed.exists() and _runs_this_tree():
        return os.pathsep.join([str(installed.parent), str(kubectl_dir), os.environ["PATH"]])
    bin_dir = tmp_path_factory.mktemp("plugin-bin")
    shim = bin_dir / "kubectl-podmuster"
    shim.write_text(
        f'#!/bin/sh\nPYTHONPATH="{REPO}" exec "{sys.executable}" -m podmuster.kubectl_plugin "$@"\n'
    )
    shim.chmod(shim.stat().st_mode | stat.S_IXUSR | stat.S_IXGRP | stat.S_IXOTH)
    return os.pathsep.join([str(bin_dir), str(kubectl_dir), os.environ.get("PATH", "")])


def _runs_this_tree() -> bool:
    """Whether the installed ``podmuster`` package is this tree's (an editable install)."""
    import podmuster

    return Path(podmuster.__file__).resolve().parent == REPO / "podmuster"


def kubectl_podmuster(cluster: Cluster, path: str, *args: str) -> str:
    """``kubectl podmuster ARGS --kubeconfig=…``: kubectl finds the plugin on PATH."""
    kubectl = str(cluster.binaries.require("kubectl"))
    argv = [kubectl, "podmuster", *args, f"--kubeconfig={cluster.kubeconfig}"]
    done = subprocess.run(
        argv, capture_output=True, text=True, env={**os.environ, "PATH": path}, timeout=180
    )
    assert done.returncode == 0, done.stderr
    return done.stdout


def pending_row(browser: Any, key: str) -> str:
    """The text of the page's row for pod group ``key`` ('' when absent).

    The page replaces its content every refresh: a row found just before one is stale by
    the time its text is read, so the read is tried again (a CI run met it once)."""
    from selenium.common.exceptions import StaleElementReferenceException  # with the browser

    for _ in range(10):
        rows = browser.find_elements("css selector", f'tr.pending[data-podgroup="{key}"]')
        try:
            return str(rows[0].text) if rows else ""
        except StaleElementReferenceException:
            continue
    raise AssertionError(f"the row of {key} went stale ten times in a row")


def screenshot(browser: Any, name: str, tmp: Path) -> None:
    browser.save_screenshot(str(tmp / name))
    if os.environ.get("PODMUSTER_DOCS_SCREENSHOTS") == "1":
        DOCS.mkdir(parents=True, exist_ok=True)
        browser.save_screenshot(str(DOCS / name))


def test_waiting_gang_on_the_page_and_in_kubectl_podmuster(
    cluster: Cluster,
    dashboard: str,
    plugin_path: str,
    namespace: str,
    kwok_nodes: NodeFactory,
    kai_queues: QueueFactory,
    tmp_path: Path,
) -> None:
    queue = kai_queues.add("dash", gpu_quota=2)
    kwok_nodes.add(cpu="32", gpus=2)
    template = kai_template(kwok_nodes.pool, gpus=1)
    for obj in kai_gang("train", namespace, queue, template, 3):
        cluster.kubectl.create(obj)
    key = f"{namespace}/train"

    def reasons() -> list[dict[str, Any]]:
        status = pod_group(cluster, namespace, "train").get("status") or {}
        return [r for c in status.get("schedulingConditions") or [] for r in c.get("reasons") or []]

    with headless() as browser:
        browser.get(dashboard)

        def agreed() -> tuple[list[dict[str, Any]], str] | None:
            """The PodGroup's final reasons (with the hint), each shown in the gang's row."""
            written, row = reasons(), pending_row(browser, key)
            final = any(r["message"].startswith("ScaleUpHint:") for r in written)
            shown = all(f"{r['reason']} {_detail(r)}" in row for r in written)
            hinted = "scale-up hint: 1 more node(s)" in row  # the annotation, written apart
            return (written, row) if final and shown and hinted else None

        _, row = wait_for("the scheduler's reasons on the page", agreed, timeout=120)
        assert "scale-up hint: 1 more node(s)" in row
        assert browser.find_elements("css selector", f'tr.queue[data-queue="{queue}"]')
        screenshot(browser, "dashboard-waiting.png", tmp_path)

        # The scheduler rewrites its reasons when their words change (which pod of the
        # gang did not fit): each check reads the PodGroup again until both agree.
        def explained() -> str | None:
            said = kubectl_podmuster(
                cluster, plugin_path, "explain", "pod/train-0", "-n", namespace
            )
            now = reasons()
            return said if all(f"{r['reason']}: {_detail(r)}" in said for r in now) else None

        said = wait_for("explain in the scheduler's words", explained, timeout=120)
        assert f"Pod {namespace}/train-0 (PodGroup {key}): waiting" in said
        assert f"Queue {queue}:" in said

        def as_json() -> dict[str, Any] | None:
            document: dict[str, Any] = json.loads(
                kubectl_podmuster(
                    cluster, plugin_path, "explain", "train", "-n", namespace, "-o", "json"
                )
            )
            now = [r["message"] for r in reasons()]
            agree = [r["message"] for r in document["reasons"]] == now
            return document if agree and "scaleUpHint" in document else None

        document = wait_for("explain -o json in the scheduler's words", as_json, timeout=120)
        assert document["waiting"] is True
        assert document["scaleUpHint"]["nodes"] == 1

        kwok_nodes.add(cpu="32", gpus=2)  # what the autoscaler would do
        wait_for("the gang gone from the page", lambda: not pending_row(browser, key), timeout=120)
        screenshot(browser, "dashboard-scheduled.png", tmp_path)
        assert console_errors(browser) == []  # the refreshes included

    wait_for(
        "explain: not waiting",
        lambda: (
            f"PodGroup {key}: not waiting, 3/3 pods allocated"
            in kubectl_podmuster(cluster, plugin_path, "explain", "podgroup/train", "-n", namespace)
        ),
        timeout=120,
    )
    queues = json.loads(kubectl_podmuster(cluster, plugin_path, "queues", "-o", "json"))
    (mine,) = [q for q in queues if q["queue"] == queue]
    assert mine["deserved"]["gpu"] == 2
    assert queue in kubectl_podmuster(cluster, plugin_path, "queues")

    def allocated() -> Any:
        rows = json.loads(kubectl_podmuster(cluster, plugin_path, "top", "-o", "json"))
        (row,) = [r for r in rows if r["queue"] == queue]
        return row if row["allocated"].get("nvidia.com/gpu") == "3" else None

    wait_for("the queue controller's allocation in top", allocated, timeout=120)


def eviction_rows(browser: Any) -> list[str]:
    """The texts of the page's eviction rows, read again when a refresh made them stale."""
    from selenium.common.exceptions import StaleElementReferenceException  # with the browser

    for _ in range(10):
        try:
            return [str(row.text) for row in browser.find_elements("css selector", "tr.eviction")]
        except StaleElementReferenceException:
            continue
    raise AssertionError("the eviction rows went stale ten times in a row")


def test_reclaim_shows_on_the_page_with_its_cause(
    cluster: Cluster,
    dashboard: str,
    namespace: str,
    kwok_nodes: NodeFactory,
    kai_queues: QueueFactory,
    tmp_path: Path,
) -> None:
    kwok_nodes.add(gpus=2)
    lender = kai_queues.add("lender", gpu_quota=0)  # runs on borrowed GPUs only
    owner = kai_queues.add("owner", gpu_quota=2)
    one_gpu = kai_template(kwok_nodes.pool, gpus=1)
    cluster.kubectl.create(batch_job("borrow", namespace, lender, one_gpu, parallelism=2))
    wait_running(cluster, namespace, "job-name=borrow", 2)
    cluster.kubectl.create(batch_job("claim", namespace, owner, one_gpu, parallelism=2))
    with headless() as browser:
        browser.get(dashboard)

        def reclaimed() -> list[str]:
            return [r for r in eviction_rows(browser) if namespace in r and "reclaim" in r.split()]

        rows = wait_for("the reclaim on the page", reclaimed, timeout=120)
        assert all("Evicted by the reclaim action for pod group" in r for r in rows)
        screenshot(browser, "dashboard-evictions.png", tmp_path)


def test_explain_names_what_is_missing(
    cluster: Cluster, dashboard: str, plugin_path: str, namespace: str
) -> None:
    kubectl = str(cluster.binaries.require("kubectl"))
    argv = [kubectl, "podmuster", "explain", "pod/nope", "-n", namespace,
            f"--kubeconfig={cluster.kubeconfig}"]  # fmt: skip
    done = subprocess.run(
        argv, capture_output=True, text=True, env={**os.environ, "PATH": plugin_path}, timeout=180
    )
    assert done.returncode == 1
    assert f'pod "nope" not found in namespace "{namespace}"' in done.stderr
