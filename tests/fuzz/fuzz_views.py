"""Differential fuzzing of the C protobuf walk (``_views.c``) against upb, under ASan and UBSan.

Each body is parsed by upb (``parse_protobuf``) and checked by the C walk: ``validate`` must refuse
exactly what upb refuses and, on what both accept, ``views`` must give ``spans_from_protobuf``'s
views for three ``MappingOptions`` (the default; one wanting other names; one whose decisions are
full, so that ``wanted`` runs for every name). ``views`` also runs on refused bodies: it must not
crash. The C walk reads each body from the end of an mmap followed by an unmapped page, so an
overread of even one byte faults. ``--race`` first runs two threads, each with options of its own,
on the same bodies and counts the views that are not the thread's own (the C name cache is shared).
Inputs: the captured requests, a bench batch, test_views_c's written bodies, deep nestings, each
mutated byte-wise and field-wise (lengths kept right around the change, so the change can sit deep).

Not collected by pytest. Build the sanitized extension outside the tree::

    INC=$(.venv/bin/python -c 'import sysconfig; print(sysconfig.get_paths()["include"])')
    FLAGS="-fno-sanitize-recover=undefined -fno-omit-frame-pointer -g -O1 -shared -fPIC -I$INC"
    mkdir -p /tmp/fuzz/gcc && gcc -fsanitize=address,undefined $FLAGS \\
        exporter/sources/otlp/_views.c -o /tmp/fuzz/gcc/_views.so

and run it (PYTHONMALLOC=malloc: under pymalloc, ASan does not see a small body's overreads)::

    LD_PRELOAD=$(gcc -print-file-name=libasan.so) ASAN_OPTIONS=detect_leaks=0 PYTHONMALLOC=malloc \\
        .venv/bin/python -m tests.fuzz.fuzz_views --so /tmp/fuzz/gcc/_views.so --race 30 --seconds 600

Coverage-guided (of the C edges), with clang-16 and libclang-rt-16-dev from apt, and atheris built
from source in a venv of its own, VENV, so that it makes ``asan_with_fuzzer.so`` (the wheel does
not): ``CLANG_BIN=clang-16 $VENV/bin/pip install --no-binary atheris atheris``, plus a ``.pth`` in
VENV's site-packages naming ``.venv/lib/python3.11/site-packages`` and the checkout::

    mkdir -p /tmp/fuzz/clang && clang-16 -fsanitize=address,undefined,fuzzer-no-link $FLAGS \\
        exporter/sources/otlp/_views.c -o /tmp/fuzz/clang/_views.so
    LD_PRELOAD=$VENV/lib/python3.11/site-packages/asan_with_fuzzer.so ASAN_OPTIONS=detect_leaks=0 \\
    PYTHONMALLOC=malloc $VENV/bin/python -m tests.fuzz.fuzz_views --so /tmp/fuzz/clang/_views.so \\
        --atheris /tmp/fuzz/corpus -max_len=65536 -max_total_time=600 -artifact_prefix=/tmp/fuzz/

A failing input is written to ``--out`` (``views-<sha1>.bin``, shrunk, its hex printed); the
plain loop keeps the input under test in ``<out>/last.bin`` so that an ASan abort leaves it
behind. ``--replay PATH...`` checks files (or folders of them) and shrinks one that fails.
"""

from __future__ import annotations

import argparse
import ctypes
import hashlib
import importlib.util
import mmap
import random
import sys
import threading
import time
import warnings
from collections import Counter
from collections.abc import Callable
from pathlib import Path
from types import ModuleType
from typing import Any

from tests.fuzz.protowire import mutate, shrink


class Divergence(AssertionError):
    """The C walk and upb disagree on a body."""


def load(so: str) -> ModuleType:
    """The extension at ``so`` as ``exporter.sources.otlp._views``, before decode.py imports it."""
    spec = importlib.util.spec_from_file_location("exporter.sources.otlp._views", so)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    sys.modules[spec.name] = module
    from exporter.sources.otlp import decode

    assert decode._wire is module, "decode.py was imported before the sanitized extension"
    return module


class Guarded:
    """Copies of bodies that end where an unmapped page begins."""

    def __init__(self, size: int = 1 << 22) -> None:
        self.size = size
        self.map = mmap.mmap(-1, size + mmap.PAGESIZE)
        address = ctypes.addressof(ctypes.c_char.from_buffer(self.map))
        if ctypes.CDLL(None).mprotect(ctypes.c_void_p(address + size), mmap.PAGESIZE, 0) != 0:
            raise OSError("mprotect")
        self.view = memoryview(self.map)

    def place(self, body: bytes) -> memoryview | bytes:
        if len(body) > self.size:
            return body
        self.view[self.size - len(body) : self.size] = body
        return self.view[self.size - len(body) : self.size]


