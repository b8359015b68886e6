"""Live capture: real instrumentation packages and client libraries against the fake provider."""
