"""Proportion plugin: hierarchical fair share, queue order and reclaim validation."""
