"""mail."""
