"""The embedded cluster behind ``podmuster demo``: objects, simulated time, rendering.

Why a package: the demo is the first thing a newcomer runs and later issues
grow it (reclaim, preemption, consolidation); keeping the cluster, the clock
and the printing apart lets each grow without the others.
"""
