"""The embedded demo: a simulated gateway log (``simulator``: turns and sessions;
``population``: models and tenants; ``usage_shapes``: providers' usage blocks;
``writer``: the rotating log) tailed by a real sidecar with the bundled prices (``demo``)."""
