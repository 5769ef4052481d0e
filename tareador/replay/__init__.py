"""Simulating traces on a configurable machine (the bundled replay engine)."""
