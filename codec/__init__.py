"""The wire and file formats of RocketMQ: bytes in, typed values out. The bottom floor.

Nothing here does I/O, imports Trio or knows another package of this project
(``tests/test_layers.py``); every other package may import it.

* The remoting protocol: :mod:`codec.frame` (length-prefixed frames), :mod:`codec.command` (the one
  ``RemotingCommand`` value type), :mod:`codec.json_header` / :mod:`codec.binary_header` (the two
  header serializers), :mod:`codec.codes` (request, response and language codes named as the Java
  constants).
* Typed request headers: :mod:`codec.headers` (one module per family of requests; a new request's
  header goes there). JSON bodies: :mod:`codec.bodies` (likewise).
* Messages: :mod:`codec.message` (the stored record, also PULL response bodies), :mod:`codec.batch`,
  :mod:`codec.properties`, :mod:`codec.message_id`, :mod:`codec.recall_handle`,
  :mod:`codec.extra_info` (POP receipt handles).
* Java compatibility: :mod:`codec.hashing` (``String.hashCode``, HashMap order, body CRC),
  :mod:`codec.fastjson`, :mod:`codec.java_properties`, :mod:`codec.config_fields`,
  :mod:`codec.versions`.
* :mod:`codec.errors`: the project's error hierarchy; an error carries its wire response code.

Per-message code uses ``struct`` over ``memoryview`` and is compiled with mypyc
(:mod:`gateway.native`); ``construct`` describes cold layouts and serves as a test oracle.
"""
