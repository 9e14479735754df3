"""``rmq-compat`` without a RocketMQ server: the catalogue's selection, the report writers, the
difference report, and a run against targets that refuse, close or never answer (each a reported
row, within the time limits). The runs against real servers are in compat_tests/test_compat_tool.py."""

from __future__ import annotations

import json
import socket
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any
from xml.etree import ElementTree as ET

import pytest

from compat_tests import compat_matrix
from compat_tests.tool import cli, report
from compat_tests.tool.catalogue import catalogue, select
from compat_tests.tool.goenv import GoEnv
from compat_tests.tool.javaenv import JavaEnv
from compat_tests.tool.model import (
    GO_GRPC,
    JAVA_498,
    JAVA_533,
    JAVA_GRPC,
    Context,
    NotRun,
    Outcome,
    Scenario,
    TargetReport,
    TargetSpec,
)
from compat_tests.tool.prepare import prepare
from compat_tests.tool.process import Background, run
from compat_tests.tool.runner import RunOptions, run_one


def _noop(ctx: Context) -> None:
    del ctx


def scenario(feature: str, client: str, key: str = "", tags: tuple[str, ...] = ("send",)) -> Scenario:
    return Scenario(key or f"{feature}{client}".replace(" ", "").replace(".", ""), feature, client,
                    frozenset(tags), _noop, "a test row")  # fmt: skip


def sample() -> TargetReport:
    rows = [
        Outcome(scenario("send sync", JAVA_498), "passed", seconds=1.5),
        Outcome(scenario("send sync", JAVA_533), "failed", "2 of 4 sent messages never arrived"),
        Outcome(scenario("SQL92 filter", JAVA_533), "unsupported", "does not support <SQL92> & more"),
        Outcome(scenario("gRPC send", "java-grpc-5"), "not run", "no endpoint (give --grpc HOST:PORT)"),
    ]
    return TargetReport(TargetSpec("127.0.0.1:9876"), rows, 0.0, 12.0)


def test_catalogue_keys_are_unique_and_quick_keeps_one_row_per_feature() -> None:
    everything = catalogue()
    assert len({s.key for s in everything}) == len(everything)
    quick = select(everything, quick=True)
    assert sorted(s.feature for s in quick) == sorted({s.feature for s in everything})
    assert all(s.quick for s in quick)


def test_only_exclude_and_unknown_tags() -> None:
    everything = catalogue()
    grpc = select(everything, only="grpc")
    assert grpc
    assert all("grpc" in s.tags for s in grpc)
    old = select(everything, only=JAVA_498, exclude="filter")
    assert old
    assert all(s.client == JAVA_498 and "filter" not in s.tags for s in old)
    with pytest.raises(ValueError, match="unknown tag"):
        select(everything, only="sned")


def test_table_lists_every_feature_and_the_reasons() -> None:
    text = report.table(sample())
    lines = text.splitlines()
    assert lines[0] == "target 127.0.0.1:9876: 1 passed, 1 failed, 1 unsupported, 1 not run in 12 s"
    assert lines[1].split() == ["feature", "java-4.9.8", "java-5.3.3", "java-grpc-5"]
    assert lines[3].split() == ["send", "sync", "passed", "FAILED", "[1]", "-"]
    assert "[1] send sync[java-5.3.3] failed: 2 of 4 sent messages never arrived" in lines
    assert "[3] gRPC send[java-grpc-5] not run: no endpoint (give --grpc HOST:PORT)" in lines


def test_json_junit_and_html() -> None:
    doc = json.loads(report.to_json([sample()]))
    [target] = doc["targets"]
    assert target["counts"] == {"passed": 1, "failed": 1, "unsupported": 1, "not run": 1}
    assert [r["status"] for r in target["results"]] == ["passed", "failed", "unsupported", "not run"]
    assert target["results"][0]["seconds"] == 1.5
    suite = ET.fromstring(report.to_junit([sample()])).find("testsuite")
    assert suite is not None
    assert (suite.get("tests"), suite.get("failures"), suite.get("skipped")) == ("4", "1", "2")
    failure = suite.find("testcase[@name='send sync[java-5.3.3]']/failure")
    assert failure is not None
    assert failure.get("message") == "2 of 4 sent messages never arrived"
    page = report.to_html([sample()])
    assert "does not support &lt;SQL92&gt; &amp; more" in page
    assert page.count("<tr>") == 1 + 3  # the header and three features