class Differ:
    """upb's answer and the C walk's on one body, for several options."""

    def __init__(self, wire: ModuleType, other_names: tuple[str, ...]) -> None:
        from exporter.sources.otlp.spans import MappingOptions

        full = MappingOptions()
        full._decisions.update((f"filler.{i}", False) for i in range(4096))
        self.wire, self.guard = wire, Guarded()
        self.options = [MappingOptions(), MappingOptions(tenant_attributes=other_names), full]
        self.refusals: Counter[str] = Counter()

    def check(self, body: bytes) -> bool:
        from exporter.sources.otlp.attributes import Unsupported
        from exporter.sources.otlp.decode import UndecodableRequest, parse_protobuf, spans_from_protobuf
        from exporter.sources.otlp.spans import SpanView
        from tests.sources.otlp.test_views_c import _fields

        view = self.guard.place(body)
        try:
            request = parse_protobuf(body)
        except UndecodableRequest:
            request = None
        try:
            self.wire.validate(view)
            accepted = True
        except ValueError as refused:
            accepted = False
            self.refusals[str(refused)] += 1
        if accepted != (request is not None):
            raise Divergence(f"validate {'accepts' if accepted else 'refuses'} what upb does not")
        for opts in self.options:
            try:
                walked = self.wire.views(view, opts._decisions, opts.wanted, SpanView, Unsupported)
            except ValueError as error:  # a refused body's walk may stop anywhere, but not crash
                if accepted:
                    raise Divergence(f"views refused an accepted body: {error}") from None
                continue
            if accepted and [_fields(v) for v in walked] != [_fields(v) for v in spans_from_protobuf(request, opts)]:
                raise Divergence(f"views differ (tenant_attributes={opts.tenant_attributes[:3]}...)")
        return accepted


# --- inputs ------------------------------------------------------------------------


def seeds() -> list[bytes]:
    import json

    from hypothesis.errors import NonInteractiveExampleWarning
    from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest

    from tests.bench.bench_otlp import build_batch
    from tests.live.spans import FIXTURES, request_bytes
    from tests.sources.otlp import test_views_c as t

    out = [
        request_bytes(request)
        for path in sorted(FIXTURES.glob("*/*.json"))
        for request in json.loads(path.read_text()).get("requests", [])
        if "protobuf" in request.get("content_type", "")
    ]
    batch = ExportTraceServiceRequest.FromString(build_batch(7)[0])
    out.append(batch.SerializeToString())
    del batch.resource_spans[0].scope_spans[0].spans[6:]
    out.append(batch.SerializeToString())
    out += [t._nested_array(depth) for depth in (1, 46, 47, 48)] + [t._groups_in_span(d) for d in (1, 97, 98)]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", NonInteractiveExampleWarning)
        out += [t.bodies.example() for _ in range(150)]
    return out


def other_names(bodies: list[bytes]) -> tuple[str, ...]:
    """Names in the bodies the default options do not want (every other one): a different ``wanted``."""
    from exporter.sources.otlp.decode import UndecodableRequest, parse_protobuf
    from exporter.sources.otlp.spans import MappingOptions

    names: set[str] = set()
    for body in bodies:
        try:
            request = parse_protobuf(body)
        except UndecodableRequest:
            continue
        for rs in request.resource_spans:
            names.update(rs.resource.attributes)
            names.update(key for ss in rs.scope_spans for span in ss.spans for key in span.attributes)
    unwanted = sorted(name for name in names if not MappingOptions().wanted(name))
    return (*unwanted[::2][:60], "team", "k", "")


# --- runs --------------------------------------------------------------------------


def _fails_alike(differ: Differ, why: str) -> Callable[[bytes], bool]:
    def fails(body: bytes) -> bool:
        try:
            differ.check(body)
        except Divergence as divergence:
            return str(divergence) == why
        return False

    return fails


def _keep(out: Path, body: bytes, why: str) -> None:
    path = out / f"views-{hashlib.sha1(body).hexdigest()[:12]}.bin"
    path.write_bytes(body)
    print(f"FAILED: {why}\n  {path} ({len(body)} bytes): {body.hex()}", flush=True)


def plain(differ: Differ, corpus: list[bytes], seconds: float, rng: random.Random, out: Path) -> int:
    """Mutate the corpus until the time is up; accepted mutants (and some refused ones) join it."""
    counts: Counter[str] = Counter()
    seen = {hashlib.sha1(body).digest() for body in corpus}
    stop, last = time.monotonic() + seconds, (out / "last.bin").open("wb")
    while time.monotonic() < stop:
        body = mutate(rng.choice(corpus), rng, corpus, 1 << 18)
        last.seek(0)
        last.truncate()
        last.write(body)
        last.flush()
        try:
            accepted = differ.check(body)
        except Divergence as divergence:
            _keep(out, shrink(body, _fails_alike(differ, str(divergence))), str(divergence))
            raise
        counts["accepted" if accepted else "refused"] += 1
        digest = hashlib.sha1(body).digest()
        if (accepted or rng.random() < 0.05) and digest not in seen and len(body) < 1 << 16:
            seen.add(digest)
            if len(corpus) < 20000:
                corpus.append(body)
            else:
                corpus[rng.randrange(len(corpus))] = body
        if sum(counts.values()) % 20000 == 0:
            print(f"  {dict(counts)}, corpus {len(corpus)}, {len(differ.refusals)} refusal kinds", flush=True)
    print(f"plain: {sum(counts.values())} bodies {dict(counts)}; C refusals seen: {dict(differ.refusals)}")
    return sum(counts.values())


