"""supervisor."""
