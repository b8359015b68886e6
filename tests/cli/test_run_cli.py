"""`run` flags through the real CLI entry point, without starting a server (the process: tests/e2e)."""

from __future__ import annotations

from pathlib import Path

import pytest

from exporter.cli.main import main


def _config(tmp_path: Path) -> Path:
    path = tmp_path / "sidecar.yaml"
    path.write_text(f"schema: llm-savings-config/v1\nlisten: 127.0.0.1:9464\nstate_dir: {tmp_path / 'state'}\n")
    return path


@pytest.mark.parametrize("bad", ["nowhere", "host:", "127.0.0.1:65536", "127.0.0.1:-1", ":x"])
def test_a_bad_listen_flag_is_refused_naming_the_flag(tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                                      bad: str) -> None:
    assert main(["run", "--config", str(_config(tmp_path)), "--listen", bad, "--check-config"]) == 2
    assert capsys.readouterr().err == f"error: --listen: expected HOST:PORT, got {bad!r}\n"


def test_a_good_listen_flag_passes_the_config_check(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["run", "--config", str(_config(tmp_path)), "--listen", "0.0.0.0:9555", "--check-config"]) == 0
    assert capsys.readouterr().out.startswith("ok: ")


def test_help_names_the_listen_flag(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit):
        main(["run", "--help"])
    assert "--listen HOST:PORT" in capsys.readouterr().out
