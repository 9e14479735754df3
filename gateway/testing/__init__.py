"""Helpers for using the gateway as a test broker: protocol probe, testcontainers module, pytest plugin."""
