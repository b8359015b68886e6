"""Price table hot reload: a valid table applies from then on, a bad one is refused and counted."""

from __future__ import annotations

import json
from pathlib import Path

from prometheus_client.parser import text_string_to_metric_families

from exporter.sidecar.sidecar import Sidecar
from tests.support.prices import one_version
from tests.support.sidecar import NOV, WALL, drain, make_config


def _line(i: int) -> bytes:
    obj = {"ts": NOV + 3600 + i, "request_id": f"r{i}", "model": "gpt-4o",
           "usage": {"prompt_tokens": 1_000_000, "completion_tokens": 0}}
    return json.dumps(obj).encode() + b"\n"


def _spend_by_version(sidecar: Sidecar) -> dict[str, float]:
    body, _ = sidecar.metrics(None)
    out: dict[str, float] = {}
    for family in text_string_to_metric_families(body.decode()):
        for sample in family.samples:
            if sample.name == "llm_savings_spend_usd_total":
                version = sample.labels["price_version"]
                out[version] = out.get(version, 0.0) + sample.value
    return out


def _reloads(sidecar: Sidecar) -> dict[str, float]:
    body, _ = sidecar.metrics(None)
    return {s.labels["result"]: s.value for f in text_string_to_metric_families(body.decode())
            for s in f.samples if s.name == "llm_savings_price_table_reloads_total"}


def test_reload_applies_forward_and_a_bad_table_keeps_the_old(tmp_path: Path) -> None:
    prices = tmp_path / "prices.yaml"
    prices.write_text(one_version("v1", rate=2.0))
    logs = tmp_path / "logs"
    logs.mkdir()
    log = logs / "a.jsonl"
    log.write_bytes(_line(1))
    sidecar = Sidecar(make_config(tmp_path, prices=str(prices)), wall_clock=lambda: WALL)
    try:
        drain(sidecar)
        assert _spend_by_version(sidecar) == {"v1": 2.0}

        prices.write_text(one_version("v2", rate=3.0))
        sidecar.check_prices(force=True)
        with log.open("ab") as f:
            f.write(_line(2))
        drain(sidecar)
        # what was counted keeps its price; the new record is priced by the new table
        assert _spend_by_version(sidecar) == {"v1": 2.0, "v2": 3.0}
        assert _reloads(sidecar) == {"success": 1, "error": 0}

        prices.write_text("schema: llm-savings-prices/v1\nversions: []\n")
        sidecar.check_prices(force=True)
        assert _reloads(sidecar) == {"success": 1, "error": 1}
        assert sidecar.health.last_price_error is not None and "versions" in sidecar.health.last_price_error
        with log.open("ab") as f:
            f.write(_line(3))
        drain(sidecar)
        assert _spend_by_version(sidecar) == {"v1": 2.0, "v2": 6.0}  # the old (v2) table stays in force
        assert sidecar.readiness()[0]
    finally:
        sidecar.close()
