"""The NameServer: brokers register here, clients ask it for routes (``org.apache.rocketmq.namesrv``).

* :mod:`namesrv.route_info`: the route tables (``RouteInfoManager``), plain state.
* :mod:`namesrv.kv_config`: the KV configuration (``KVConfigManager``).
* :mod:`namesrv.processors`: the request handlers (``DefaultRequestProcessor``,
  ``ClientRequestProcessor``); a new request code is registered there.
* :mod:`namesrv.config`: ``NamesrvConfig``.
* :mod:`namesrv.app`: the Trio wiring (server, broker expiry, KV persistence), the only module
  here that imports Trio.

It sits above the transport (:mod:`gateway.transport`) and below the composition
(:mod:`gateway.launcher`); it never imports :mod:`broker`.
"""
