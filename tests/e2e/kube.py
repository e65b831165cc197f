"""Talking to the API server without a client library.

``Kubectl`` runs the kubectl binary built with the control plane (or the one
on PATH for an existing cluster): it handles every kubeconfig auth method, so
the tests work unchanged on a kind cluster. ``RestClient`` is a small
keep-alive HTTPS client for the local control plane's client certificate,
fast enough for the benchmark's ten thousand pods.
"""

from __future__ import annotations

import http.client
import json
import ssl
import subprocess
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

Obj = dict[str, Any]


class KubectlError(RuntimeError):
    """kubectl exited non-zero; ``stderr`` holds the server's message."""

    def __init__(self, argv: Sequence[str], code: int, stderr: str) -> None:
        super().__init__(f"kubectl {' '.join(argv)} exited {code}: {stderr.strip()}")
        self.stderr = stderr


@dataclass(frozen=True)
class Kubectl:
    """kubectl bound to one kubeconfig."""

    binary: str
    kubeconfig: Path

    def run(self, *args: str, stdin: str | None = None, timeout: float = 120) -> str:
        argv = [self.binary, f"--kubeconfig={self.kubeconfig}", *args]
        proc = subprocess.run(
            argv, input=stdin, capture_output=True, text=True, timeout=timeout, check=False
        )
        if proc.returncode != 0:
            raise KubectlError(args, proc.returncode, proc.stderr)
        return proc.stdout

    def apply(self, manifest: Obj | str, *args: str) -> str:
        text = manifest if isinstance(manifest, str) else json.dumps(manifest)
        return self.run("apply", "-f", "-", *args, stdin=text)

    def create(self, manifest: Obj | str, *args: str) -> str:
        text = manifest if isinstance(manifest, str) else json.dumps(manifest)
        return self.run("create", "-f", "-", *args, stdin=text)

    def get(self, *args: str) -> Obj:
        out: Obj = json.loads(self.run("get", "-o", "json", *args))
        return out

    def items(self, *args: str) -> list[Obj]:
        items: list[Obj] = self.get(*args).get("items", [])
        return items

    def exists(self, *args: str) -> bool:
        try:
            self.run("get", *args)
        except KubectlError as err:
            if "NotFound" in err.stderr or "doesn't have a resource type" in err.stderr:
                return False
            raise
        return True


class NotYet(str):
    """A probe's "not yet" that says why: false for ``wait_for``, shown when it times out."""

    def __bool__(self) -> bool:
        return False


def wait_for(
    what: str, probe: Callable[[], Any], timeout: float = 60, interval: float = 0.5
) -> Any:
    """Poll ``probe`` until it returns something truthy, and return that."""
    deadline = time.monotonic() + timeout
    last: Any = None
    while time.monotonic() < deadline:
        last = probe()
        if last:
            return last
        time.sleep(interval)
    raise TimeoutError(f"timed out after {timeout:.0f}s waiting for {what} (last: {last!r})")


def saying(words: str, probe: Callable[[], Any]) -> Callable[[], Any]:
    """``probe``, answering only once its answer's text contains ``words`` (an earlier
    answer may be about something else, e.g. a gang whose pods are still being created)."""

    def check() -> Any:
        got = probe()
        return got if got and words in str(got) else NotYet(f"no {words!r} in {got!r}")

    return check


class ApiError(RuntimeError):
    """The API server answered with a non-2xx status."""

    def __init__(self, method: str, path: str, status: int, body: str) -> None:
        super().__init__(f"{method} {path} -> {status}: {body[:500]}")
        self.status = status


class RestClient:
    """A thread-safe HTTPS client with one keep-alive connection per thread."""

    def __init__(self, host: str, port: int, ca: Path, cert: Path, key: Path) -> None:
        self.host = host
        self.port = port
        self._ctx = ssl.create_default_context(cafile=str(ca))
        self._ctx.load_cert_chain(str(cert), str(key))
        self._local = threading.local()

    def _conn(self) -> http.client.HTTPSConnection:
        conn: http.client.HTTPSConnection | None = getattr(self._local, "conn", None)
        if conn is None:
            conn = http.client.HTTPSConnection(self.host, self.port, context=self._ctx, timeout=60)
            self._local.conn = conn
        return conn

    def request(
        self, method: str, path: str, body: Obj | None = None, content_type: str = ""
    ) -> Obj:
        data = None if body is None else json.dumps(body).encode()
        headers = {"Accept": "application/json"}
        if data is not None:
            headers["Content-Type"] = content_type or "application/json"
        for attempt in (1, 2):
            conn = self._conn()
            try:
                conn.request(method, path, body=data, headers=headers)
                resp = conn.getresponse()
                raw = resp.read()
            except (http.client.HTTPException, OSError):
                conn.close()
                self._local.conn = None
                if attempt == 2:
                    raise
                continue
            if resp.status >= 300:
                raise ApiError(method, path, resp.status, raw.decode(errors="replace"))
            out: Obj = json.loads(raw) if raw else {}
            return out
        raise AssertionError("unreachable")

    def close(self) -> None:
        """Close the calling thread's keep-alive connection (a later request reopens it)."""
        conn: http.client.HTTPSConnection | None = getattr(self._local, "conn", None)
        if conn is not None:
            conn.close()
            self._local.conn = None

    def get(self, path: str) -> Obj:
        return self.request("GET", path)

    def post(self, path: str, body: Obj) -> Obj:
        return self.request("POST", path, body)

    def patch(self, path: str, body: Obj, kind: str = "merge") -> Obj:
        return self.request("PATCH", path, body, f"application/{kind}-patch+json")

    def delete(self, path: str) -> Obj:
        return self.request("DELETE", path)

    def watch(self, path: str, resource_version: str, timeout_s: int = 600) -> Iterator[Obj]:
        """Yield watch events (dicts with ``type`` and ``object``) on a fresh connection."""
        sep = "&" if "?" in path else "?"
        url = (
            f"{path}{sep}watch=1&resourceVersion={resource_version}"
            f"&allowWatchBookmarks=false&timeoutSeconds={timeout_s}"
        )
        conn = http.client.HTTPSConnection(
            self.host, self.port, context=self._ctx, timeout=timeout_s + 30
        )
        try:
            conn.request("GET", url, headers={"Accept": "application/json"})
            resp = conn.getresponse()
            if resp.status != 200:
                raise ApiError("WATCH", path, resp.status, resp.read().decode(errors="replace"))
            # read1 returns what has arrived; readline on a chunked body can stall.
            buffer = b""
            while True:
                data = resp.read1(1 << 16)
                if not data:
                    return
                buffer += data
                *lines, buffer = buffer.split(b"\n")
                for line in lines:
                    if line.strip():
                        event: Obj = json.loads(line)
                        yield event
        finally:
            conn.close()
