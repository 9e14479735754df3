"""The request signature, the resource each request needs, and Java's ACL decision order."""

from __future__ import annotations

import base64
import hashlib
import hmac

from broker.auth.contexts import required_permissions
from broker.auth.guard import first_entry, source_ip
from broker.auth.models import Action, Decision, PolicyEntry, Resource, ResourcePattern, ResourceType
from broker.auth.signature import V4_9_3, request_content, sign, sign_request, signature_matches
from codec.bodies.heartbeat import ConsumerData, HeartbeatData, SubscriptionData
from codec.codes import RequestCode


def test_content_is_sorted_values_then_body() -> None:
    fields = {"AccessKey": "rocketmq2", "topic": "T", "queueId": "0", "Signature": "x"}
    # keys in Java's TreeMap order: AccessKey < queueId < topic (upper case first)
    assert request_content(fields, None, 479) == b"rocketmq20T"
    assert request_content(fields, b"\x00body", 479) == b"rocketmq20T\x00body"


def test_unique_key_flag_is_left_out_only_for_clients_up_to_4_9_3() -> None:
    fields = {"AccessKey": "ak", "_UNIQUE_KEY_QUERY": "true"}
    assert request_content(fields, None, V4_9_3) == b"ak"
    assert request_content(fields, None, V4_9_3 + 1) == b"aktrue"


def test_signature_is_base64_hmac_sha1_and_checked() -> None:
    expected = base64.b64encode(hmac.new(b"secret", b"0rocketmq2T", hashlib.sha1).digest()).decode()
    assert sign(b"0rocketmq2T", "secret") == expected
    fields = {"topic": "T", "queueId": "0"}
    sign_request(fields, b"payload", "rocketmq2", "secret")
    content = request_content(fields, b"payload", 479)
    assert signature_matches(content, "secret", fields["Signature"])
    assert not signature_matches(content, "other", fields["Signature"])
    assert not signature_matches(content + b"x", "secret", fields["Signature"])
    assert not signature_matches(content, "secret", None)
    head = request_content(fields, None, 479)
    assert signature_matches(head, "secret", fields["Signature"], b"payload")
    assert not signature_matches(content, "secret", "\udcff")


def _needs(code: int, fields: dict[str, str], body: bytes | None = None) -> list[tuple[str, set[str]]]:
    return [(r.key, {a.value for a in acts}) for r, acts in required_permissions(code, fields, body, "C1")]


def test_send_pull_and_retry_topics_need_what_java_asks() -> None:
    assert _needs(RequestCode.SEND_MESSAGE_V2, {"a": "pg", "b": "T"}) == [("Topic:T", {"Pub"})]
    assert _needs(RequestCode.SEND_MESSAGE_V2, {"a": "g1", "b": "%RETRY%g1"}) == [("Group:g1", {"Sub"})]
    assert _needs(RequestCode.SEND_MESSAGE, {"topic": "%RETRY%g2"}) == [("Group:g2", {"Sub"})]
    assert _needs(RequestCode.PULL_MESSAGE, {"topic": "T", "consumerGroup": "g"}) == [
        ("Topic:T", {"Sub"}),
        ("Group:g", {"Sub"}),
    ]
    assert _needs(RequestCode.PULL_MESSAGE, {"topic": "%RETRY%g", "consumerGroup": "g"}) == [
        ("Group:g", {"Sub"})
    ]
    assert _needs(RequestCode.CONSUMER_SEND_MSG_BACK, {"group": "g", "offset": "1"}) == [("Group:g", {"Sub"})]
    assert _needs(RequestCode.GET_ROUTEINFO_BY_TOPIC, {"topic": "T"}) == [("Topic:T", {"Pub", "Sub", "Get"})]
    assert _needs(RequestCode.UPDATE_CONSUMER_OFFSET, {"topic": "T", "consumerGroup": "g"}) == [
        ("Topic:T", {"Sub", "Update"}),
        ("Group:g", {"Sub", "Update"}),
    ]


