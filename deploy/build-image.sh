#!/usr/bin/env bash
# Build the worker image from deploy/Dockerfile without a Docker daemon, from Debian's packages.
#
#   deploy/build-image.sh [--tag IMAGE] [--rebuild-base] [--no-smoke]
#
# 1. mmdebstrap makes two Debian bookworm root filesystems from the host's apt sources (no Docker Hub):
#      build base:   python3, python3-venv, ca-certificates (the Dockerfile's RUN needs a shell and pip)
#      runtime base: python3, ca-certificates, with every shell removed (the worker is started in exec form)
# 2. `podman import` turns each tarball into a local image (localhost/nodeflow/base-*:bookworm).
# 3. `podman build --pull=never` builds deploy/Dockerfile with BUILD_IMAGE/BASE_IMAGE set to those images;
#    pip fetches the Python wheels from PyPI (RUN uses the host's network).
# 4. A smoke run: the image starts as 65532:65532 on a read-only root filesystem, has no /bin/sh, and holds no
#    simulator/devstack module (nor the [sim] extra's cel-python or moto), none loaded by `import worker`.
#
# Needs (Debian packages): podman, mmdebstrap, and runc or crun; uidmap when run as non-root.
# Environment: NODEFLOW_BUILD_CA (default $PIP_CERT: a CA bundle pip trusts during the build), NODEFLOW_APT_SOURCES (default /etc/apt/sources.list.d/debian.sources, else /etc/apt/sources.list),
# NODEFLOW_STORAGE_DRIVER (overlay|vfs, default: overlay if an overlay mount works here, else vfs),
# NODEFLOW_OCI_RUNTIME (crun|runc, default: crun unless the cgroup layout is one crun rejects, see below).
#
# What this machine needed, and why (docs/operations.md "Container image" has the evidence):
# - crun 1.8 refuses cgroup "hybrid" mode (v1 controllers plus a cgroup2 mount with controllers enabled in
#   its cgroup.controllers, here hugetlb): "crun: cgroups in hybrid mode not supported, drop all controllers from
#   cgroupv2". This script then uses runc, which handles hybrid mode, rather than changing the host's cgroups.
# - Without CAP_SYS_RESOURCE a runtime cannot set podman's default rlimits (nofile/nproc 1048576):
#   "crun: setrlimit `RLIMIT_NOFILE`: Operation not permitted". Lowering limits needs no capability, so
#   build and run pass --ulimit values below the current hard limits (ULIMITS below).
set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
TAG=localhost/nodeflow/nodeflow:0.1.0
SUITE=bookworm
BUILD_BASE=localhost/nodeflow/base-build:$SUITE
RUNTIME_BASE=localhost/nodeflow/base-runtime:$SUITE
REBUILD_BASE=0
SMOKE=1

die() { echo "build-image: $*" >&2; exit 1; }
say() { echo "build-image: $*" >&2; }

while [ $# -gt 0 ]; do
  case $1 in
    --tag) TAG=${2:?--tag needs a value}; shift 2 ;;
    --rebuild-base) REBUILD_BASE=1; shift ;;
    --no-smoke) SMOKE=0; shift ;;
    -h|--help) sed -n '2,4p' "$0"; exit 0 ;;
    *) die "unknown argument $1 (see --help)" ;;
  esac
done

need() {  # need COMMAND DEBIAN_PACKAGE
  command -v "$1" >/dev/null 2>&1 || die "$1 not found: apt-get install $2 (needs: podman mmdebstrap runc|crun)"
}
need podman podman
need mmdebstrap mmdebstrap

apt_sources() {
  local s=${NODEFLOW_APT_SOURCES:-}
  if [ -z "$s" ]; then
    for s in /etc/apt/sources.list.d/debian.sources /etc/apt/sources.list; do [ -s "$s" ] && break; done
  fi
  [ -s "$s" ] || die "no apt sources file for mmdebstrap (set NODEFLOW_APT_SOURCES)"
  echo "$s"
}

