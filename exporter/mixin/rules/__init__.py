"""Recording rule groups, one module each, in evaluation order.

Naming: ``level:metric:operations`` (the Prometheus convention). One sidecar
runs per gateway replica; the rules fold the replicas together with
``sum without (instance, pod, job)``, so every other label of the catalog
(month, model, tenant, the provenance labels, and cluster/namespace when the
targets carry them) is kept. ``by`` aggregations keep the cluster label.
Counters are month-to-date and carry the record's own ``month``: summing a
month over the replicas gives that month's total, with no increase() needed.
"""

from __future__ import annotations

from collections.abc import Callable

from exporter.mixin.config import Values
from exporter.mixin.model import Group
from exporter.mixin.rules import compression, kinds, month_to_date, provenance, rates

GROUPS: tuple[Callable[[Values], Group], ...] = (month_to_date.group, rates.group, compression.group,
                                                 kinds.group, provenance.group)