def test_differences_name_each_row_whose_status_differs() -> None:
    first, second = sample(), sample()
    assert report.differences(first, second) == []
    assert report.difference_text(first, second, []).startswith("no differences between")
    second.outcomes[0] = Outcome(second.outcomes[0].scenario, "failed", "lost a message")
    [diff] = report.differences(first, second)
    assert diff.scenario_id == "send sync[java-4.9.8]"
    text = report.difference_text(first, second, [diff])
    assert "send sync[java-4.9.8]: A passed; B failed (lost a message)" in text
    assert json.loads(report.to_json([first, second], [diff]))["differences"][0]["id"] == diff.scenario_id


def test_list_and_argument_errors(capsys: pytest.CaptureFixture[str]) -> None:
    assert cli.main(["--list", "--only", "pop"]) == 0
    assert "POP[java-5.3.3]" in capsys.readouterr().out
    with pytest.raises(SystemExit) as exit_info:
        cli.main(["--quick"])
    assert exit_info.value.code == 2
    assert "--namesrv HOST:PORT is required" in capsys.readouterr().err
    with pytest.raises(SystemExit):
        cli.main(["--namesrv", "nowhere"])


@pytest.fixture
def refused_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@pytest.fixture
def misbehaving() -> Iterator[dict[str, int]]:
    """Two listeners: one closes every connection at once, one accepts and never answers."""
    closing, silent = socket.create_server(("127.0.0.1", 0)), socket.create_server(("127.0.0.1", 0))
    held: list[socket.socket] = []
    stop = threading.Event()

    def serve(server: socket.socket, keep: bool) -> None:
        server.settimeout(0.1)
        while not stop.is_set():
            try:
                conn, _ = server.accept()
            except TimeoutError:
                continue
            if keep:
                held.append(conn)
            else:
                conn.close()

    threads = [
        threading.Thread(target=serve, args=(closing, False)),
        threading.Thread(target=serve, args=(silent, True)),
    ]
    for t in threads:
        t.start()
    yield {"closing": closing.getsockname()[1], "silent": silent.getsockname()[1]}
    stop.set()
    for t in threads:
        t.join(5)
    for s in (closing, silent, *held):
        s.close()


def _run(tmp_path: Path, port: int, *extra: str) -> dict[str, Any]:
    out = tmp_path / f"r{port}.json"
    started = time.monotonic()
    code = cli.main(["--namesrv", f"127.0.0.1:{port}", "--only", "send", "--json", str(out), *extra])
    doc = json.loads(out.read_text())
    return {"code": code, "seconds": time.monotonic() - started, "results": doc["targets"][0]["results"]}


def test_unreachable_closing_and_silent_targets_are_reported_rows(
    tmp_path: Path, refused_port: int, misbehaving: dict[str, int]
) -> None:
    refused = _run(tmp_path, refused_port)
    closing = _run(tmp_path, misbehaving["closing"])
    silent = _run(tmp_path, misbehaving["silent"], "--timeout", "2")
    for outcome in (refused, closing, silent):
        assert outcome["code"] == 1
        results = outcome["results"]
        assert isinstance(results, list)
        assert results
        assert {r["status"] for r in results} == {"not run"}
        assert all(r["reason"].startswith("target unreachable: 127.0.0.1:") for r in results)
    assert silent["seconds"] < 10  # the admin call waits at most --timeout


