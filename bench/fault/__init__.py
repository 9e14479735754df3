"""Long fault runs (kill -9 cycles, wire fuzzing) beyond what the test suite bounds:
``python -m bench.fault``."""
