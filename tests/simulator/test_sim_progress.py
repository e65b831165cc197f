"""simulator.progress and the loop's stop flag: progress lines and partial runs.

Why: progress must appear only for runs that last (over 2 s), as plain lines
without a terminal and one redrawn line on one; a stopped run must still give
its figures, marked partial. The clock is a fake one the test advances, so
nothing sleeps and nothing depends on how fast the machine is.
"""

from __future__ import annotations

import io
import signal
from pathlib import Path

import pytest

from podmuster.simulate_command import _stop_on_signals
from scheduler.config import SchedulerConfig
from simulator import cluster, csvtrace
from simulator.events import Simulation
from simulator.progress import Progress, StopFlag, duration


class FakeClock:
    """A clock that moves only when the test says so."""

    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


def _progress(tty: bool = False) -> tuple[Progress, FakeClock, io.StringIO]:
    clock = FakeClock()
    stream = io.StringIO()
    return Progress(stream, tty=tty, clock=clock), clock, stream


def test_nothing_is_written_for_a_run_shorter_than_the_delay() -> None:
    progress, clock, stream = _progress()
    progress.begin("simulating")
    for step in range(10):
        clock.now = 100.0 + step * 0.19  # up to 1.71 s
        progress.update(step * 60.0, step, 10)
    progress.end(600.0, 10, 10, partial=False)
    assert stream.getvalue() == ""


def test_plain_lines_after_the_delay_then_one_every_interval() -> None:
    progress, clock, stream = _progress()
    progress.begin("simulating")
    for tenth in range(131):  # 13 s of wall time, an event every 0.1 s
        clock.now = 100.0 + tenth / 10
        progress.update(tenth * 60.0, tenth // 10, 100)
    lines = stream.getvalue().splitlines()
    assert lines == [
        "simulating: simulated 20m00s, 2/100 jobs done, 2s elapsed, ETA 1m38s",
        "simulating: simulated 1h10m, 7/100 jobs done, 7s elapsed, ETA 1m33s",
        "simulating: simulated 2h00m, 12/100 jobs done, 12s elapsed, ETA 1m28s",
    ]
    progress.end(7860.0, 13, 100, partial=False)
    assert stream.getvalue().splitlines()[-1] == (
        "simulating: finished at 2h11m simulated, 13/100 jobs done, in 13s"
    )


def test_eta_is_unknown_before_the_first_job_is_done() -> None:
    progress, clock, stream = _progress()
    progress.begin("A (spread.yaml)")
    clock.now += 3.0
    progress.update(30.0, 0, 4)
    assert (
        stream.getvalue()
        == "A (spread.yaml): simulated 30s, 0/4 jobs done, 3s elapsed, ETA unknown\n"
    )


def test_a_stopped_run_says_so() -> None:
    progress, clock, stream = _progress()
    progress.begin("simulating")
    clock.now += 2.5
    progress.update(90000.0, 1, 3)
    clock.now += 1.0
    progress.end(93600.0, 1, 3, partial=True)
    assert stream.getvalue().splitlines()[-1] == (
        "simulating: stopped at 1d02h simulated, 1/3 jobs done, after 3s; "
        "writing the partial results"
    )


def test_on_a_terminal_one_line_is_redrawn_in_place() -> None:
    progress, clock, stream = _progress(tty=True)
    progress.begin("simulating")
    clock.now += 2.0
    progress.update(600.0, 10, 20)
    clock.now += 0.5
    progress.update(60.0, 19, 20)
    progress.end(61.0, 20, 20, partial=False)
    text = stream.getvalue()
    assert text.count("\n") == 1
    assert text.endswith("\n")
    drawn = text.split("\r")[1:]
    assert drawn[0] == "simulating: simulated 10m00s, 10/20 jobs done, 2s elapsed, ETA 2s"
    # a shorter line blanks what is left of the longer one before it
    assert len(drawn[1]) == len(drawn[0])
    assert drawn[1].startswith("simulating: simulated 1m00s, 19/20 jobs done")


def test_the_delay_counts_from_the_start_of_the_command() -> None:
    # --compare: after a long run A, run B shows its progress at once
    progress, clock, stream = _progress()
    progress.begin("A (default)")
    clock.now += 10.0
    progress.end(0.0, 0, 0, partial=False)  # nothing shown for A: no closing line
    assert stream.getvalue() == ""
    progress.begin("B (spread.yaml)")
    progress.update(5.0, 0, 3)
    assert stream.getvalue().startswith("B (spread.yaml): simulated 5s")


@pytest.mark.parametrize(
    ("seconds", "text"),
    [(0.4, "0s"), (59, "59s"), (61, "1m01s"), (3600, "1h00m"), (86400 * 3 + 7200, "3d02h")],
)
def test_duration(seconds: float, text: str) -> None:
    assert duration(seconds) == text


def test_a_set_flag_stops_the_loop_and_marks_the_run_partial(fixtures: Path) -> None:
    scenario = csvtrace.load(
        str(fixtures / "three-jobs.csv"), cluster.load(str(fixtures / "cluster.yaml"))
    )
    whole = Simulation(scenario.fresh(), SchedulerConfig()).run().figures
    assert whole["partial"] is False
    flag = StopFlag()

    class StopAfterFirstCompletion(Progress):
        def update(self, simulated: float, done: int, total: int) -> None:
            if done:
                flag.set(signal.SIGTERM)

    watcher = StopAfterFirstCompletion(io.StringIO(), tty=False, clock=FakeClock())
    simulation = Simulation(scenario.fresh(), SchedulerConfig(), progress=watcher, stop=flag)
    figures = simulation.run().figures
    assert simulation.partial
    assert figures["partial"] is True
    assert figures["jobs"] == whole["jobs"]
    assert 1 <= figures["completed"] < whole["completed"]
    assert figures["simulated_seconds"] < whole["simulated_seconds"]


def test_signals_only_set_the_flag_and_the_old_handlers_come_back() -> None:
    before = signal.getsignal(signal.SIGINT), signal.getsignal(signal.SIGTERM)
    flag = StopFlag()
    with _stop_on_signals(flag):
        signal.raise_signal(signal.SIGTERM)
        assert flag.signum == signal.SIGTERM
        # the first signal put the previous handler back: a second one acts as before
        assert signal.getsignal(signal.SIGTERM) == before[1]
        signal.raise_signal(signal.SIGINT)  # the first SIGINT: recorded only, not raised
        assert flag.signum == signal.SIGTERM  # the first signal is the one reported
    assert (signal.getsignal(signal.SIGINT), signal.getsignal(signal.SIGTERM)) == before
