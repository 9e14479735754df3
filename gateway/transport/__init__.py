"""The remoting transport: Trio servers and connections, the dispatcher, outbound calls.

Everything ``broker/`` and ``namesrv/`` may import from ``gateway/`` lives here (the layer test
enforces it); the composition of the program, its CLI and the test fixtures, which sit above
those packages, are the rest of ``gateway/``.
"""
