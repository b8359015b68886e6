"""Follow log files and hand out complete lines with exact resume offsets.

The tailer turns files into lines; it knows nothing of JSON, records or
metrics. The sidecar calls :meth:`Tailer.poll`, hands every line to the
pipeline, and commits :meth:`Tailer.state` together with the aggregates in
one atomic checkpoint; after a restart it calls :meth:`Tailer.restore` with
that state on a new tailer. Exactly-once therefore rests on one promise:
``state()`` describes exactly the lines returned so far, no more, no less.

API
---
``Tailer(patterns, *, max_line_bytes=1 MiB, fingerprint_bytes=256,
use_watchdog=True, poll_interval=1.0, clock=time.monotonic,
source_name="jsonl", rotate_grace=5.0, copy_settle=2.0, max_open_files=256,
wall_clock=time.time)``

* ``poll(max_lines=None) -> list[TailEvent]`` - one non-blocking pass:
  discover files matching the globs, check each followed file for
  truncation, read what is new. Events come in file order: within a file in
  offset order, files in the order they were discovered (so a rotated file
  is drained before its successor). ``max_lines`` caps the events returned;
  the rest stays buffered (bounded) and ``state()`` stops exactly there.
* ``poll_batches(max_lines=None) -> list[TailBatch]`` - the same pass, the
  lines of each read in one batch (a list of lines with the file's offsets)
  instead of an event per line: what the sidecar feeds the pipeline.
  ``poll()`` is these batches taken apart.
* ``wait(timeout)`` - block until a watchdog event or
  ``min(timeout, poll_interval)`` has passed.
* ``state() -> dict`` - JSON-serialisable checkpoint; ``saved_at`` is the
  ``wall_clock`` time of the discovery it reflects (the last poll's start,
  or the restore).
* ``restore(state) -> list[str]`` - on a fresh tailer, before the first
  poll; returns human-readable warnings (truncated, rewritten, gone...).
* ``stats() -> TailStats`` - counters, per-file lag, ``bytes_lost`` by reason,
  ``open_files``, ``files_matched``.
* ``up`` - False when the source has files but can open none of them.
* ``commit_hints`` - grows on every rotation, truncation, deletion and retired
  file: the sidecar takes an extra checkpoint soon after (at most one a second).
* ``close()``.

A :class:`TailEvent` is either a line (``skipped is None``; ``line`` holds
the bytes without the newline, a trailing ``\\r`` removed) or a skipped line
(``skipped`` in :data:`SKIP_REASONS`, ``line`` empty) that the caller counts
as a rejection. ``offset`` is where the line starts, ``end`` the resume
offset after it, ``path`` the name the file had when last seen in the globs
(a rotated file keeps its old name here).

Semantics (the contract the tests hold us to)
---------------------------------------------
* **Discovery.** Every poll expands the globs (``**`` allowed). A new
  regular file is read from offset 0 - at start-up too: nothing is skipped.
  Watchdog (inotify) only wakes :meth:`wait` early; correctness never
  depends on it, because network filesystems send no events. With
  ``use_watchdog=False`` the tailer only polls.
* **Identity** is device + inode + a fingerprint: the first
  ``fingerprint_bytes`` bytes of the file (fewer while the file is shorter)
  and the last 64 bytes before the committed offset. Names never decide.
* **Rename rotation** (``app.log`` -> ``app.log.1``, new ``app.log``): the
  old file keeps its identity and is followed through its open descriptor,
  even when the new name is outside the globs, and drained to EOF before
  the new file is read; the new file starts at 0. When the rotated name
  still matches a glob, the same identity is recognised and nothing is read
  twice. A file that left the globs (or was deleted) is closed once it has
  been at EOF for ``rotate_grace`` seconds of the injected clock; a writer
  still holding the old descriptor can finish its lines meanwhile.
* **Truncation** (copytruncate, ``> file``) is detected when the size drops
  below what was read, or the head or the bytes before the offset change.
  Complete lines already buffered are still returned (they were in the
  file), then the file restarts at 0 and the old position is *retired*.
* **copytruncate with the copy inside the globs.** A new file whose head
  equals a retired head is the copy: it is adopted at the retired offset (if
  the 64 bytes before it match), so what was written between the last read
  and the truncation is recovered and nothing is read twice. A new file
  whose full head equals a followed file's head is a copy of a live file and
  is never read (until that file is truncated). A new file too short to
  tell (empty, or a prefix of a known head) waits up to ``copy_settle``
  seconds, then is read from 0. Known window: when several copy, truncate
  and regrow rounds happen between two polls, a copy can fail to match and be
  read again; its lines are then counted as duplicates (the request-id
  ledger keeps the totals exact), never as new requests.
* **Truncation racing a read.** The checks above run before the read; a
  truncation (and the writer's next lines) landing between them and the read
  would hand out the new content's end at the old offset, then the whole new
  content again from 0. So after every read that returned data the head and
  the bytes before the read position are read again; when they changed, the
  whole read is given back and the file is handled as truncated at once.
* **Bytes lost** are counted by reason in ``stats().bytes_lost`` and carried
  in the state (so they survive restarts): ``gone_while_stopped`` (a
  checkpointed file not found at restore, or whose inode holds another file
  now, and not found compressed either: size at the checkpoint minus its
  offset; a file read to its end that is gone is normal rotation, logged at
  debug), ``truncated_unread`` (size last seen minus the offset, at a
  truncation or a truncation while stopped; a copy inside the globs that is
  adopted reads them after all, see ``copies_adopted``), ``deleted_unread``
  (a matched file deleted before it could be opened, or a parked file gone
  with bytes past its offset) and ``unterminated`` (a rotated file closed
  with a last line that never got its newline). Bytes written after the last
  look and lost before the next one are not knowable, so not counted.
* **Open files** are capped by ``max_open_files`` (and by half the process's
  RLIMIT_NOFILE; an EMFILE/ENFILE lowers the cap further). Above it, idle
  files (read to their end, still in the globs, least recently active first:
  never the file being written unless every other file is busier) are
  *parked*: closed, with their size and mtime kept; discovery reopens one
  when either changes, by path, and follows it only when device and inode
  match (else the name holds another file: it is new, the parked one is
  gone). A parked file that left the globs cannot be followed and is
  forgotten (its position retired). A new file with no descriptor to spare
  waits (deferred) until one is free. Compressed files keep no descriptor;
  a new file that is a copy of a followed file gives its descriptor back
  while it waits and is reopened (identity verified) to look again.
* **NUL bytes.** A writer without O_APPEND keeps writing at its old offset
  after a copytruncate, leaving a run of NULs (a sparse hole) before its
  next line. NUL runs at the start of a line are skipped and counted, never
  buffered as a line. A line that still contains a NUL is skipped with
  reason ``nul_bytes``.
* **NULs at EOF** (a region whose data is not visible yet: NFS,
  preallocation) are never committed or kept: they are read again next
  time, so the data that replaces them is not lost. Only a run longer than
  ``max_line_bytes`` or followed by data is skipped.
* **Partial lines.** An unterminated last line is never returned until its
  newline arrives; the committed offset stays before it, also across a
  restart.
* **Long lines.** A line longer than ``max_line_bytes`` (not counting
  ``\\n``) is reported once as skipped ``line_too_long`` and discarded while
  reading on in chunks (memory stays bounded); tailing resumes after its
  newline, also across a restart (the state remembers that it is inside
  such a line).
* **Blank lines** (empty after removing ``\\r``) are not returned, only
  counted.
* **Restore** re-finds each file by device and inode (at its path, among
  the glob matches, in its directory or in the directory its symlink points
  into, so a file rotated while the sidecar was down is still drained),
  then checks the fingerprint. New files not yet classified are in the
  state too. Out of descriptors (EMFILE/ENFILE) or unreadable is not "gone":
  the saved entry is kept as it was (written back by ``state()``) and
  retried at every poll. Head
  changed (inode reused, or truncated and rewritten), size below the offset
  (truncated) or the bytes before the offset changed (rewritten): the file
  restarts at 0 and a warning says so. A file that is gone is reported.
* **Limitation across a crash:** a plain file that is created *and* rotated out
  of the globs between two checkpoints was never checkpointed, so a tailer
  restored after a crash cannot find it. Let the globs match the rotated
  names too (``app.log*``): identity makes that free of double reads.
* **Crash loops and retention** (measured with the fault harness, real
  logrotate ``rotate 5`` every 2 s, 3-5k lines/s, ``app.log*``): the sidecar
  commits after its first short pass and within a second of each rotation,
  so a restarted sidecar resumes from offsets at most ~1 s (plus one poll)
  old. Loss remains only when kill -9 comes faster than start-up + first
  pass + first checkpoint (about 1 s on 2 busy cores) for longer than
  logrotate's retention (here 5 x 2 s = 10 s): no checkpoint can then be
  written at all. Such bytes are counted as ``gone_while_stopped``.
* **Limitation: shared headers.** Files whose first ``fingerprint_bytes``
  bytes are identical are taken for copies of each other; raise
  ``fingerprint_bytes`` when every file starts with the same banner.
* **Compressed files** (gzip, bzip2, xz, zstd, lz4 by their magic bytes),
  e.g. ``app.log.2.gz`` matched by ``app.log*``, are never followed: while
  polling, a compressed file is never read (its lines were read from the
  plain file before it was compressed). Only a restore reads one: see the
  two rules below.
* **Compressed while stopped** (logrotate ``compress``, with or without
  ``delaycompress``). At restore, a checkpointed file that is gone or whose
  identity changed (inode reused) is looked for among compressed files
  (gzip, xz, bzip2 via the stdlib; zstd and lz4 cannot be read, there is no
  stdlib or base-dependency module for them) in its directory, the directory
  its symlink points into and the directories of the glob matches: at most
  64 files probed, 16 compressed candidates whose mtime is not older than
  the saved file's mtime minus 60 s, newest first, whose *decompressed* head
  matches the saved head; at most 3 of those are decompressed up to the
  saved offset, and one whose size reaches it and whose bytes before it
  match the saved tail is the file. This also runs for a file read to its
  end at the checkpoint (a writer goes on after a kill); a gzip trailer size
  equal to the offset ends it without decompressing. The rest is then read
  by streaming decompression (bounded memory, ``max_line_bytes`` and the
  partial-line rules as for any file) before every followed file, as
  events whose ``path`` is the compressed file and whose offsets are in the
  decompressed data; ``state()`` keeps its position (``"compressed":
  true``), so a restart resumes inside it. At its end it is retired (an
  unterminated last line is ``unterminated``); it is never read again.
  Nothing is counted lost when the rest was recovered. A compressed file
  damaged before the offset is no candidate; damaged after it, the lines
  before the damage are read and the rest of the saved size is
  ``gone_while_stopped``. Still lost (counted ``gone_while_stopped`` when
  the checkpoint knew of unread bytes): a file compressed and then deleted
  by ``rotate N`` while stopped; a file not found by these bounds.
* **Created, rotated and compressed while stopped** (no checkpoint saw it).
  At restore only, and only when the state has ``saved_at`` (older states
  skip this rule): a gzip, xz or bzip2 file matched by the globs whose mtime
  is later than ``saved_at`` and whose decompressed head matches no saved
  followed, retired, waiting or just-recovered file (their stored head
  digest over their stored head length; a file already followed or recovered
  is skipped by device and inode too) is read from offset 0 by the same
  streaming path, then retired. At most 8 (newest first, read oldest first),
  64 files probed; each is logged at info level (path, compressed bytes). A
  checkpoint taken while one is read resumes inside it; once read its head is
  retired, and its mtime is before any later ``saved_at``, so it is never
  read again. Why this does not double count: gzip, xz, bzip2 and logrotate
  keep the original's mtime on the compressed file (checked: ``gzip -k`` and
  logrotate 3.21 ``compress`` give the ``.gz`` the plain file's mtime), so
  a candidate's mtime is its last write. A file read (and possibly retired)
  before the checkpoint had that write read before ``saved_at`` unless it
  was written *after* the checkpoint, i.e. unless it is still in the saved
  files (whose heads exclude it). The remaining double-read cases: (1) a
  rotated file reaped after ``rotate_grace`` quiet seconds that its writer
  then appends to again (its mtime moves past ``saved_at``) and whose
  retired entry fell out of the retired list (32 entries) before the
  checkpoint; (2) a ``compresscmd`` that does not keep mtimes, or mtimes
  touched by hand, or the wall clock stepped back past them, with the same
  retired-list overflow; (3) a copytruncate copy made while stopped by a
  tool that sets a new mtime, whose original was retired and forgotten. In
  each the whole file is read from 0 again: its records are redelivered ids,
  which the request-id ledger counts as duplicates, so request totals stay
  exact. Risk the other way (loss, not counted): a known file whose stored
  head is short (a new file with a few bytes at the checkpoint) hides every
  candidate that starts with the same bytes; a file created between the
  last discovery and a coarse mtime tick (a few ms) is neither saved nor
  newer than ``saved_at``.
* **Lag**: ``stats().files`` gives size - offset per file.

Modules
-------
``lines`` (events, line rules, stats types), ``files`` (per-file records,
identity, raw reads), ``state`` (checkpoint schema, restore, re-finding files
after a restart), ``compressed`` (finding a file's compressed successor),
``watch`` (file events that wake :meth:`Tailer.wait`), ``tailer`` (the
:class:`Tailer`). Import from this package, not the modules.
"""

from exporter.sources.tail.lines import (
    SKIP_REASONS,
    FileLag,
    SkipReason,
    TailBatch,
    TailEvent,
    TailStats,
    normalise_line,
)
from exporter.sources.tail.state import STATE_SCHEMA
from exporter.sources.tail.tailer import Tailer

__all__ = [
    "SKIP_REASONS",
    "STATE_SCHEMA",
    "FileLag",
    "SkipReason",
    "TailBatch",
    "TailEvent",
    "TailStats",
    "Tailer",
    "normalise_line",
]
