"""Operations and security: ``mqadmin`` 5.3.3 reading a topic's status, the cluster list, ACL 2.0
signed requests (``AclClientRPCHook``, ``rmqcompat.AuthScenario``) with ``--access-key`` and
``--secret-key``, and the remoting clients over TLS (``-Dtls.enable=true``) with ``--tls``."""

from __future__ import annotations

from compat_tests.tool.catalogue.common import consume, per_line, produce, same_messages
from compat_tests.tool.clients import remoting
from compat_tests.tool.javaenv import JVM_OPTIONS
from compat_tests.tool.model import JAVA_533, MQADMIN, Context, NotRun, Scenario, check
from compat_tests.tool.process import Background

COUNT = 3


def mqadmin(ctx: Context, *args: str) -> str:
    """Run one ``mqadmin`` subcommand (signed with the target's keys through ``tools.yml``)."""
    argv = [ctx.java.java(), *JVM_OPTIONS, f"-Duser.home={ctx.home}", f"-Drocketmq.home.dir={ctx.home}"]
    if ctx.target.access_key and ctx.target.secret_key:
        conf = ctx.home / "conf"
        conf.mkdir(parents=True, exist_ok=True)
        (conf / "tools.yml").write_text(
            f"accessKey: {ctx.target.access_key}\nsecretKey: {ctx.target.secret_key}\n"
        )
    if ctx.target.tls:
        argv += ["-Dtls.enable=true", "-Dtls.test.mode.enable=true"]  # trusts any certificate
    argv += ["-cp", ctx.java.tools(), "org.apache.rocketmq.tools.command.MQAdminStartup", *args]
    process = ctx.track(Background([*argv, "-n", ctx.target.namesrv], ctx.home / "out"))
    return process.finish(ctx.remaining()).require_ok(f"mqadmin {args[0]}").stdout


def admin_views(ctx: Context) -> None:
    topic = ctx.topic()
    sent = remoting(
        ctx, JAVA_533, "produce", "rmqcompat.AuthScenario", topic=topic, count=COUNT
    )  # signs with keys
    check(len(sent.of("sent")) == COUNT, f"sends before mqadmin: {sent.of('send-failed') or sent.error()}")
    status = mqadmin(ctx, "topicStatus", "-t", topic)
    rows = [
        line.split() for line in status.splitlines() if len(line.split()) >= 4 and line.split()[1].isdigit()
    ]
    total = sum(int(row[3]) for row in rows if row[3].isdigit())
    check(total == COUNT, f"topicStatus max offsets add up to {total}, {COUNT} sent")
    cluster = ctx.admin.cluster_name()
    check(cluster in mqadmin(ctx, "clusterList"), f"clusterList does not show {cluster}")


def acl(ctx: Context, client: str) -> None:
    if not (ctx.target.access_key and ctx.target.secret_key):
        raise NotRun("give --access-key and --secret-key of an ACL 2.0 user")
    topic, group = ctx.topic(), ctx.group()
    signed = remoting(ctx, client, "produce", "rmqcompat.AuthScenario", topic=topic, count=COUNT)
    refused = signed.of("send-failed")
    check(not refused, f"signed send refused: {refused[0] if refused else ''}")
    pulled = remoting(ctx, client, "pull", "rmqcompat.AuthScenario", topic=topic, group=group).require_ok(
        "pull"
    )
    counts = [e.get("count") for e in pulled.of("pulled")]
    check(counts == [COUNT], f"signed pull: {pulled.of('pull-failed') or counts}")


def tls(ctx: Context, client: str) -> None:
    if not ctx.target.tls:
        raise NotRun("the target was not given --tls")
    topic, group = ctx.topic(), ctx.group()
    sent = produce(ctx, client, topic, COUNT)
    same_messages(sent, consume(ctx, client, topic, group, COUNT))


def scenarios() -> list[Scenario]:
    admin = Scenario("mqadm", "mqadmin", MQADMIN, frozenset({"admin"}), admin_views,
                     "topicStatus and clusterList read the cluster", quick=True)  # fmt: skip
    return [
        admin,
        *per_line("acl", "ACL 2.0", {"acl"}, "signed send and pull", acl),
        *per_line("tls", "TLS", {"tls"}, "send and consume over TLS", tls),
    ]
