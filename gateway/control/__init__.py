"""The control endpoint of a gateway run as a test tool: a tiny HTTP/JSON server
(:mod:`gateway.control.server`) over a Trio-free API (:mod:`gateway.control.api`) that adds and
removes fault rules (:mod:`gateway.transport.faults`), reads the stored messages of a topic
(:mod:`gateway.control.messages`) and what a group consumed (:mod:`gateway.control.consumption`),
and empties the gateway (``POST /reset``); :mod:`gateway.control.client` speaks it from another process
(the container fixture, ``rmq-gateway fault``). docs/testing-with-gateway.md has the contract."""
