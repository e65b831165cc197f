"""Child processes that always die with us.

Each control-plane component runs in its own process group with its output in
a log file. Every live process is registered so that an ``atexit`` hook and
SIGTERM/SIGHUP handlers stop them even when pytest is interrupted or killed
politely; the pytest fixtures stop them in their finalizers as well.
"""

from __future__ import annotations

import atexit
import contextlib
import os
import signal
import socket
import subprocess
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from types import FrameType

_live: list[ManagedProcess] = []
_lock = threading.Lock()


class ManagedProcess:
    """One long-running child process with its log file."""

    def __init__(
        self,
        name: str,
        argv: Sequence[str],
        log_dir: Path,
        env: Mapping[str, str] | None = None,
    ) -> None:
        self.name = name
        self.argv = list(argv)
        self.log_path = log_dir / f"{name}.log"
        self.env = dict(os.environ if env is None else env)
        self._popen: subprocess.Popen[bytes] | None = None

    def start(self) -> ManagedProcess:
        _install_handlers()
        with self.log_path.open("ab") as log:
            log.write(f"$ {' '.join(self.argv)}\n".encode())
            log.flush()
            self._popen = subprocess.Popen(
                self.argv,
                stdin=subprocess.DEVNULL,
                stdout=log,
                stderr=subprocess.STDOUT,
                env=self.env,
                start_new_session=True,
            )
        with _lock:
            _live.append(self)
        return self

    @property
    def pid(self) -> int:
        assert self._popen is not None, f"{self.name} was never started"
        return self._popen.pid

    @property
    def returncode(self) -> int | None:
        """The exit code once the process has ended, else None."""
        return None if self._popen is None else self._popen.poll()

    def alive(self) -> bool:
        return self._popen is not None and self._popen.poll() is None

    def stop(self, timeout: float = 10.0) -> None:
        """SIGTERM the process group, then SIGKILL it after ``timeout`` seconds."""
        popen = self._popen
        if popen is not None and popen.poll() is None:
            _signal_group(popen.pid, signal.SIGTERM)
            try:
                popen.wait(timeout)
            except subprocess.TimeoutExpired:
                _signal_group(popen.pid, signal.SIGKILL)
                popen.wait(5)
        if popen is not None:
            # Whatever the leader left behind in its group goes too.
            _signal_group(popen.pid, signal.SIGKILL)
        with _lock:
            if self in _live:
                _live.remove(self)

    def tail(self, lines: int = 30) -> str:
        try:
            text = self.log_path.read_text(errors="replace")
        except OSError:
            return ""
        return "\n".join(text.splitlines()[-lines:])

    def check_alive(self) -> None:
        if not self.alive():
            code = None if self._popen is None else self._popen.returncode
            raise RuntimeError(
                f"{self.name} exited (code {code}); log {self.log_path}:\n{self.tail()}"
            )


def _signal_group(pid: int, sig: signal.Signals) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(pid, sig)


def stop_all() -> None:
    """Stop every process still registered, newest first."""
    with _lock:
        procs = list(reversed(_live))
    for proc in procs:
        proc.stop(timeout=5)


_installed = False


def _install_handlers() -> None:
    global _installed
    if _installed:
        return
    _installed = True
    atexit.register(stop_all)
    for sig in (signal.SIGTERM, signal.SIGHUP):
        previous = signal.getsignal(sig)

        def handler(signum: int, frame: FrameType | None, previous: object = previous) -> None:
            stop_all()
            if callable(previous):
                previous(signum, frame)
            else:
                signal.signal(signum, signal.SIG_DFL)
                os.kill(os.getpid(), signum)

        with contextlib.suppress(ValueError):  # not in the main thread
            signal.signal(sig, handler)


def free_port() -> int:
    """A TCP port on 127.0.0.1 that nobody listens on right now."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


def wait_until(
    what: str,
    probe: Callable[[], bool],
    timeout: float,
    watch: Sequence[ManagedProcess] = (),
    interval: float = 0.2,
) -> None:
    """Poll ``probe`` until it is true; fail early if a watched process died."""
    deadline = time.monotonic() + timeout
    while True:
        for proc in watch:
            proc.check_alive()
        try:
            if probe():
                return
        except Exception:  # a probe that raises is a "not yet"
            pass
        if time.monotonic() > deadline:
            logs = "\n".join(f"--- {p.name} ({p.log_path}):\n{p.tail()}" for p in watch)
            raise TimeoutError(f"timed out after {timeout:.0f}s waiting for {what}\n{logs}")
        time.sleep(interval)
