"""An imported genai-prices table prices requests exactly as ``genai_prices.calc_price`` does.

Seeded generator, >= 10,000 requests over every model of the providers below (each imported
on its own, and all of them in one table), with timestamps either side of every dated change,
prompts either side of every tier threshold, every service tier the model lists (plus one it
does not), and times inside and outside every time-of-day window. Each request names its model
as a gateway would (``tests.support.genai_names``: dated, revised, other case): the table
resolves that name by its match rules, ``calc_price`` by genai-prices' own. Both sides are exact
(Decimal and Fraction of the written decimals): the test asserts equality. The full import
(every provider, all history) loads and ``prices validate`` accepts it.
"""

from __future__ import annotations

import random
from collections import Counter
from datetime import UTC, date, datetime, timedelta
from decimal import Decimal
from fractions import Fraction

import genai_prices
import pytest
from genai_prices import data_snapshot

from exporter.cli.main import main
from exporter.prices.importers.genai_prices import convert, genai_resolver
from exporter.prices.table import parse_price_table
from exporter.prices.tiers import UsageTiers, bill
from tests.support.genai_names import seeded_names

PROVIDERS = ("openai", "anthropic", "google", "deepseek", "aws", "azure", "mistral", "x-ai")
SEED = 14
SINCE = date(2026, 12, 1)


def _context(service_tier: str | None) -> dict[str, str] | None:
    if service_tier is None:
        return None
    return {"processing": "batch"} if service_tier == "batch" else {"service_tier": service_tier}


def _requests(rng: random.Random, table, name: str, n: int):
    starts = [v.effective_from for v in table.versions]
    version = table.newest
    tiers = version.tiers.get(name)
    thresholds = sorted({t.above for rs in ([tiers.default] + [r for _, r in tiers.service_tiers]) if tiers
                         for t in rs.tiers}) if tiers else []
    names = ["batch", "flex", "priority", "fast", "scale"]
    windows = [(w.start, w.end) for w in tiers.windows] if tiers else []
    for _ in range(n * 8 if windows else n):  # few models have windows: sample them more
        start = rng.choice(starts)
        ts = max(starts[0], start + rng.choice([-1.0, 0.0, 1.0, rng.uniform(0, 86400 * 40)]))
        if windows and rng.random() < 0.6:
            lo, hi = rng.choice(windows)
            minute = rng.choice([lo, (hi - 1) % 1440, hi % 1440, (lo - 1) % 1440])
            day = datetime.fromtimestamp(ts, UTC).replace(hour=0, minute=0, second=0, microsecond=0)
            ts = max(starts[0], (day + timedelta(minutes=minute, seconds=rng.randrange(60))).timestamp())
        if thresholds and rng.random() < 0.6:
            prompt = rng.choice(thresholds) + rng.choice([-1, 0, 1, 5000])
        else:
            prompt = rng.randrange(0, 300_000)
        prompt = max(prompt, 0)
        cache_read = rng.randrange(0, prompt + 1) if rng.random() < 0.5 else 0
        w5 = rng.randrange(0, prompt - cache_read + 1) if rng.random() < 0.3 else 0
        w1h = rng.randrange(0, prompt - cache_read - w5 + 1) if rng.random() < 0.3 else 0
        usage = UsageTiers(prompt - cache_read - w5 - w1h, cache_read, w5, w1h, rng.randrange(0, 40_000))
        yield usage, ts, rng.choice([None, None, *names])


class Tally:
    """Requests compared, the features they reached, and every mismatch."""

    def __init__(self) -> None:
        self.compared = 0
        self.seen: Counter[str] = Counter()
        self.mismatches: list[str] = []
        self.fees = 0  # requests whose only difference is genai-prices' per-request fee (not represented)
        self.by_rule = 0  # requests named otherwise than a table model (resolved by match rules)