storage_driver() {
  # overlay when the kernel lets us mount one here (in a private mount namespace, so nothing is left mounted)
  if [ -n "${NODEFLOW_STORAGE_DRIVER:-}" ]; then echo "$NODEFLOW_STORAGE_DRIVER"; return; fi
  local d; d=$(mktemp -d)
  mkdir -p "$d"/lower "$d"/upper "$d"/work "$d"/merged
  local userns=(); [ "$(id -u)" = 0 ] || userns=(-r)
  if unshare "${userns[@]}" -m mount -t overlay overlay \
       -o "lowerdir=$d/lower,upperdir=$d/upper,workdir=$d/work" "$d/merged" 2>/dev/null; then
    echo overlay
  else
    echo vfs
  fi
  rm -rf "$d"
}

cgroup_hybrid_with_controllers() {  # (cgroup files report size 0, so read them)
  local f=/sys/fs/cgroup/unified/cgroup.controllers
  [ -r "$f" ] && [ -n "$(cat "$f")" ]
}

oci_runtime() {
  if [ -n "${NODEFLOW_OCI_RUNTIME:-}" ]; then echo "$NODEFLOW_OCI_RUNTIME"; return; fi
  if command -v crun >/dev/null 2>&1 && ! cgroup_hybrid_with_controllers; then echo crun; return; fi
  command -v runc >/dev/null 2>&1 && { echo runc; return; }
  if command -v crun >/dev/null 2>&1; then
    die "crun cannot run containers under this cgroup layout (hybrid v1+v2 with controllers in" \
        "/sys/fs/cgroup/unified/cgroup.controllers): apt-get install runc"
  fi
  die "no OCI runtime: apt-get install runc (or crun)"
}

DRIVER=$(storage_driver)
RUNTIME=$(oci_runtime)
# A storage root of our own per driver: podman refuses a root whose database names another driver
# ("database configuration mismatch"), and the default root may hold one.
STORE=${NODEFLOW_STORAGE_ROOT:-/var/lib/containers/nodeflow-$DRIVER}
[ "$(id -u)" = 0 ] || STORE=${NODEFLOW_STORAGE_ROOT:-${XDG_DATA_HOME:-$HOME/.local/share}/containers/nodeflow-$DRIVER}
PODMAN=(podman --root "$STORE" --storage-driver "$DRIVER" --runtime "$RUNTIME")
CACHE=${NODEFLOW_IMAGE_CACHE:-$ROOT/out/image}  # the base tarballs, kept so a retry skips mmdebstrap
# below the current hard limits: raising an rlimit needs CAP_SYS_RESOURCE (absent in some sandboxes)
nofile=$(ulimit -Hn); [ "$nofile" = unlimited ] || [ "$nofile" -gt 8192 ] && nofile=8192
nproc=$(ulimit -Hu); [ "$nproc" = unlimited ] || [ "$nproc" -gt 4096 ] && nproc=4096
ULIMITS=(--ulimit "nofile=$nofile:$nofile" --ulimit "nproc=$nproc:$nproc")
say "storage driver $DRIVER, OCI runtime $RUNTIME, ${ULIMITS[*]}"

make_base() {  # make_base IMAGE PACKAGES [REMOVE_SHELLS]
  local image=$1 packages=$2 strip=${3:-}
  if [ "$REBUILD_BASE" = 0 ] && "${PODMAN[@]}" image exists "$image"; then
    say "$image exists (--rebuild-base to make it again)"; return
  fi
  local tar="$CACHE/$(basename "${image/:/-}").tar" hooks=()
  mkdir -p "$CACHE"
  if [ -n "$strip" ]; then
    # The worker runs `python -m worker` in exec form; with no shell in the image, nothing can start one.
    hooks=(--customize-hook='rm -f "$1"/usr/bin/sh "$1"/usr/bin/dash "$1"/usr/bin/bash "$1"/usr/bin/rbash "$1"/bin/sh "$1"/bin/dash "$1"/bin/bash')
  fi
  if [ "$REBUILD_BASE" = 1 ] || [ ! -s "$tar" ]; then
    say "mmdebstrap $SUITE --include=$packages -> $tar"
    mmdebstrap --variant=minbase --format=tar --include="$packages" \
      --dpkgopt='path-exclude=/usr/share/doc/*' --dpkgopt='path-exclude=/usr/share/man/*' \
      --dpkgopt='path-exclude=/usr/share/locale/*' --dpkgopt='path-exclude=/usr/share/info/*' \
      "${hooks[@]}" "$SUITE" "$tar.part" "$(apt_sources)"
    mv "$tar.part" "$tar"
  fi
  say "podman import $tar -> $image"
  "${PODMAN[@]}" import --change 'ENV PATH=/usr/local/bin:/usr/bin:/bin' "$tar" "$image" >/dev/null
}

