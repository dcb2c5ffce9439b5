"""phases."""
