"""What-if simulation of the scheduler over simulated time (``podmuster simulate``).

Why: platform teams ask "what happens to my teams if I change this quota, this
weight, binpack to spread?" before touching production. The simulator replays
workloads (a trace or manifests) on a described cluster and runs the very
engine the live scheduler runs (``scheduler.cycle.run_cycle`` on a
``ClusterCache`` snapshot), so a simulation is a prediction, not a second
implementation. Nothing imports this package except the CLI.
"""
