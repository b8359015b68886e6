"""Reports over counted records: what the counters do not show at a glance.

``summary`` is the month report's one model (built from the aggregates and replay's month
totals) and ``text``, ``markdown``, ``json_report`` and ``html`` its writers; ``live`` makes
the sidecar's landing page from it, ``from_logs`` the ``report`` command's. ``calibration``:
billed-token factors measured from records that carry both counts and provider usage.
"""
