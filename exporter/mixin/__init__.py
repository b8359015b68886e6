"""The monitoring mixin: recording rules, alerts and Grafana dashboards from one config.

Contract:

* ``config.PARAMS`` declares every parameter once (job selector, runbook base
  URL, cluster/namespace label names, dashboard UIDs and tag, alert
  thresholds and ``for`` durations). Nothing else is configurable, and a
  parameter reaches the output only as the text it was given.
* One module per group: ``rules/`` (recording rule groups), ``alerts/``
  (alert groups), ``dashboards/`` (one dashboard each).
* ``render.render(overrides)`` returns every generated file (``rules/``,
  ``dashboards/``, ``mixin/`` with ``mixin.libsonnet``, the Helm chart's
  tokenised copies); ``scripts/gen_mixin.py`` writes them or checks them.
* Metric names are those of ``exporter/catalog.py``; the tests check every
  query against it.
"""
