"""Reports over counted records: what the counters do not show at a glance (``calibration``: billed-token
factors measured from records that carry both counts and provider usage)."""
