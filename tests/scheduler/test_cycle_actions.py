"""The configuration admits exactly the actions the cycle runs, so a configured action is
never skipped (and no output reports skipped actions)."""

from __future__ import annotations

import pytest

from scheduler import config, cycle
from scheduler.config import ConfigError, load_config


def test_every_configurable_action_runs() -> None:
    assert tuple(cycle.ACTIONS) == config.ACTIONS


def test_an_unknown_action_is_a_configuration_error() -> None:
    with pytest.raises(ConfigError, match="unknown action 'backfill'"):
        load_config({"actions": "allocate, backfill"})
