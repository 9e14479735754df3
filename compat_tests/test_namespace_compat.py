"""Namespaces of the unmodified Java 5.3.3 remoting clients, against our gateway AND the real Apache
RocketMQ 5.3.3 broker, with identical assertions.

In 5.3.3 only ``ClientConfig.setNamespace`` (the 4.x way, deprecated but kept) wraps names: the
client sends topic ``T`` as ``ns%T`` and group ``G`` as ``ns%G`` (``NamespaceUtil.wrapNamespace``)
and strips the prefix from what it receives, so producers and consumers in two namespaces share no
topic even when they use the same names. ``setNamespaceV2`` wraps nothing: the client's
``NamespaceRpcHook`` adds the fields ``nsd=true`` and ``ns=<namespace>`` to every request, which no
5.3.3 broker or Proxy reads, so its messages go to the plain topic. Scenario arguments
``namespace=`` / ``namespace-v2=`` (``Run.applyNamespace``); five JVM runs per target.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from compat_tests.helpers import consume, produce
from compat_tests.scenario import done, of
from compat_tests.targets import Target

pytestmark = pytest.mark.compat

LINE = "5.3.3"


def test_two_namespaces_with_the_same_names_see_only_their_own(target: Target, home: Path) -> None:
    for namespace, count in (("nsB", 2), ("nsA", 3)):  # the other namespace's messages stored first
        events = produce(
            target, home, LINE, topic="NsTopic", count=count, keys_prefix=f"{namespace}-",
            group="NsProducer", namespace=namespace,
        )  # fmt: skip
        assert done(events)["sent"] == count
    events = consume(target, home, LINE, topic="NsTopic", group="NsGroup", expect=3, namespace="nsA")
    received = of(events, "received")
    assert sorted(e["keys"] for e in received) == ["nsA-0", "nsA-1", "nsA-2"]
    assert {e["topic"] for e in received} == {"NsTopic"}  # the client strips its namespace
    assert (done(events)["distinct"], done(events)["acked"]) == (3, 3)  # no other message came


def test_namespace_v2_wraps_no_name(target: Target, home: Path) -> None:
    events = produce(target, home, LINE, topic="NsV2Topic", count=1, keys_prefix="v2-", namespace_v2="nsC")
    assert done(events)["sent"] == 1
    events = consume(target, home, LINE, topic="NsV2Topic", group="NsV2Group", expect=1)  # no namespace
    assert [(e["keys"], e["topic"]) for e in of(events, "received")] == [("v2-0", "NsV2Topic")]
