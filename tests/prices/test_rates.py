"""PricedModel's hash is worked out once: it must still behave as the value's hash."""

from __future__ import annotations

import pickle
import subprocess
import sys
from dataclasses import replace

from exporter.prices.rates import PricedModel


def _rates(**overrides: object) -> PricedModel:
    fields: dict[str, object] = {"version": "v1", "model": "m", "family": "f", "input": 3.0, "output": 15.0,
                                 "cache_read": 0.3, "cache_write_5m": 3.75, "cache_write_1h": 6.0}
    fields.update(overrides)
    return PricedModel(**fields)  # type: ignore[arg-type]


def test_equal_rates_are_one_key_and_differing_ones_two() -> None:
    a, b = _rates(), _rates()
    assert a is not b and a == b and hash(a) == hash(b)
    assert len({a, b, _rates(input=3.5), _rates(tier="above_200000")}) == 3


def test_replace_works_the_hash_out_again() -> None:
    base = _rates()
    cliff = replace(base, cliff_saved=(6.0, 22.5, 0.6, 7.5, 12.0))
    assert cliff != base
    assert hash(cliff) == hash(_rates(cliff_saved=(6.0, 22.5, 0.6, 7.5, 12.0)))
    assert {base: 1}.get(replace(cliff, cliff_saved=())) == 1


def test_a_pickled_rate_set_gets_its_hash_from_its_fields_not_the_pickle() -> None:
    stale = _rates()
    object.__setattr__(stale, "_hash", 12345)  # as if hashed under another process's string-hash seed
    loaded = pickle.loads(pickle.dumps(stale))
    assert loaded == stale and hash(loaded) == hash(_rates()) != 12345


def test_a_rate_set_pickled_under_another_hash_seed_finds_its_key() -> None:
    code = ("import pickle, sys; from exporter.prices.rates import PricedModel as P; "
            "sys.stdout.buffer.write(pickle.dumps(P('v1', 'm', 'f', 3.0, 15.0, 0.3, 3.75, 6.0)))")
    other = subprocess.run([sys.executable, "-c", code], capture_output=True, check=True,
                           env={"PYTHONHASHSEED": "7", "PATH": ""}, cwd=None).stdout
    assert {_rates(): "found"}.get(pickle.loads(other)) == "found"
