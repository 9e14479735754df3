"""codec package."""
