"""An install without a C compiler replays a log to the same totals as one with the plain loop in C.

``exporter.engine._plain`` is optional: without it replay (and the sidecar) count every line in the
Python loop. A child interpreter with the module hidden replays the same log (mostly plain lines,
with every kind of exception to them, duplicates and a ledger small enough to evict) as one with it,
and the JSON totals must be equal, byte for byte.
"""

from __future__ import annotations

import json
import random
import subprocess
import sys
from pathlib import Path

from exporter.engine import plainpath
from tests.engine.test_plainpath import _random_log

REPO = Path(__file__).resolve().parents[2]
PRICES = REPO / "tests" / "fixtures" / "engine" / "prices_two_versions.yaml"

CHILD = """
import sys
if sys.argv[1] == "hide":
    class Hide:
        def find_spec(self, name, path=None, target=None):
            if name == "exporter.engine._plain":
                raise ImportError("hidden: " + name)
            return None
    sys.meta_path.insert(0, Hide())
from exporter.engine import plainpath
print(plainpath.LOOP)
from exporter.cli.main import main
sys.exit(main(sys.argv[2:]))
"""


def _replay(mode: str, log: Path) -> tuple[str, dict[str, object]]:
    done = subprocess.run([sys.executable, "-c", CHILD, mode, "replay", "--json", "--jobs", "1", "--prices",
                           str(PRICES), str(log)], capture_output=True, text=True, cwd=REPO, check=True, timeout=300)
    loop, _, body = done.stdout.partition("\n")
    return loop, json.loads(body)


def test_the_python_only_install_replays_as_the_c_loop_does(tmp_path: Path) -> None:
    assert plainpath.LOOP == "c"  # built here: both are compared
    rng = random.Random(5)
    log = tmp_path / "gateway.jsonl"
    lines = _random_log(rng, 6000)
    lines[100:100] = lines[:50]  # re-sent records: duplicates
    log.write_bytes(b"\n".join(lines) + b"\n")
    (with_c, c_totals), (without, python_totals) = _replay("keep", log), _replay("hide", log)
    assert (with_c, without) == ("c", "python")
    assert c_totals == python_totals
    assert c_totals["months"]  # the log counted something