def _compare(table, provider, per_model: int, rng: random.Random, resolve, tally: Tally) -> None:
    for model in provider.models:
        name = f"{provider.id}/{model.id}"
        if name not in table.newest.models:
            continue  # skipped by the importer, counted in its summary
        # names a gateway sends that genai-prices resolves to this model (its own id may not be one)
        drawn = dict.fromkeys(seeded_names(rng, model.match, model.id, 12))
        names = [n for n in drawn if resolve(n, provider.id) == name]
        for usage, ts, tier in _requests(rng, table, name, per_model):
            sent = rng.choice(names) if names and rng.random() < 0.9 else None
            priced = table.lookup(sent or name, ts, provider.id, service_tier=tier, prompt_tokens=usage.prompt)
            assert not isinstance(priced, str) and priced.model == name, (sent, name, ts, priced)
            tally.by_rule += sent is not None
            ours = bill(usage, priced)
            when = datetime.fromtimestamp(ts, UTC)
            request = genai_prices.Usage(input_tokens=usage.prompt, cache_read_tokens=usage.cache_read,
                                         cache_write_tokens=usage.cache_write_5m + usage.cache_write_1h,
                                         cache_write_1h_tokens=usage.cache_write_1h, output_tokens=usage.output)
            if sent is not None:  # calc_price itself, on the name sent; else the model's own calc_price
                theirs = genai_prices.calc_price(request, sent, provider_id=provider.id,
                                                 genai_request_timestamp=when,
                                                 price_context=_context(tier)).total_price
            else:
                theirs = model.calc_price(request, provider, genai_request_timestamp=when,
                                          price_context=_context(tier)).total_price
            tally.compared += 1
            # Perplexity's requests_kcount: a fee per request, which a table of token rates cannot hold
            fee = getattr(model.get_prices(when, _context(tier)), "requests_kcount", None)
            if fee:
                theirs -= fee / 1000
                tally.fees += 1
            provenance = (("tier", priced.tier), ("window", priced.window), ("service_tier", priced.service_tier))
            tally.seen.update(kind for kind, value in provenance if value not in ("", "unknown"))
            tally.seen.update(["version"] if table.version_at(ts) is not table.versions[0] else [])
            if ours != Fraction(Decimal(theirs)):
                tally.mismatches.append(f"{name} at {when.isoformat()} tier={tier} {usage}: ours {float(ours)!r} "
                                        f"calc_price {theirs}")


def test_imported_table_prices_every_request_as_calc_price() -> None:
    """Whole history, eight providers, each imported on its own."""
    snapshot = data_snapshot.get_snapshot()
    resolve = genai_resolver(snapshot)
    rng = random.Random(SEED)
    tally = Tally()
    for provider_id in PROVIDERS:
        provider = next(p for p in snapshot.providers if p.id == provider_id)
        table = parse_price_table(convert([provider], resolve, source="genai-prices test").text, f"<{provider_id}>")
        _compare(table, provider, 30, rng, resolve, tally)
    assert tally.compared >= 10_000 and tally.by_rule >= 10_000, (tally.compared, tally.by_rule)
    # the generator reached every feature: prompt tiers, service tiers, windows, later versions
    assert min(tally.seen[k] for k in ("tier", "window", "service_tier", "version")) >= 100, tally.seen
    assert tally.fees == 0  # none of these providers charges per request
    print(f"compared {tally.compared} requests ({tally.by_rule} by generated names): {dict(tally.seen)}")
    assert not tally.mismatches, (f"{len(tally.mismatches)} of {tally.compared} differ:\n"
                                  + "\n".join(tally.mismatches[:20]))


def test_one_table_of_every_provider_prices_every_model_as_calc_price() -> None:
    """Every provider and model in one table (``since``: the newest versions), >= 10,000 requests."""
    snapshot = data_snapshot.get_snapshot()
    resolve = genai_resolver(snapshot)
    table = parse_price_table(convert(snapshot.providers, resolve, source="genai-prices test",
                                      since=SINCE).text, "<all>")
    assert len(table.newest.models) >= 2000
    rng = random.Random(SEED + 1)
    tally = Tally()
    for provider in snapshot.providers:
        _compare(table, provider, 5, rng, resolve, tally)
    assert tally.compared >= 10_000 and tally.by_rule >= 10_000, (tally.compared, tally.by_rule)
    assert min(tally.seen[k] for k in ("tier", "service_tier")) >= 100 and tally.seen["window"] >= 30, tally.seen
    print(f"compared {tally.compared} requests ({tally.by_rule} by generated names): {dict(tally.seen)}; "
          f"{tally.fees} equal once the per-request fee is taken off calc_price's total")
    assert 0 < tally.fees < 200
    assert not tally.mismatches, (f"{len(tally.mismatches)} of {tally.compared} differ:\n"
                                  + "\n".join(tally.mismatches[:20]))


@pytest.mark.slow  # two loads of a 22 MB table: a minute or more; outside the fast loop
def test_the_full_import_loads_and_validates(tmp_path, capsys) -> None:
    """Every provider, every model, all history: written through the loader, and ``prices validate`` accepts it."""
    out = tmp_path / "genai.yaml"
    assert main(["prices", "import-genai-prices", "--out", str(out)]) == 0
    err = capsys.readouterr().err
    assert "resolve otherwise" not in err  # the importer's own check of its rules against genai-prices'
    snapshot = data_snapshot.get_snapshot()
    assert f"converted {sum(len(p.models) for p in snapshot.providers) - 26} models in " in err
    assert main(["prices", "validate", str(out)]) == 0
    assert out.stat().st_size > 20_000_000
