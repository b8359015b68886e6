"""Self-metrics come only from the catalog: every sample names a catalog entry, and a stranger is refused."""

from __future__ import annotations

from pathlib import Path

import pytest

from exporter import catalog
from exporter.engine.aggregate import Aggregates
from exporter.exposition.render import Exposition, HealthSample, UnknownMetric, check_health_samples
from exporter.sidecar.sidecar import Sidecar
from tests.support.sidecar import WALL, drain, make_config, record_line

# Published only once something happened (a checkpoint, a record from the source, an export request).
AFTER_AN_EVENT = {catalog.CHECKPOINT_AGE_SECONDS.name, catalog.SOURCE_LAST_EVENT_TIMESTAMP_SECONDS.name}
PER_STATUS_CODE = {catalog.OTLP_REQUESTS_TOTAL.name}  # a series per status code seen; none before a request


def _sidecar(tmp_path: Path) -> Sidecar:
    (tmp_path / "logs").mkdir()
    (tmp_path / "logs" / "a.jsonl").write_bytes(b"".join(record_line(i) for i in range(6)))
    config = make_config(tmp_path, otlp={"enabled": True, "listen": "127.0.0.1:0"})
    return Sidecar(config, wall_clock=lambda: WALL)


def test_every_health_metric_of_the_catalog_is_published_by_a_running_sidecar(tmp_path: Path) -> None:
    sidecar = _sidecar(tmp_path)
    try:
        drain(sidecar)
        assert sidecar.checkpoint()
        samples = sidecar.health_samples()
    finally:
        sidecar.close()
    check_health_samples(samples)  # every sample is the catalog's own entry, with its labels
    published = {sample.metric.name for sample in samples}
    health = {spec.name for spec in catalog.CATALOG if spec.group == "health"}
    health |= {catalog.PRICE_TABLE_INFO.name, catalog.PRICE_TABLE_NEWEST_EFFECTIVE_TIMESTAMP_SECONDS.name}
    assert health - PER_STATUS_CODE <= published, f"never published: {sorted(health - published)}"
    by_name = {(s.metric.name, s.labels): s.value for s in samples}
    assert by_name[(catalog.SOURCE_LINES_READ_TOTAL.name, ("gw",))] == 6
    assert by_name[(catalog.SOURCE_UP.name, ("gw",))] == 1
    assert by_name[(catalog.SOURCE_UP.name, ("otlp",))] == 1
    assert by_name[(catalog.CHECKPOINT_WRITES_TOTAL.name, ())] >= 1
    assert by_name[(catalog.DEDUPE_LEDGER_IDS.name, ())] == 6
    assert published >= AFTER_AN_EVENT


def test_a_sample_the_catalog_lacks_is_an_error_not_a_silent_skip() -> None:
    stranger = catalog.MetricSpec("llm_savings_checkpoint_writes", "counter", "", "misspelt", (), "health")
    exposition = Exposition(lambda month: 0.0)

    with pytest.raises(UnknownMetric, match="llm_savings_checkpoint_writes"):
        check_health_samples([HealthSample(stranger, (), 1)])
    with pytest.raises(UnknownMetric, match="llm_savings_checkpoint_writes"):
        exposition.render(Aggregates(), [HealthSample(stranger, (), 1)])
    with pytest.raises(UnknownMetric, match="labels"):
        check_health_samples([HealthSample(catalog.SOURCE_UP, (), 1)])


def test_start_refuses_a_sidecar_whose_self_metrics_are_not_in_the_catalog(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    sidecar = _sidecar(tmp_path)
    stranger = catalog.MetricSpec("llm_savings_not_declared", "gauge", "", "x", (), "health")
    real = sidecar.health_samples
    monkeypatch.setattr(sidecar, "health_samples", lambda: [*real(), HealthSample(stranger, (), 1)])
    try:
        with pytest.raises(UnknownMetric, match="llm_savings_not_declared"):
            sidecar.start()
    finally:
        sidecar.close()
