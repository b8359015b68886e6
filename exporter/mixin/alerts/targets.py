"""Group ``llm-savings.alerts.targets``: is Prometheus scraping the sidecars at all."""

from __future__ import annotations

from exporter.mixin.config import Values
from exporter.mixin.model import Alert, Group, fill


def group(cfg: Values) -> Group:
    return Group("llm-savings.alerts.targets", (
        Alert(
            "LlmSavingsExporterDown",
            fill("up{%(jobSelector)s} == 0", cfg),
            cfg["exporterDownFor"], "warning",
            "llm-savings-exporter {{ $labels.instance }} is down",
            fill("Prometheus has failed to scrape {{ $labels.instance }} (job {{ $labels.job }}) for "
                 "%(exporterDownFor)s. Savings and spend of the gateway it follows are missing from every sum "
                 "until it is back; the counters resume from the checkpoint.", cfg),
        ),
        Alert(
            "LlmSavingsExporterAbsent",
            fill("absent(up{%(jobSelector)s})", cfg),
            cfg["exporterAbsentFor"], "warning",
            "No llm-savings-exporter target is being scraped",
            fill("Prometheus has had no scrape target matching the mixin's job selector for "
                 "%(exporterAbsentFor)s: the sidecar is not deployed, service discovery lost it, or the job "
                 "is named otherwise than the selector expects. Dashboards and the other alerts are blind.", cfg),
        ),
    ))