# A TLS-intercepting proxy between this machine and PyPI: hand pip the host's CA bundle for RUN only, as a
# mounted /etc/pip.conf (volumes are not committed, so neither ends up in the image).
CA=${NODEFLOW_BUILD_CA:-${PIP_CERT:-}}
BUILD_MOUNTS=()
if [ -n "$CA" ]; then
  [ -r "$CA" ] || die "NODEFLOW_BUILD_CA/PIP_CERT $CA is not readable"
  mkdir -p "$CACHE"
  printf '[global]\ncert = /etc/ssl/certs/nodeflow-build-ca.crt\n' >"$CACHE/pip.conf"
  BUILD_MOUNTS=(-v "$CA:/etc/ssl/certs/nodeflow-build-ca.crt:ro" -v "$CACHE/pip.conf:/etc/pip.conf:ro")
  say "pip trusts $CA during the build"
fi

start=$(date +%s)
make_base "$BUILD_BASE" python3,python3-venv,ca-certificates
make_base "$RUNTIME_BASE" python3,ca-certificates strip-shells
"${PODMAN[@]}" build --pull=never --network=host "${ULIMITS[@]}" "${BUILD_MOUNTS[@]}" \
  --build-arg BUILD_IMAGE="$BUILD_BASE" --build-arg BASE_IMAGE="$RUNTIME_BASE" \
  -f "$ROOT/deploy/Dockerfile" -t "$TAG" "$ROOT"
say "built $TAG in $(( $(date +%s) - start )) s; size $("${PODMAN[@]}" image inspect --format '{{.Size}}' "$TAG") bytes"

# prints the simulated world's modules the image can find or `import worker` loads (nothing, if all is well);
# tests/deploy/test_image.py runs it against the image's Python path rebuilt from the Dockerfile
SIM_WORLD_CHECK='
import importlib.util, sys
import worker
world = ("simulator", "devstack", "celpy", "moto")
loaded = {m.split(".")[0] for m in sys.modules}
print(" ".join(sorted(n for n in world if n in loaded or importlib.util.find_spec(n))))'
if [ "$SMOKE" = 1 ]; then
  run=("${PODMAN[@]}" run --rm --network=none --read-only --tmpfs /tmp "${ULIMITS[@]}")
  "${run[@]}" "$TAG" --help >/dev/null || die "smoke: the image does not start the worker"
  [ "$("${run[@]}" --entrypoint python "$TAG" -c 'import os; print(os.getuid(), os.getgid())')" = "65532 65532" ] \
    || die "smoke: the image does not run as 65532:65532"
  if "${run[@]}" --entrypoint /bin/sh "$TAG" -c true 2>/dev/null; then die "smoke: the image has a shell"; fi
  # the product only: the [sim] extra's world is neither installed nor loaded by the worker
  sim_world=$("${run[@]}" --entrypoint python "$TAG" -c "$SIM_WORLD_CHECK") || die "smoke: python -c 'import worker' fails in the image"
  [ -z "$sim_world" ] || die "smoke: the image holds or loads the simulated world: $sim_world"
  say "smoke: starts, runs as 65532:65532 on a read-only root filesystem, has no /bin/sh, holds no simulator module"
fi
echo "run it (host network, as deploy/worker.yaml would):"
echo "  ${PODMAN[*]} run --rm --network=host --read-only --tmpfs /tmp ${ULIMITS[*]} $TAG --address HOST:PORT ..."
