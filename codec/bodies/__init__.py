"""JSON request and response bodies; see :mod:`codec.bodies.base` for the conversion rules."""
