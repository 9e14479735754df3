"""gateway package."""
