#!/usr/bin/env bash
# Build the exporter image from the repository's Dockerfile with no container registry:
#   1. a Debian bookworm base (minbase + python3, python3-venv, ca-certificates) made by
#      debootstrap, tarred under .cache/image/ and imported into buildah's storage as
#      localhost/llm-savings-base:<key>; and the build stage's base, the same plus gcc,
#      libc6-dev and python3-dev (the C span-view walk is compiled there);
#   2. `buildah bud --isolation chroot --build-arg PYTHON_IMAGE=<that base>
#      --build-arg BUILD_IMAGE=<the build base>` of the
#      Dockerfile (pip reaches the package index from inside the build), tagged
#      localhost/llm-savings-exporter:<key>.
# Both steps are skipped when their image is already in buildah's storage: the base is
# keyed by its debootstrap settings, the image by the hash of everything the build reads
# (Dockerfile, .dockerignore, pyproject.toml, README.md, LICENSE, exporter/,
# scripts/bake_encodings.py, this script) plus the base. Needs root, buildah and debootstrap
# (scripts/setup.sh --test installs them).
#
#   scripts/build_image.sh            # prints the image name on the last line of stdout
#   scripts/build_image.sh --no-cache # rebuilds both (the base tarball is kept)
# Timings go to stderr and to .cache/image/timings-<key>.json.
#
# The build's RUN steps trust the build host's CA bundle (LLM_SAVINGS_BUILD_CA, default
# /etc/ssl/certs/ca-certificates.crt; empty: Debian's own): it is bind-mounted over the
# base's bundle and pip is pointed at it (--build-arg PIP_CERT), so a TLS-intercepting
# proxy in front of the package index works. Bind mounts are not committed: the image
# keeps Debian's bundle.
set -euo pipefail
cd "$(dirname "$0")/.."
CACHE=${LLM_SAVINGS_IMAGE_CACHE:-.cache/image}
MIRROR=${DEBIAN_MIRROR:-http://deb.debian.org/debian}
SUITE=bookworm
VARIANT=minbase
PACKAGES=python3,python3-venv,ca-certificates
BUILD_PACKAGES=gcc,libc6-dev,python3-dev
FORCE=0
[ "${1:-}" = "--no-cache" ] && FORCE=1
mkdir -p "$CACHE"
# One build at a time per cache: scripts/test.sh starts one in the background, and the image
# tests' own call waits here for it, then finds both images built.
exec 9> "$CACHE/build.lock"
flock 9

have_image() { buildah inspect --type image "$1" >/dev/null 2>&1; }
now() { date +%s.%N; }
elapsed() { python3 -c "import sys; print(f'{float(sys.argv[2]) - float(sys.argv[1]):.1f}')" "$1" "$2"; }

debootstrap_s=0
import_s=0
# make_base PACKAGES -> sets BASE: the Debian base with those packages, debootstrapped once and imported
make_base() {
  local packages=$1
  local base_key
  base_key=$(printf '%s\n' "$SUITE" "$VARIANT" "$packages" "base-v1" | sha256sum | cut -c1-16)
  BASE=localhost/llm-savings-base:$base_key
  local tarball=$CACHE/base-$base_key.tar t0 rootfs ctr mnt took
  if [ ! -s "$tarball" ]; then
    t0=$(now)
    rootfs=$(mktemp -d "$CACHE/rootfs.XXXXXX")
    debootstrap --variant="$VARIANT" --include="$packages" "$SUITE" "$rootfs" "$MIRROR" \
      > "$CACHE/debootstrap.log" 2>&1 || { tail -20 "$CACHE/debootstrap.log" >&2; exit 1; }
    # What an image does not need: apt's downloaded packages and lists, docs, man pages, locales.
    rm -rf "$rootfs"/var/cache/apt/archives/*.deb "$rootfs"/var/lib/apt/lists/* \
      "$rootfs"/usr/share/doc/* "$rootfs"/usr/share/man/* "$rootfs"/usr/share/locale/* \
      "$rootfs"/var/log/*.log "$rootfs"/var/cache/debconf/*-old
    tar -C "$rootfs" --numeric-owner -cf "$tarball.tmp" .
    mv "$tarball.tmp" "$tarball"
    rm -rf "$rootfs"
    took=$(elapsed "$t0" "$(now)")
    debootstrap_s=$(python3 -c "import sys; print(f'{float(sys.argv[1]) + float(sys.argv[2]):.1f}')" \
      "$debootstrap_s" "$took")  # both bases' time, in the timings file
    echo "debootstrap $SUITE ($VARIANT, $packages): ${took}s" >&2
  fi
  if [ "$FORCE" = 1 ] || ! have_image "$BASE"; then
    t0=$(now)
    ctr=$(buildah from scratch)
    mnt=$(buildah mount "$ctr")
    tar -C "$mnt" --numeric-owner -xf "$tarball"
    buildah umount "$ctr" >/dev/null
    buildah config --env PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin \
      --env LANG=C.UTF-8 --cmd python3 "$ctr"
    buildah commit --quiet --rm "$ctr" "$BASE" >/dev/null
    took=$(elapsed "$t0" "$(now)")
    import_s=$(python3 -c "import sys; print(f'{float(sys.argv[1]) + float(sys.argv[2]):.1f}')" "$import_s" "$took")
    echo "imported $BASE: ${took}s" >&2
  fi
}
# the build stage's base: the runtime's plus a C compiler and Python's headers (the C span-view walk)
make_base "$PACKAGES,$BUILD_PACKAGES"
BUILD_BASE=$BASE
make_base "$PACKAGES"

image_key=$( (
  printf '%s\n' "$BASE" "$BUILD_BASE"
  git ls-files -co --exclude-standard -- Dockerfile .dockerignore pyproject.toml README.md LICENSE \
    exporter scripts/bake_encodings.py scripts/build_image.sh | grep -v '__pycache__' | LC_ALL=C sort | xargs sha256sum
) | sha256sum | cut -c1-16)
IMAGE=localhost/llm-savings-exporter:$image_key
build_s=0
ca=${LLM_SAVINGS_BUILD_CA-/etc/ssl/certs/ca-certificates.crt}
trust=()
if [ -n "$ca" ] && [ -s "$ca" ]; then
  trust=(-v "$(realpath "$ca"):/etc/ssl/certs/ca-certificates.crt:ro"
         --build-arg PIP_CERT=/etc/ssl/certs/ca-certificates.crt)
fi
if [ "$FORCE" = 1 ] || ! have_image "$IMAGE"; then
  t0=$(now)
  buildah bud --isolation chroot --layers=false --build-arg "PYTHON_IMAGE=$BASE" \
    --build-arg "BUILD_IMAGE=$BUILD_BASE" "${trust[@]}" \
    -t "$IMAGE" -f Dockerfile . > "$CACHE/build-$image_key.log" 2>&1 \
    || { tail -40 "$CACHE/build-$image_key.log" >&2; exit 1; }
  build_s=$(elapsed "$t0" "$(now)")
  echo "built $IMAGE: ${build_s}s" >&2
fi
printf '{"base": "%s", "build_base": "%s", "image": "%s", "debootstrap_s": %s, "import_s": %s, "build_s": %s}\n' \
  "$BASE" "$BUILD_BASE" "$IMAGE" "$debootstrap_s" "$import_s" "$build_s" > "$CACHE/timings-$image_key.json"
echo "$IMAGE"
