"""Test support code that runs outside the exporter: fake upstream providers."""
