"""Lets the KAI tables import the scenario kits beside them, as the tables one level up do.

Why: ``disruption_kit`` and ``gpu_kit`` live in ``tests/scheduler/scenarios`` and import
each other by plain module name; importing them the same way from here keeps one copy of
each module in a test run.
"""

from __future__ import annotations

import sys
from pathlib import Path

SCENARIOS = str(Path(__file__).resolve().parent.parent)
if SCENARIOS not in sys.path:
    sys.path.insert(0, SCENARIOS)
