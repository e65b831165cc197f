"""The cycle machinery: plugin and action protocols, the session and its Statement."""
