"""ACL 2.0 on the remoting protocol: the same clients, credentials and ACLs against our gateway AND
the real Apache RocketMQ 5.3.3 broker, both started with authentication and authorization on.

* ``mqadmin`` (5.3.3 tools) signs with ``conf/tools.yml`` (the super user made from
  ``initAuthenticationUser``), creates and updates users and ACLs, and reads them back;
* a producer and a push consumer of the 4.9.8 and the 5.3.3 Java clients signing with
  ``AclClientRPCHook`` (4.9.8 keeps it in the separate ``rocketmq-acl`` jar) and the right
  credentials send and receive;
* a wrong secret, an unknown user, no credentials, a disabled user, and a user whose ACL denies
  Sub on the topic are refused with the same response code and remark on both brokers, from
  both client lines;
* a query by unique key, whose ``_UNIQUE_KEY_QUERY`` ext field is signed by clients above
  V4_9_3 (4.9.8 and 5.3.3 both), passes the signature check on both brokers;
* a request code no processor serves, on the broker's port and its VIP port, is refused for its
  credentials before it is answered as not supported (the broker's default processor puts every
  code through the request pipeline).
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path

import pytest

from broker.auth.config import acl_conf
from broker.auth.signature import sign_request
from compat_tests.helpers import TARGETS
from compat_tests.mqadmin_batch import mqadmin_batch
from compat_tests.reference import REFERENCE_LIB, run_mqadmin, write_tools_yml
from compat_tests.scenario import CLIENT_LINES, Event, run_program
from compat_tests.targets import Target, start_target
from compat_tests.test_vip_channel_compat import raw_request

pytestmark = [pytest.mark.compat, pytest.mark.slow]

PROGRAM = "rmqcompat.AuthScenario"
ROOT, ROOT_SECRET = "rocketmq", "12345678"
TOPIC = "AuthTopic"
CLUSTER = "DefaultCluster"
AUTH_CONF = acl_conf(ROOT, ROOT_SECRET)
SENT = 10
ADDRESS = re.compile(r"\d+\.\d+\.\d+\.\d+:\d+")
TRANSCRIPTS: dict[str, str] = {}  # what listUser, getUser, getAcl, listAcl printed, per target


@pytest.fixture(scope="module", params=TARGETS)
def auth_target(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Target]:
    if not REFERENCE_LIB.is_dir():
        pytest.fail("the reference jars are missing: run scripts/setup-java.sh")
    name: str = request.param
    started = start_target(name, tmp_path_factory.mktemp(f"auth-{name}"), AUTH_CONF)
    try:
        yield started
    finally:
        started.discard()


@pytest.fixture(scope="module")
def home(auth_target: Target, tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp(f"auth-clients-{auth_target.name}")


class Admin:
    """``mqadmin`` signing as the super user (``conf/tools.yml``), addresses masked in its output."""

    def __init__(self, target: Target, home: Path) -> None:
        self.target = target
        self.home = home
        self.signed_home = write_tools_yml(home / "rocketmq-home", ROOT, ROOT_SECRET)
        self.setup: dict[str, str] = {}
        self.broker_addr = ""  # the first address mqadmin printed (the only broker of the cluster)

    def __call__(self, *args: str) -> str:
        return self._masked(
            run_mqadmin(self.target.namesrv_addr, *args, home=self.home, rocketmq_home=self.signed_home)
        )

    def batch(self, commands: dict[str, list[str]]) -> dict[str, str]:
        """Run ``commands`` (name -> arguments) in order in one JVM; each one's masked output."""
        outputs = mqadmin_batch(self.target.namesrv_addr, commands, self.home, self.signed_home)
        return {
            name: self._masked("\n".join(line for line in outputs[name].splitlines() if " INFO " not in line))
            for name in commands
        }

    def set_up(self, commands: list[tuple[str, list[str], str]]) -> None:
        """Run ``commands`` (name, arguments, expected line) in order in one JVM; keep each output
        in ``setup``."""
        self.setup.update(self.batch({name: args for name, args, _ in commands}))

    def _masked(self, out: str) -> str:
        found = ADDRESS.search(out)
        if found and not self.broker_addr:
            self.broker_addr = found.group(0)
        return ADDRESS.sub("ADDR", out)


