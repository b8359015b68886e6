"""Hypothesis settings of the fuzz targets: a short default, a long profile for ``scripts/fuzz.sh``.

Chosen by ``HYPOTHESIS_PROFILE`` (``fuzz-default`` when unset or naming a
profile that is not one of these), and applied to the fuzz tests only, so the
rest of the suite keeps its own settings. ``deadline=1000``: no single input
may take a second.
"""

from __future__ import annotations

import os

from hypothesis import HealthCheck, Phase, settings

_COMMON = {"deadline": 1000, "suppress_health_check": [HealthCheck.too_slow, HealthCheck.data_too_large,
                                                         HealthCheck.filter_too_much]}
settings.register_profile("fuzz-default", max_examples=80, **_COMMON)  # type: ignore[arg-type]
settings.register_profile("fuzz-long", max_examples=20_000, **_COMMON)  # type: ignore[arg-type]
# replay the example database only (what the long run found), no generation
settings.register_profile("fuzz-replay", max_examples=1, phases=[Phase.explicit, Phase.reuse],
                          **_COMMON)  # type: ignore[arg-type]

PROFILES = ("fuzz-default", "fuzz-long", "fuzz-replay")


def fuzz_settings() -> settings:
    name = os.environ.get("HYPOTHESIS_PROFILE", "fuzz-default")
    return settings.get_profile(name if name in PROFILES else "fuzz-default")
