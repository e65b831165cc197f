"""The embedded cluster behind ``podmuster demo``: objects, simulated time, rendering.

Why a package: the demo is the first thing a newcomer runs and later issues
grow it (reclaim, preemption, consolidation); keeping the cluster, the story (workload
manifests under ``workloads/`` and their timing), the podgrouper's pass over
them, the clock and the printing apart lets each grow without the others.
"""
