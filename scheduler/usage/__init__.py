"""Queue usage over time for time-based fair share (KAI's usage database)."""
