"""Snapshot value types: resources, pods, pod groups, nodes and queues as the engine sees them."""
