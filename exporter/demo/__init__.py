"""The embedded demo: a simulated gateway log (``simulator``) tailed by a real
sidecar with the bundled prices (``demo``)."""
