"""Long fault runs (issue 13): ``python -m bench.fault``."""