#: What the module's fixture asks mqadmin to set up, in order, with the line each must print.
SETUP = [
    (
        "topic",
        ["updateTopic", "-c", CLUSTER, "-t", TOPIC, "-r", "2", "-w", "2"],
        "create topic to ADDR success",
    ),
    *[
        (f"user {u}", ["createUser", "-c", CLUSTER, "-u", u, "-p", f"{u}-pw"], "create user to ADDR success.")
        for u in ("alice", "bob", "carol")
    ],
    (
        "disable carol",
        ["updateUser", "-c", CLUSTER, "-u", "carol", "-s", "disable"],
        "update user to ADDR success.",
    ),
    (
        "acl alice",
        [
            *("createAcl", "-c", CLUSTER, "-s", "User:alice", "-r", f"Topic:{TOPIC},Group:aliceGroup"),
            *("-a", "Pub,Sub", "-d", "Allow"),
        ],
        "create acl to ADDR success.",
    ),
    (
        "acl bob",
        ["createAcl", "-c", CLUSTER, "-s", "User:bob", "-r", f"Topic:{TOPIC}", "-a", "Sub", "-d", "Deny"],
        "create acl to ADDR success.",
    ),
    (
        "user erin",
        ["createUser", "-c", CLUSTER, "-u", "erin", "-p", "erin-pw"],
        "create user to ADDR success.",
    ),
    (
        "acl erin deny",
        ["createAcl", "-c", CLUSTER, "-s", "User:erin", "-r", f"Topic:{TOPIC}", "-a", "Sub", "-d", "Deny"],
        "create acl to ADDR success.",
    ),
    (
        "acl erin allow",
        [
            *("updateAcl", "-c", CLUSTER, "-s", "User:erin", "-r", "Topic:Auth*,Group:erinGroup"),
            *("-a", "Sub", "-d", "Allow"),
        ],
        "update acl to ADDR success.",
    ),
    (
        "user dave",
        ["createUser", "-c", CLUSTER, "-u", "dave", "-p", "dave-pw"],
        "create user to ADDR success.",
    ),
    (
        "acl dave",
        ["createAcl", "-c", CLUSTER, "-s", "User:dave", "-r", "Topic:X,Topic:Y", "-a", "Pub", "-d", "Allow"],
        "create acl to ADDR success.",
    ),
    (
        "delete acl dave X",
        ["deleteAcl", "-c", CLUSTER, "-s", "User:dave", "-r", "Topic:X"],
        "delete acl to ADDR success.",
    ),
    ("delete user dave", ["deleteUser", "-c", CLUSTER, "-u", "dave"], "delete user to ADDR success."),
    (
        "acl bob group",
        ["updateAcl", "-c", CLUSTER, "-s", "User:bob", "-r", "Group:bobGroup", "-a", "Sub", "-d", "Allow"],
        "update acl to ADDR success.",
    ),
]


@pytest.fixture(scope="module")
def admin(auth_target: Target, home: Path) -> Admin:
    """The users and ACLs every test of the module uses, made with mqadmin as the super user."""
    tool = Admin(auth_target, home)
    tool.set_up(SETUP)
    return tool


def java(
    target: Target, home: Path, command: str, line: str = CLIENT_LINES[-1], **args: str | int
) -> list[Event]:
    """One run of ``rmqcompat.AuthScenario`` with the Java client of ``line``; its events."""
    return run_program(PROGRAM, line, command, target.namesrv_addr, home, 60, dict(args))


def only(events: list[Event], name: str) -> Event:
    found = [e for e in events if e.get("event") == name]
    assert len(found) == 1, events
    return found[0]


def test_admin_tool_manages_users_and_acls(admin: Admin) -> None:
    for name, _args, expected in SETUP:
        assert expected in admin.setup[name], (name, admin.setup[name])
    out = admin.batch(
        {
            "users": ["listUser", "-c", CLUSTER],
            "carol": ["getUser", "-c", CLUSTER, "-u", "carol"],
            "acl bob": ["getAcl", "-c", CLUSTER, "-s", "User:bob"],
            "acl alice": ["listAcl", "-c", CLUSTER, "-s", "User:alice"],
            "copy user": ["copyUser", "-f", admin.broker_addr, "-t", admin.broker_addr, "-u", "alice"],
            "copy acl": ["copyAcl", "-f", admin.broker_addr, "-t", admin.broker_addr, "-s", "User:alice"],
            "get alice": ["getAcl", "-c", CLUSTER, "-s", "User:alice"],
            "list alice": ["listAcl", "-c", CLUSTER, "-s", "User:alice"],
        }
    )
    users, carol, acl, listed = out["users"], out["carol"], out["acl bob"], out["acl alice"]
    for user in (ROOT, "alice", "bob", "carol"):
        assert re.search(rf"\b{user}\b", users), users
    assert re.search(r"(?i)disable", carol), carol
    assert f"Topic:{TOPIC}" in acl, acl
    assert "Group:bobGroup" in acl, acl
    assert "Deny" in acl, acl
    assert "Group:aliceGroup" in listed, listed
    assert "User:bob" not in listed, listed
    assert "dave" not in users, users
    assert "copy user of alice from ADDR to ADDR success." in out["copy user"], out["copy user"]
    assert "copy acl of User:alice from ADDR to ADDR success." in out["copy acl"], out["copy acl"]
    assert out["get alice"] == out["list alice"]
    transcript = "\n---\n".join([users, carol, acl, listed])
    (admin.home / "admin-transcript.txt").write_text(transcript)
    TRANSCRIPTS[admin.target.name] = transcript
    if len(TRANSCRIPTS) == len(TARGETS):  # the second target of the run: both printed the same
        assert TRANSCRIPTS["gateway"] == TRANSCRIPTS["reference"]


