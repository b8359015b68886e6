"""The start-up log lines: what this sidecar reads, where it listens, what it prices with, where it keeps state.

An operator reading the first lines of a pod's log should see each source with
the files its globs match right now (a typo in a glob shows as "no file yet"),
the OTLP receiver's address, the /metrics address, the price table (path,
sha256, versions) and the state directory. Only names, paths, addresses and
counts: never a record's content. Globbing (``match_sources``) is apart from
the wording (``startup_lines``), which is pure.
"""

from __future__ import annotations

import glob
import os
from collections.abc import Mapping, Sequence
from typing import NamedTuple
from urllib.parse import urlsplit, urlunsplit

from exporter.engine.plainpath import LOOP as PLAIN_LOOP
from exporter.prices.table import PriceTable
from exporter.sidecar.config import Config, SourceConfig

MAX_FILES_SHOWN = 5  # per glob; the rest as a count (a log directory may hold thousands of rotated files)


class GlobMatch(NamedTuple):
    """One glob of a source and the regular files it matches, sorted."""

    pattern: str
    files: tuple[str, ...]


def match_globs(source: SourceConfig) -> list[GlobMatch]:
    """The files each glob of ``source`` matches now, as the tailer globs them (recursive ``**``)."""
    return [GlobMatch(pattern, tuple(path for path in sorted(glob.iglob(pattern, recursive=True))
                                     if os.path.isfile(path)))
            for pattern in source.paths]


def match_sources(config: Config) -> dict[str, list[GlobMatch]]:
    return {source.name: match_globs(source) for source in config.sources}


def _files(match: GlobMatch) -> str:
    if not match.files:
        return "no file yet (picked up when one appears)"
    shown = ", ".join(match.files[:MAX_FILES_SHOWN])
    more = len(match.files) - MAX_FILES_SHOWN
    return f"{len(match.files)} file(s): {shown}" + (f" and {more} more" if more > 0 else "")


def _without_userinfo(url: str) -> str:
    """An endpoint as logged: ``user:password@`` removed (a credential is not a log line)."""
    parts = urlsplit(url)
    if "@" not in parts.netloc:
        return url
    return urlunsplit(parts._replace(netloc="…@" + parts.netloc.rpartition("@")[2]))


def startup_lines(config: Config, prices: PriceTable, matches: Mapping[str, Sequence[GlobMatch]],
                  metrics_port: int, otlp_port: int | None) -> list[str]:
    """The lines ``Sidecar.start`` logs, in order; ``otlp_port`` is None when the receiver is off."""
    versions = prices.versions
    origin = "bundled" if config.prices is None else "configured"
    lines = [
        f"price table ({origin}) {prices.path} sha256 {prices.sha256}: {len(versions)} version(s) "
        f"{versions[0].version}..{prices.newest.version}, newest from {prices.newest.effective_from_text}, "
        f"{len(prices.newest.models)} models",
        f"state dir {os.path.abspath(config.state_dir)}",
    ]
    if not config.sources:
        lines.append("no file sources configured")
    for source in config.sources:
        kind = source.type if source.type != "jsonl" else f"jsonl, format {source.format}"
        if source.type == "jsonl" and source.format == "canonical":  # counted by the plain line's loop, in C or not
            kind += f", plain-line loop {PLAIN_LOOP}"
        for match in matches.get(source.name, ()):
            lines.append(f"source {source.name} ({kind}): {match.pattern} -> {_files(match)}")
    if otlp_port is None:
        lines.append("OTLP receiver off (otlp.enabled: false)")
    else:
        host = config.otlp.listen.rpartition(":")[0] or "0.0.0.0"
        lines.append(f"OTLP receiver on http://{host}:{otlp_port}/v1/traces")
    if config.otlp_push.enabled:
        endpoint = _without_userinfo(config.otlp_push.endpoint)
        lines.append(f"OTLP metrics push to {endpoint} every {config.otlp_push.interval_seconds:g} s")
    lines.append(f"serving /metrics on {config.listen} (port {metrics_port})")
    return lines


__all__ = ["GlobMatch", "match_globs", "match_sources", "startup_lines"]