def test_a_scenario_over_its_limit_is_a_failed_row_and_its_programs_are_killed(tmp_path: Path) -> None:
    started: list[Background] = []

    def slow(ctx: Context) -> None:
        started.append(ctx.track(Background(["sleep", "60"], ctx.home)))
        time.sleep(30)

    row = Scenario("slow", "slow", JAVA_533, frozenset({"send"}), slow, "sleeps")
    options = RunOptions("rcx", tmp_path, timeout=0.5, keep=True, grace=0.2)
    began = time.monotonic()
    outcome = run_one(row, TargetSpec("127.0.0.1:1"), JavaEnv(), options)
    assert outcome.status == "failed"
    assert outcome.reason == "timed out: no result within 0.5 s"
    assert time.monotonic() - began < 10
    assert [p.proc.poll() for p in started] == [-9]


def test_a_program_over_its_limit_is_killed(tmp_path: Path) -> None:
    began = time.monotonic()
    result = run(["sleep", "30"], tmp_path, 0.3)
    assert result.timed_out
    assert time.monotonic() - began < 10


def test_without_java_the_java_rows_say_what_to_install(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("PATH", str(tmp_path))
    env = JavaEnv(source=tmp_path, cache=tmp_path / "cache")
    with pytest.raises(NotRun, match="needs Java 17"):
        env.remoting("5.3.3")
    with pytest.raises(NotRun, match="needs Java 17"):
        env.grpc()


def test_without_go_the_go_row_says_what_to_install(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PATH", str(tmp_path))
    env = GoEnv(source=tmp_path, cache=tmp_path / "cache")
    with pytest.raises(NotRun, match=r"needs Go 1\.24 or later .*https://go\.dev/dl/"):
        env.grpc()
    with pytest.raises(NotRun, match="needs Go"):  # remembered, not tried again
        env.grpc()
    assert not (tmp_path / "cache").exists()


def test_the_go_row_is_listed_and_selected_by_its_client_name(capsys: pytest.CaptureFixture[str]) -> None:
    everything = catalogue()
    [go] = select(everything, only=GO_GRPC)
    assert (go.id, sorted(go.tags), go.quick) == ("gRPC send/receive[go-grpc-5]", ["grpc", "send"], False)
    assert select(everything, only=GO_GRPC, quick=True) == [go]
    quick_grpc_send = [s for s in select(everything, quick=True) if s.feature == go.feature]
    assert [s.client for s in quick_grpc_send] == [JAVA_GRPC]  # the feature's pick
    assert go in select(everything, only="grpc")
    assert go not in select(everything, only="grpc", exclude=GO_GRPC)
    assert cli.main(["--list", "--only", "go-grpc-5"]) == 0
    out = capsys.readouterr().out
    assert "gRPC send/receive[go-grpc-5]" in out
    assert "go-grpc-5" in out.splitlines()[-1]  # among the tags


class RecordingJava(JavaEnv):
    """Records which builds were asked for; the 4.9.8 line fails to build."""

    def __init__(self) -> None:
        super().__init__()
        self.asked: list[str] = []

    def remoting(self, line: str) -> str:
        self.asked.append(line)
        if line == "4.9.8":
            raise NotRun("could not fetch the client jars with Maven: offline")
        return "classes"

    def grpc(self) -> str:
        self.asked.append("grpc")
        return "classes"

    def tools(self) -> str:
        self.asked.append("tools")
        return "lib"


class RecordingGo(GoEnv):
    def __init__(self) -> None:
        super().__init__()
        self.asked = 0

    def grpc(self) -> Path:
        self.asked += 1
        return Path("grpcgo")


def test_the_clients_a_selection_needs_are_built_before_its_scenarios() -> None:
    everything = catalogue()
    java, go = RecordingJava(), RecordingGo()
    failed = prepare(everything, TargetSpec("127.0.0.1:9876", "127.0.0.1:8081"), java, go)
    assert failed == [JAVA_498]
    assert sorted(java.asked) == ["4.9.8", "5.3.3", "grpc", "tools"]
    assert go.asked == 1
    java, go = RecordingJava(), RecordingGo()
    assert prepare(everything, TargetSpec("127.0.0.1:9876"), java, go, jobs=1) == [JAVA_498]
    assert (java.asked, go.asked) == (["4.9.8", "5.3.3", "tools"], 0)  # no endpoint: no gRPC builds
    java, go = RecordingJava(), RecordingGo()
    prepare(select(everything, only="python-grpc-5"), TargetSpec("127.0.0.1:9876", "h:1"), java, go)
    assert (java.asked, go.asked) == ([], 0)


def test_acl_and_tls_rows_are_selected_with_their_options_or_by_name() -> None:
    def features(*argv: str) -> set[str]:
        args = cli.parser().parse_args(["--namesrv", "127.0.0.1:9876", *argv])
        return {s.feature for s in select(catalogue(), args.only, cli.excluded(args), args.quick)}

    assert not {"ACL 2.0", "TLS"} & features()
    assert {"ACL 2.0", "TLS"} <= features("--access-key", "ak", "--secret-key", "sk", "--tls")
    assert features("--only", "acl") == {"ACL 2.0"}


def test_matrix_cells_say_ours_then_the_reference() -> None:
    ours = json.loads(report.to_json([sample()]))["targets"][0]
    real = json.loads(report.to_json([sample()]))["targets"][0]
    real["results"][1]["status"] = "passed"
    ours["started"] = real["started"] = 1795795388.8
    block = compat_matrix.render({"targets": [ours, real], "differences": [{"id": "x"}]})
    lines = block.splitlines()
    assert lines[0] == compat_matrix.BEGIN
    assert lines[-1] == compat_matrix.END
    assert "run on 2026-11-27" in lines[1]
    assert "1 difference(s)" in lines[1]
    assert lines[3] == "| Feature | `java-4.9.8` | `java-5.3.3` | `java-grpc-5` |"
    assert "| send sync | ✔ / ✔ | ✘ / ✔ |" in block
    assert "| SQL92 filter | — | unsupported / unsupported | — |" in block
    assert "| gRPC send | — | — | not run / not run |" in block


def test_the_5_5_0_column_sums_each_features_rows_per_target() -> None:
    ours = json.loads(report.to_json([sample()]))["targets"][0]
    real = json.loads(report.to_json([sample()]))["targets"][0]
    real["results"][1]["status"] = "passed"
    ours["started"] = real["started"] = 1795795388.8
    ours55 = json.loads(report.to_json([sample()]))["targets"][0]
    real55 = json.loads(json.dumps(real))
    doc55 = {"targets": [ours55, real55], "differences": [{"id": "x"}]}
    block = compat_matrix.render({"targets": [ours, real], "differences": [{"id": "x"}]}, doc55)
    lines = block.splitlines()
    assert (lines[0], lines[-1]) == (compat_matrix.BEGIN, compat_matrix.END)
    assert "ours with `brokerVersion=5.5.0` / the real Apache RocketMQ 5.5.0" in lines[3]
    assert "1 difference(s). Report: `docs/compat-reports/rmq-compat-5.5.0.json`." in lines[3]
    assert lines[5] == "| Feature | `java-4.9.8` | `java-5.3.3` | `java-grpc-5` | 5.5.0 |"
    assert lines[6] == "|---|---|---|---|---|"
    assert "| send sync | ✔ / ✔ | ✘ / ✔ | — | ✘ / ✔ |" in block
    assert "| SQL92 filter | — | unsupported / unsupported | — | unsupported / unsupported |" in block
    assert "| gRPC send | — | — | not run / not run | not run / not run |" in block


def test_readme_matrix_is_the_committed_report_rendered() -> None:
    """The README block is both reports rendered; every row passes on ours and on 5.3.3 alike."""
    readme = compat_matrix.README.read_text()
    document = json.loads(compat_matrix.REPORT.read_text())
    document55 = json.loads(compat_matrix.REPORT_55.read_text())
    assert compat_matrix.with_block(readme, compat_matrix.render(document, document55)) == readme
    assert document["differences"] == []
    assert {r["status"] for t in document["targets"] for r in t["results"]} == {"passed"}
    assert len(document55["targets"]) == 2
    assert {r["id"] for t in document55["targets"] for r in t["results"]} == {
        r["id"] for t in document["targets"] for r in t["results"]
    }
