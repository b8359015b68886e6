"""scripts/sync_chart.py: the chart's rules and dashboards are the repository's, byte for byte."""

from __future__ import annotations

import importlib.util
import subprocess
import sys
from pathlib import Path
from types import ModuleType

import pytest

REPO = Path(__file__).resolve().parents[2]
SCRIPT = REPO / "scripts" / "sync_chart.py"


def load_script() -> ModuleType:
    spec = importlib.util.spec_from_file_location("sync_chart", SCRIPT)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules["sync_chart"] = module
    spec.loader.exec_module(module)
    return module


sync_chart = load_script()


def test_chart_copies_equal_the_repository_sources() -> None:
    result = subprocess.run(
        [sys.executable, str(SCRIPT), "--check"], capture_output=True, text=True, check=False
    )
    assert result.returncode == 0, result.stdout + result.stderr
    for src_rel, pattern, dst_rel in sync_chart.MIRRORS:
        sources = sorted((REPO / src_rel).glob(pattern))
        copies = sorted((REPO / dst_rel).glob(pattern))
        assert [p.name for p in sources] == [p.name for p in copies]
        for src, dst in zip(sources, copies, strict=True):
            assert src.read_bytes() == dst.read_bytes(), dst


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    (tmp_path / "rules").mkdir()
    (tmp_path / "dashboards").mkdir()
    (tmp_path / "rules" / "a.yaml").write_bytes(b"groups: []\n")
    (tmp_path / "rules" / "tests").mkdir()
    (tmp_path / "rules" / "tests" / "a_test.yaml").write_bytes(b"tests: []\n")
    (tmp_path / "dashboards" / "d.json").write_bytes(b'{"title": "d"}\n')
    return tmp_path


def run(repo: Path, *args: str) -> int:
    code: int = sync_chart.main(["--repo", str(repo), *args])
    return code


def test_sync_adds_updates_and_deletes(repo: Path, capsys: pytest.CaptureFixture[str]) -> None:
    files = repo / "helm" / "llm-savings-exporter" / "files"
    assert run(repo, "--check") == 1
    assert "add    helm/llm-savings-exporter/files/rules/a.yaml" in capsys.readouterr().out
    assert run(repo) == 0
    assert (files / "rules" / "a.yaml").read_bytes() == b"groups: []\n"
    assert (files / "dashboards" / "d.json").read_bytes() == b'{"title": "d"}\n'
    assert not (files / "rules" / "tests").exists()  # promtool tests are not rules
    assert run(repo, "--check") == 0

    # One changed byte, one removed source, one new source.
    (repo / "rules" / "a.yaml").write_bytes(b"groups: [] \n")
    (repo / "dashboards" / "d.json").unlink()
    (repo / "dashboards" / "e.json").write_bytes(b"{}")
    capsys.readouterr()
    assert run(repo, "--check") == 1
    out = capsys.readouterr().out
    assert "update helm/llm-savings-exporter/files/rules/a.yaml" in out
    assert "delete helm/llm-savings-exporter/files/dashboards/d.json" in out
    assert "add    helm/llm-savings-exporter/files/dashboards/e.json" in out
    assert (files / "dashboards" / "d.json").exists()  # --check changes nothing
    assert run(repo) == 0
    assert run(repo, "--check") == 0
    assert sorted(p.name for p in (files / "dashboards").iterdir()) == ["e.json"]
    assert (files / "rules" / "a.yaml").read_bytes() == b"groups: [] \n"


def test_files_that_are_not_copies_are_left_alone(repo: Path) -> None:
    files = repo / "helm" / "llm-savings-exporter" / "files"
    (files / "rules").mkdir(parents=True)
    (files / "README.md").write_text("generated, do not edit\n")
    assert run(repo) == 0
    assert (files / "README.md").exists()
