"""The embedded clusters behind ``podmuster demo``: objects, simulated time, rendering.

Why a package: the demo is the first thing a newcomer runs, and it tells
several stories (the main timeline, then the preemption, reclaim and
consolidation scenes); keeping the clusters, the story (workload manifests
under ``workloads/`` and their timing), the podgrouper's pass over them, the
clock and the printing apart lets each grow without the others.
"""
