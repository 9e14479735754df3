"""Cold start of the container image and of a fresh clone's scripts/run: ``python -m bench.container``."""
