"""The figures ``python -m bench.container`` prints: median and p95 (nearest rank) of the starts,
and the cores kept busy between two snapshots of the machine. The bench itself runs at 2 starts in
``compat_tests/test_container.py::test_container_bench_smoke`` (it needs Docker and the image)."""

from __future__ import annotations

from bench.container.procs import busy_cores, machine, summary


def test_summary_of_twenty_starts() -> None:
    times = [float(i) for i in range(20, 0, -1)]
    assert summary(times) == {"median": 10.5, "p95": 19.0, "min": 1.0, "max": 20.0, "n": 20}
    assert summary([2.0, 1.0]) == {"median": 1.5, "p95": 2.0, "min": 1.0, "max": 2.0, "n": 2}


def test_busy_cores_between_snapshots() -> None:
    before = {"cores": 2, "cpu_busy": 100, "cpu_total": 400}
    assert busy_cores(before, {"cores": 2, "cpu_busy": 250, "cpu_total": 600}) == 1.5
    assert busy_cores(before, before) == 0.0
    now = machine()
    assert now["cores"] >= 1
    assert len(now["loadavg"]) == 3
