"""The remoting request signature of ACL clients.

Mirrors ``org.apache.rocketmq.acl.common.AclSigner`` / ``AclUtils.combineRequestContent`` (what
``AclClientRPCHook`` signs) and ``DefaultAuthenticationContextBuilder.build(ctx, command)`` (what
the broker checks): the ext fields sorted by key, their values concatenated without separators
(``Signature`` left out, and ``_UNIQUE_KEY_QUERY`` too for clients at or below V4_9_3), UTF-8,
then the body; the signature is the standard Base64 of HmacSHA1 keyed with the user's secret.

The check compares in constant time (:func:`hmac.compare_digest`). Its cost is bounded by the
frame: one HMAC over at most the frame's bytes, whatever the content.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import json
from collections.abc import Callable, Mapping

from codec.command import RemotingCommand
from codec.versions import VERSION_NAMES

ACCESS_KEY = "AccessKey"  # SessionCredentials.ACCESS_KEY
SECRET_KEY = "SecretKey"  # SessionCredentials.SECRET_KEY
SIGNATURE = "Signature"  # SessionCredentials.SIGNATURE
SECURITY_TOKEN = "SecurityToken"  # SessionCredentials.SECURITY_TOKEN
UNIQUE_MSG_QUERY_FLAG = "_UNIQUE_KEY_QUERY"  # MixAll.UNIQUE_MSG_QUERY_FLAG
V4_9_3 = VERSION_NAMES.index("V4_9_3")  # at or below it the unique-key flag is not signed


def fields_content(ext_fields: Mapping[str, str], version: int) -> bytes:
    """The ext-field part of what a client signed: values in key order, UTF-8."""
    skip_unique = version <= V4_9_3
    values = [
        value
        for key, value in sorted(ext_fields.items())
        if key != SIGNATURE and not (skip_unique and key == UNIQUE_MSG_QUERY_FLAG) and value is not None
    ]
    return "".join(values).encode("utf-8")


def request_content(ext_fields: Mapping[str, str], body: bytes | None, version: int) -> bytes:
    """The bytes a client signed for this request (``combineRequestContent``)."""
    content = fields_content(ext_fields, version)
    return content + body if body else content


def sign(content: bytes, secret: str, body: bytes | None = None) -> str:
    """``AclSigner.calSignature``: Base64 of HmacSHA1(secret, content + body); the body is fed
    to the HMAC as it is, never copied."""
    mac = hmac.new(secret.encode("utf-8"), content, hashlib.sha1)
    if body:
        mac.update(body)
    return base64.b64encode(mac.digest()).decode("ascii")


def signature_matches(content: bytes, secret: str, signature: str | None, body: bytes | None = None) -> bool:
    """Whether ``signature`` signs ``content`` + ``body`` under ``secret``, in constant time."""
    if signature is None:
        return False
    expected = sign(content, secret, body).encode("utf-8")
    return hmac.compare_digest(expected, signature.encode("utf-8", errors="surrogatepass"))


def sign_request(ext_fields: dict[str, str], body: bytes | None, access_key: str, secret_key: str) -> None:
    """What ``AclClientRPCHook.doBeforeRequest`` does to a request's ext fields (tests, tools)."""
    ext_fields[ACCESS_KEY] = access_key
    ext_fields.pop(SIGNATURE, None)
    # A client signs with its own version's rule; the newest clients sign every field.
    ext_fields[SIGNATURE] = sign(request_content(ext_fields, body, V4_9_3 + 1), secret_key)


Signer = Callable[[RemotingCommand], None]


def inner_client_signer(credentials: str) -> Signer | None:
    """What ``BrokerOuterAPI.newAclRPCHook`` makes of ``innerClientAuthenticationCredentials``
    (``{"accessKey":…,"secretKey":…}``): an ``AclClientRPCHook`` signing every request the broker
    sends to the NameServer, or ``None`` when the key, its access key or its secret key is blank.
    Raises ``ValueError`` for text that is not a JSON object (Java's broker then fails to start)."""
    if not credentials.strip():
        return None
    doc = json.loads(credentials)
    if not isinstance(doc, dict):
        raise ValueError("innerClientAuthenticationCredentials is not a JSON object")
    access_key, secret_key = doc.get("accessKey"), doc.get("secretKey")
    if not isinstance(access_key, str) or not access_key.strip():
        return None
    if not isinstance(secret_key, str) or not secret_key.strip():
        return None

    def sign_command(request: RemotingCommand) -> None:
        fields = dict(request.ext_fields or {})
        sign_request(fields, request.body, access_key, secret_key)
        request.ext_fields = fields

    return sign_command