@pytest.mark.parametrize("line", CLIENT_LINES)
def test_good_credentials_send_and_consume(auth_target: Target, home: Path, admin: Admin, line: str) -> None:
    sent = java(auth_target, home, "produce", line, topic=TOPIC, count=SENT, ak="alice", sk="alice-pw")
    assert [e["status"] for e in sent if e.get("event") == "sent"] == ["SEND_OK"] * SENT, sent
    consumed = java(
        auth_target,
        home,
        "consume",
        line,
        topic=TOPIC,
        group="aliceGroup",
        expect=SENT,
        ak="alice",
        sk="alice-pw",
    )
    assert only(consumed, "consumed")["count"] >= SENT


@pytest.mark.parametrize("line", CLIENT_LINES)
def test_query_by_unique_key_carries_a_signed_flag(
    auth_target: Target, home: Path, admin: Admin, line: str
) -> None:
    events = java(auth_target, home, "query", line, topic=TOPIC, ak="alice", sk="alice-pw")
    assert only(events, "queried")["same_body"] is True, events


@pytest.mark.parametrize(
    ("command", "args", "remark"),
    [
        ("produce", {"ak": "alice", "sk": "wrong"}, "check signature failed."),
        ("produce", {"ak": "ghost", "sk": "x"}, "User:ghost is not found."),
        ("produce", {}, "username cannot be null."),
        ("produce", {"ak": "carol", "sk": "carol-pw"}, "User:carol is disabled."),
        (
            "pull",
            {"ak": "bob", "sk": "bob-pw", "group": "bobGroup"},
            f"User:bob has no permission to access Topic:{TOPIC} from 127.0.0.1, the decision is deny.",
        ),
        (
            "pull",
            {"ak": "alice", "sk": "alice-pw", "group": "otherGroup"},
            "User:alice has no permission to access Group:otherGroup from 127.0.0.1, no matched policies.",
        ),
    ],
    ids=["wrong-secret", "unknown-user", "unsigned", "disabled-user", "denied-sub", "no-group-acl"],
)
@pytest.mark.parametrize("line", CLIENT_LINES)
def test_refusals_have_the_real_brokers_code_and_remark(
    auth_target: Target, home: Path, admin: Admin, command: str, args: dict[str, str], remark: str, line: str
) -> None:
    events = java(auth_target, home, command, line, topic=TOPIC, count=1, **args)
    failure = only(events, f"{'send' if command == 'produce' else command}-failed")
    assert (failure["code"], failure["remark"]) == (16, remark)


def test_of_a_literal_and_a_prefix_entry_the_later_one_decides(
    auth_target: Target, home: Path, admin: Admin
) -> None:
    """erin's ACL denies Sub on ``Topic:AuthTopic``, then allows it on ``Topic:Auth*``: Java's
    comparator does not order a literal and a prefixed entry, and its sort leaves the later
    one first, so the pull is allowed on both brokers (not "Deny wins")."""
    events = java(auth_target, home, "pull", topic=TOPIC, group="erinGroup", ak="erin", sk="erin-pw")
    assert only(events, "pulled")["count"] >= 0, events


@pytest.mark.parametrize(
    ("port_offset", "code"),
    [(0, 902), (0, 9999), (-2, 902), (-2, 11)],
    ids=["902", "9999", "vip-902", "vip-pull"],
)
def test_a_code_no_processor_serves_is_refused_for_its_credentials_first(
    auth_target: Target, admin: Admin, port_offset: int, code: int
) -> None:
    """Hand-built frames to the broker's port and its VIP port (port - 2, where 11 PULL_MESSAGE
    has no processor): unsigned or badly signed, the refusal; signed, "not supported"."""
    host, port = admin.broker_addr.rsplit(":", 1)
    answers = []
    for secret in (None, "not-the-secret", ROOT_SECRET):
        fields = {"x": "1"}
        if secret is not None:
            sign_request(fields, None, ROOT, secret)
        answer = raw_request((host, int(port) + port_offset), code, fields)
        answers.append((answer["code"], answer.get("remark")))
    assert answers == [
        (16, "username cannot be null."),
        (16, "check signature failed."),
        (3, f" request type {code} not supported"),
    ]
