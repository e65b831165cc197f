"""crds package."""
