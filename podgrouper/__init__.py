"""podgrouper package."""
