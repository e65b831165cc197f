"""The loop end to end on a fake API: leader election, cycles that create BindRequests,
graceful stop releasing the lease; JSON log lines carry the extra fields; flags parse."""

from __future__ import annotations

import asyncio
import json
import logging
import re
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from live_objects import api_with, scheduler_log, until

from kubeapi.errors import ForbiddenError
from kubeapi.objects import Object, ObjectRef
from liveprocess import logs
from liveprocess.leader import LEASE_API
from podmuster.cli import build_parser
from scheduler.config import SchedulerConfig
from scheduler.live import loop
from tests.kits import worlds as st
from tests.kits.fake_kube import FakeKube


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
    line = json.loads(logs.JsonFormatter().format(record))
    assert (line["msg"], line["level"], line["binds"]) == ("cycle", "info", 3)
    assert re.fullmatch(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z", line["ts"])


def documented_log_fields() -> tuple[set[str], set[str]]:
    """(the JSON line's own fields, the cycle line's fields) as docs/metrics.md lists them."""
    text = (Path(__file__).parents[3] / "docs" / "metrics.md").read_text()
    logs = text.split("## Logs", 1)[1].split("\n## ", 1)[0]
    cycle, json_format = logs.strip().split("\n\n")[:2]
    cycle_fields = set(re.findall(r"`([a-z_]+)`", cycle.split("with the fields", 1)[1]))
    own = json_format.split("with the fields", 1)[1].split("plus", 1)[0]
    return set(re.findall(r"`([a-z_]+)`", own)), cycle_fields - {"run_cycle"}


def test_the_log_fields_are_the_documented_ones() -> None:
    """A cycle's JSON line, from the loop itself, against docs/metrics.md."""
    fake = api_with([st.node("n1"), st.queue("q"), st.job("a", "q", tasks=2)])
    records: list[logging.LogRecord] = []

    async def main() -> None:
        stop = asyncio.Event()
        running = asyncio.create_task(loop.run(fake, loop.Options(SchedulerConfig(), 0.01), stop))
        await until(lambda: any(r.getMessage() == "cycle" for r in records))
        stop.set()
        await asyncio.wait_for(running, 2)

    with scheduler_log(records):
        asyncio.run(main())
    lines = [json.loads(logs.JsonFormatter().format(r)) for r in records]
    own, cycle = documented_log_fields()
    line = next(line for line in lines if line["msg"] == "cycle")
    assert own == {"ts", "level", "logger", "msg"}
    assert set(line) - own == cycle
    assert own <= set(line)


def test_run_scheduler_flags() -> None:
    args = build_parser().parse_args(
        ["run", "scheduler", "--leader-elect", "--schedule-period", "0.5", "--log-format", "json"]
    )
    assert (args.leader_elect, args.schedule_period, args.scheduler_name) == (True, 0.5, None)
    assert args.handler.__module__ == "scheduler.live.flags"


class RefusingKube(FakeKube):
    """Refuses every BindRequest of one pod, as an admission policy would."""

    def __init__(self, refused: str) -> None:
        super().__init__()
        self.refused = refused

    async def create(self, obj: Mapping[str, Any]) -> Object:
        if obj.get("kind") == "BindRequest" and obj["metadata"]["name"] == self.refused:
            self.calls.append(("create", ObjectRef.of(obj)))
            raise ForbiddenError(ObjectRef.of(obj), "denied by the policy", 403)
        return await super().create(obj)


def test_a_gang_whose_bind_is_always_refused_is_evicted_after_the_grace() -> None:
    """The loop hands the commit's refused binds to the next cycle (bind_failed): the gang
    with three pods running and the fourth refused is stamped stale and, past the grace
    period, evicted."""
    fake = RefusingKube("g-3")
    running = ["Running"] * 3 + ["Pending"]
    objects: list[Any] = [
        st.node("n1", gpus=8),
        st.queue("q", gpu_quota=8),
        st.job("g", "q", 4, gpus=1, states=running, nodes=["n1"] * 3 + [None]),
    ]
    for obj in st.stamp(st.flatten(objects)):
        fake.add(obj)
    config = SchedulerConfig(staleness_grace_period_s=0.3)

    async def main() -> None:
        stop = asyncio.Event()
        running = asyncio.create_task(loop.run(fake, loop.Options(config, 0.02), stop))
        await until(lambda: len(fake.of_kind("Pod")) == 1, 5)
        stop.set()
        await asyncio.wait_for(running, 2)

    asyncio.run(main())
    assert [p["metadata"]["name"] for p in fake.of_kind("Pod")] == ["g-3"]
    assert any(e["reason"] == "FailedBinding" for e in fake.events)