def race(bodies: list[bytes], names: tuple[str, ...], seconds: float) -> int:
    """Two threads, each with options of its own, walk the same bodies at once; the views not their own."""
    from exporter.sources.otlp.decode import views_of_protobuf
    from exporter.sources.otlp.spans import MappingOptions
    from tests.sources.otlp.test_views_c import _fields

    makers: list[Callable[[], MappingOptions]] = [MappingOptions, lambda: MappingOptions(tenant_attributes=names)]
    wrong: list[Any] = []
    walks = Counter[int]()

    def walk(index: int, stop: float) -> None:
        make = makers[index]
        expected = [[_fields(v) for v in views_of_protobuf(b, make(), accelerated=False)] for b in bodies]
        opts = make()
        while time.monotonic() < stop:
            if walks[index] % 20 == 0:
                opts = make()  # new decisions: ``wanted`` (Python, a thread switch point) runs again
            for body, want in zip(bodies, expected, strict=True):
                got = [_fields(v) for v in views_of_protobuf(body, opts)]
                if got != want:
                    wrong.append((index, body, got, want))
            walks[index] += 1

    before = sys.getswitchinterval()
    sys.setswitchinterval(1e-6)
    stop = time.monotonic() + seconds
    threads = [threading.Thread(target=walk, args=(i, stop)) for i in (0, 1)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    sys.setswitchinterval(before)
    print(f"race: {dict(walks)} walks of {len(bodies)} bodies per thread; {len(wrong)} bodies with wrong views")
    for index, _, got, want in wrong[:4]:
        pairs = [(g[0].keys() | g[1].keys(), w[0].keys() | w[1].keys()) for g, w in zip(got, want, strict=True)]
        print(f"  thread {index}: (names read unwanted, wanted unread) {[(g - w, w - g) for g, w in pairs if g != w]}")
    return len(wrong)


def fuzz_atheris(differ: Differ, corpus: list[bytes], args: list[str]) -> None:
    import atheris

    folder = Path(args[0])
    folder.mkdir(parents=True, exist_ok=True)
    for body in corpus:
        (folder / hashlib.sha1(body).hexdigest()).write_bytes(body)

    counts: Counter[bool] = Counter()

    def one(data: bytes) -> None:
        counts[differ.check(data)] += 1
        if counts.total() % 500_000 == 0:
            print(f"  accepted {counts[True]}, refused {counts[False]}: {dict(differ.refusals)}", flush=True)

    def mutator(data: bytes, most: int, seed: int) -> bytes:
        rng = random.Random(seed)
        if rng.random() < 0.4:
            return bytes(atheris.Mutate(data, most))
        return mutate(data, rng, corpus, most)

    atheris.Setup([sys.argv[0], *args[1:], str(folder)], one, custom_mutator=mutator)
    atheris.Fuzz()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--so", required=True, help="the sanitized _views extension")
    parser.add_argument("--seconds", type=float, default=60.0, help="of the plain mutational loop")
    parser.add_argument("--race", type=float, default=0.0, help="seconds of the two-thread check, first")
    parser.add_argument("--seed", type=int, default=None)
    parser.add_argument("--out", type=Path, default=Path("/tmp/fuzz/out"))
    parser.add_argument("--replay", nargs="+", type=Path, help="files or folders of bodies to check")
    parser.add_argument("--atheris", nargs=argparse.REMAINDER, help="CORPUS_DIR [libFuzzer flags]")
    args = parser.parse_args()
    load(args.so)
    corpus = seeds()
    names = other_names(corpus)
    differ = Differ(sys.modules["exporter.sources.otlp._views"], names)
    args.out.mkdir(parents=True, exist_ok=True)
    if args.replay:
        for path in (p for given in args.replay for p in (sorted(given.iterdir()) if given.is_dir() else [given])):
            body = path.read_bytes()
            try:
                print(path, "accepted" if differ.check(body) else "refused")
            except Divergence as divergence:
                _keep(args.out, shrink(body, _fails_alike(differ, str(divergence))), str(divergence))
                raise
        return
    if args.race and race([b for b in corpus if len(b) < 1 << 16 and differ.check(b)], names, args.race):
        sys.exit(1)
    if args.atheris:
        fuzz_atheris(differ, corpus, args.atheris)
        return
    seed = args.seed if args.seed is not None else random.randrange(2**32)
    print(f"plain loop, seed {seed}, {len(corpus)} seeds", flush=True)
    start = time.monotonic()
    runs = plain(differ, corpus, args.seconds, random.Random(seed), args.out)
    print(f"{runs} bodies in {time.monotonic() - start:.0f} s, no divergence, no sanitizer report")


if __name__ == "__main__":
    main()
