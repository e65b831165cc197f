"""``--ray-address`` that nothing answers on fails at once, in one line without a traceback.

Ray retries an unreachable head for about 14 minutes before giving up, and its last
error quotes a traceback; the sweep probes the address first (docs/simulate.md, Sweeps).
"""

from __future__ import annotations

import socket

from simulator import sweep_ray


def _closed_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port: int = probe.getsockname()[1]
    return port


def test_an_address_nothing_answers_on_is_told_at_once() -> None:
    port = _closed_port()
    for address in (f"127.0.0.1:{port}", f"ray://127.0.0.1:{port}"):
        why = sweep_ray._unreachable(address)
        assert why is not None
        assert why.startswith(f"nothing answers on 127.0.0.1:{port} (")


def test_an_address_that_answers_or_has_no_port_is_left_to_ray() -> None:
    with socket.socket() as server:
        server.bind(("127.0.0.1", 0))
        server.listen()
        port = server.getsockname()[1]
        assert sweep_ray._unreachable(f"127.0.0.1:{port}") is None
    assert sweep_ray._unreachable("auto") is None
    assert sweep_ray._unreachable("head") is None


def test_a_quoted_traceback_is_not_the_line_shown() -> None:
    try:
        try:
            raise RuntimeError(
                "Failed to connect to GCS. Last connection error: Traceback (most recent call "
                'last):\n  File "x.py", line 1, in <module>\nTimeoutError: timed out'
            )
        except RuntimeError as cause:
            raise ConnectionError("Failed to connect to Ray cluster at 10.0.0.1:6390") from cause
    except ConnectionError as exc:
        shown = sweep_ray._first_lines(exc)
    assert shown == (
        "ConnectionError: Failed to connect to Ray cluster at 10.0.0.1:6390; "
        "RuntimeError: Failed to connect to GCS. Last connection error"
    )
    assert "Traceback" not in shown