def test_admin_codes_need_their_annotated_actions() -> None:
    assert _needs(RequestCode.UPDATE_AND_CREATE_TOPIC, {"topic": "T"}) == [("Topic:T", {"Create"})]
    assert _needs(RequestCode.DELETE_TOPIC_IN_BROKER, {"topic": "T"}) == [("Topic:T", {"Delete"})]
    assert _needs(RequestCode.DELETE_SUBSCRIPTIONGROUP, {"groupName": "g"}) == [("Group:g", {"Delete"})]
    assert _needs(RequestCode.INVOKE_BROKER_TO_RESET_OFFSET, {"group": "g", "topic": "T"}) == [
        ("Group:g", {"Update"}),
        ("Topic:T", {"Update"}),
    ]
    assert _needs(RequestCode.AUTH_CREATE_USER, {"username": "u"}) == [("Cluster:C1", {"Update"})]
    assert _needs(RequestCode.AUTH_LIST_ACL, {"AccessKey": "u"}) == [("Cluster:C1", {"Get"})]
    assert _needs(RequestCode.GET_CONSUME_STATS, {"consumerGroup": "g", "topicList": "A,B"}) == [
        ("Group:g", {"Get"}),
        ("Topic:A", {"Get"}),
        ("Topic:B", {"Get"}),
    ]
    # Java registers no annotated header for these: authentication is all they need.
    assert _needs(RequestCode.UPDATE_BROKER_CONFIG, {"AccessKey": "u"}) == []
    assert _needs(RequestCode.LITE_PULL_MESSAGE, {"topic": "T", "consumerGroup": "g"}) == []
    assert _needs(RequestCode.SEND_MESSAGE_V2, {}) == []


def test_heartbeat_needs_each_consumer_group_and_its_topics() -> None:
    body = HeartbeatData(
        client_id="c",
        consumer_data_set=[
            ConsumerData(
                group_name="g",
                subscription_data_set=[SubscriptionData(topic="T"), SubscriptionData(topic="%RETRY%g")],
            )
        ],
    ).encode()
    assert _needs(RequestCode.HEART_BEAT, {"AccessKey": "u"}, body) == [
        ("Group:g", {"Sub"}),
        ("Topic:T", {"Sub"}),
    ]


def _entry(key: str, decision: Decision) -> PolicyEntry:
    resource = Resource.parse(key)
    assert resource is not None
    return PolicyEntry(resource, [Action.SUB], [], decision)


def test_resource_keys_parse_as_java() -> None:
    assert Resource.parse("*") == Resource(ResourceType.ANY, None, ResourcePattern.ANY)
    assert Resource.parse("topic:*") == Resource(ResourceType.TOPIC, None, ResourcePattern.ANY)
    assert Resource.parse("Topic:ab*") == Resource(ResourceType.TOPIC, "ab", ResourcePattern.PREFIXED)
    assert Resource.parse("Group:g") == Resource(ResourceType.GROUP, "g", ResourcePattern.LITERAL)
    assert Resource.parse("Queue:x") is None
    assert Resource.parse(" ") is None


def test_equally_specific_entries_let_allow_win_as_java_sorts_them() -> None:
    # comparePolicyEntries sorts DENY after ALLOW, so of two entries for the same resource
    # the ALLOW one is first, whichever order they were stored in.
    allow, deny = _entry("Topic:T", Decision.ALLOW), _entry("Topic:T", Decision.DENY)
    assert first_entry([deny, allow]) is allow
    assert first_entry([allow, deny]) is allow


def test_typed_entries_come_before_any_resource_and_shorter_prefixes_first() -> None:
    anything, literal = _entry("*", Decision.DENY), _entry("Topic:T", Decision.ALLOW)
    assert first_entry([anything, literal]) is literal
    assert first_entry([literal, anything]) is literal
    short, long = _entry("Topic:a*", Decision.ALLOW), _entry("Topic:abc*", Decision.DENY)
    assert first_entry([long, short]) is short


def test_source_ip_drops_the_port() -> None:
    assert source_ip("127.0.0.1:54321") == "127.0.0.1"
    assert source_ip("[::1]:9") == "::1"


def test_of_a_literal_and_a_prefix_entry_the_later_one_comes_first() -> None:
    # The comparator answers "first argument first" for entries of different patterns, so
    # TimSort's run detection reverses the pair: the entry stored later is the one that decides.
    literal, prefix = _entry("Topic:AuthTopic", Decision.DENY), _entry("Topic:Auth*", Decision.ALLOW)
    assert first_entry([literal, prefix]) is prefix
    assert first_entry([prefix, literal]) is literal
