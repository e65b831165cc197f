"""The scheduler configuration (docs/configuration.md): every key under ``plugins`` and
``minRuntime`` is checked, as the top-level keys are, so a misspelt key or an
out-of-range plugin argument is an error naming its full key path, never a setting
dropped or clamped without a word. KAI's own plugin names and the keys of its
``PluginConfig`` (enabled, priority, arguments) stay readable.
"""

from __future__ import annotations

from typing import Any

import pytest

from scheduler.config import ConfigError, load_config


@pytest.mark.parametrize(
    ("data", "message"),
    [
        (
            {"plugins": {"proportion": {"arguments": {"kValu": 1}}}},
            "plugins.proportion.arguments.kValu: unknown key; known: kValue, ",
        ),
        (
            {"plugins": {"proportion": {"argments": {"kValue": 1}}}},
            "plugins.proportion.argments: unknown key; known: arguments, enabled, priority",
        ),
        ({"plugins": {"numa": {"enabld": True}}}, "plugins.numa.enabld: unknown key"),
        ({"plugins": {"numa": {"arguments": {"ignore": "x"}}}}, "plugins.numa.arguments.ignore:"),
        ({"plugins": {"foo": {"enabled": True}}}, "plugins.foo: unknown key; known: "),
        ({"plugins": ["proportion"]}, "plugins: expected a mapping"),
        (
            {"minRuntime": {"preemptMinRuntme": "1s"}},
            "minRuntime.preemptMinRuntme: unknown key; known: preemptMinRuntime, reclaimMinRuntime",
        ),
        ({"minRuntime": {"reclaimMinRuntime": "-5s"}}, "minRuntime.reclaimMinRuntime: must not"),
        # KAI plugins podmuster always runs, in KAI's order: switching or moving one is refused
        ({"plugins": {"minruntime": {"enabled": False}}}, "plugins.minruntime.enabled: "),
        ({"plugins": {"proportion": {"priority": 5}}}, "plugins.proportion.priority: "),
        ({"plugins": {"taskorder": {"arguments": {"x": "1"}}}}, "plugins.taskorder.arguments.x: "),
    ],
)
def test_a_misspelt_or_unused_key_names_its_full_path(data: dict[str, Any], message: str) -> None:
    with pytest.raises(ConfigError) as caught:
        load_config(data)
    assert str(caught.value).startswith(message)


@pytest.mark.parametrize(
    ("argument", "value", "message"),
    [
        ("kValue", -1, "plugins.proportion.arguments.kValue: must be >= 0, got -1"),
        ("kValue", -0.5, "plugins.proportion.arguments.kValue: must be >= 0, got -0.5"),
        (
            "reclaimerSaturationMultiplier",
            0.5,
            "plugins.proportion.arguments.reclaimerSaturationMultiplier: must be >= 1, got 0.5",
        ),
        (
            "relcaimerSaturationMultiplier",
            0,
            "plugins.proportion.arguments.relcaimerSaturationMultiplier: must be >= 1, got 0",
        ),
    ],
)
def test_an_out_of_range_plugin_argument_is_an_error_not_clamped(
    argument: str, value: float, message: str
) -> None:
    with pytest.raises(ConfigError) as caught:
        load_config({"plugins": {"proportion": {"arguments": {argument: value}}}})
    assert str(caught.value) == message


def test_every_documented_and_kai_plugin_key_is_read() -> None:
    config = load_config(
        {
            "plugins": {
                "proportion": {
                    "enabled": True,
                    "arguments": {"kValue": 0, "reclaimerSaturationMultiplier": 1.5},
                },
                "numa": {"enabled": True, "arguments": {"ignoreList": "memory"}},
                "minruntime": {"enabled": True},
                "gpusharingorder": {},
            },
            "minRuntime": {"preemptMinRuntime": "5m", "reclaimMinRuntime": 0},
        }
    )
    assert (config.k_value, config.reclaimer_saturation_multiplier) == (0.0, 1.5)
    assert (config.numa, config.numa_ignore) == (True, ("memory",))
    assert (config.default_preempt_min_runtime_s, config.default_reclaim_min_runtime_s) == (
        300.0,
        0.0,
    )


def test_plugin_arguments_may_be_strings_as_kai_writes_them() -> None:
    """KAI's SchedulingShard keeps plugin arguments as a map of strings (``kValue: "1.5"``):
    a string holding a number is that number; any other string is still an error."""
    config = load_config(
        {
            "plugins": {
                "proportion": {
                    "arguments": {"kValue": "1.5", "reclaimerSaturationMultiplier": " 2 "}
                }
            }
        }
    )
    assert (config.k_value, config.reclaimer_saturation_multiplier) == (1.5, 2.0)
    for bad in ("lots", "nan", "inf", "", True):
        with pytest.raises(ConfigError, match="kValue: expected a number"):
            load_config({"plugins": {"proportion": {"arguments": {"kValue": bad}}}})
    with pytest.raises(ConfigError, match="must be >= 0"):
        load_config({"plugins": {"proportion": {"arguments": {"kValue": "-1"}}}})
