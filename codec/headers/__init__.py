"""Typed custom headers, one module per family of requests; see :mod:`codec.headers.base`."""

from codec.headers.base import CustomHeader, EmptyHeader, wire

__all__ = ["CustomHeader", "EmptyHeader", "wire"]
