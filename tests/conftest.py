"""Root test configuration: end-to-end tests are opt-in with ``--e2e``; hypothesis profiles.

End-to-end tests need a real control plane (tests/controlplane); the unit,
scenario and property tests never talk to an API server.

Property tests take their example count from the loaded hypothesis profile,
never from their own decorator: "dev" (the local default) keeps runs short,
"ci" (loaded when the ``CI`` environment variable is set, as CI sets it) runs
2,000 examples of each property. ``--hypothesis-profile ci`` runs the CI
count locally.
"""

from __future__ import annotations

import os

import pytest
from hypothesis import settings

CI_EXAMPLES = 2000
DEV_EXAMPLES = 60

settings.register_profile("dev", max_examples=DEV_EXAMPLES, deadline=None)
settings.register_profile("ci", max_examples=CI_EXAMPLES, deadline=None, print_blob=True)
settings.load_profile("ci" if os.environ.get("CI", "").lower() in ("1", "true", "yes") else "dev")


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addoption(
        "--e2e",
        action="store_true",
        default=False,
        help="run the end-to-end tests against a real kube-apiserver",
    )


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    if config.getoption("--e2e"):
        return
    skip = pytest.mark.skip(reason="end-to-end test: run with --e2e (make e2e)")
    for item in items:
        if "e2e" in item.keywords:
            item.add_marker(skip)


def pytest_configure(config: pytest.Config) -> None:
    """With ``PODMUSTER_NOOP_ACTIONS=1`` every scheduling action does nothing.

    Used to show that the property suite is not safety-only: its liveness
    properties must fail on a scheduler that never schedules.
    """
    if os.environ.get("PODMUSTER_NOOP_ACTIONS") != "1":
        return
    from scheduler.cycle import ACTIONS

    def do_nothing(self: object, session: object) -> None:
        return None

    for action in ACTIONS.values():
        action.execute = do_nothing  # type: ignore[method-assign]
