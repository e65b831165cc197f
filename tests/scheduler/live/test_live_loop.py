"""The loop end to end on a fake API: leader election, cycles that create BindRequests,
graceful stop releasing the lease; JSON log lines carry the extra fields; flags parse."""

from __future__ import annotations

import asyncio
import json
import logging

from live_objects import api_with, until

from podmuster.cli import build_parser
from scheduler import testing as st
from scheduler.config import SchedulerConfig
from scheduler.live import loop
from scheduler.live.leader import LEASE_API


def test_leader_runs_cycles_and_releases_the_lease_on_stop() -> None:
    fake = api_with([st.node("n1"), st.queue("q"), st.job("a", "q", tasks=2)])
    options = loop.Options(
        SchedulerConfig(), schedule_period=0.01, leader_elect=True, identity="me"
    )

    async def main() -> int:
        stop = asyncio.Event()
        running = asyncio.create_task(loop.run(fake, options, stop))
        await until(lambda: len(fake.of_kind("BindRequest")) == 2)
        lease = fake.stored(LEASE_API, "Lease", "default", "podmuster-scheduler")
        assert lease is not None
        assert lease["spec"]["holderIdentity"] == "me"
        stop.set()
        return await asyncio.wait_for(running, 2)

    assert asyncio.run(main()) == 0
    lease = fake.stored(LEASE_API, "Lease", "default", "podmuster-scheduler")
    assert lease is not None
    assert lease["spec"]["holderIdentity"] == ""
    assert {r["spec"]["selectedNode"] for r in fake.of_kind("BindRequest")} == {"n1"}


def test_json_log_lines_carry_extra_fields() -> None:
    record = logging.makeLogRecord({"msg": "cycle", "levelname": "INFO", "binds": 3})
    line = json.loads(loop.JsonFormatter().format(record))
    assert (line["message"], line["level"], line["binds"]) == ("cycle", "info", 3)


def test_run_scheduler_flags() -> None:
    args = build_parser().parse_args(
        ["run", "scheduler", "--leader-elect", "--schedule-period", "0.5", "--log-format", "json"]
    )
    assert (args.leader_elect, args.schedule_period, args.scheduler_name) == (True, 0.5, None)
    assert args.handler.__module__ == "scheduler.live.flags"
