#!/usr/bin/env bash
# CI for the board targets: builds pincer (the --no-default-features kernel
# with `pincer demo`, `--features demo`) for aarch64 and armv7, static, and
# runs it under qemu-user: `pincer
# --version`, `pincer demo` (the gate, the audit trail, the file and
# hardware tools on the simulated board, the session store under crashes;
# the shell is refused because qemu-user cannot host the OS sandbox, and
# the check asserts that refusal), and the session store's unit tests
# (`pincer-core --lib session::`).
#
#   scripts/cross-test.sh [TARGET...]     # default: aarch64 armv7
#
# The builds use the dev profile without debug info: an optimised fat-LTO
# build per target would add minutes and test nothing more (scripts/release.sh
# makes those). The toolchain is cached by scripts/cross-build.sh, and the
# build in $PINCER_CI_CACHE/cross/target (not the clone's target/), so that
# CI on a fresh clone rebuilds only the crates that changed: about 20 min per
# target cold on a busy 2-core machine, 1-5 min warm.
#
# Environment: PINCER_CI_CACHE as for scripts/cross-build.sh;
# CARGO_TARGET_DIR to build elsewhere.
set -euo pipefail
cd "$(dirname "$0")/.."
cache=${PINCER_CI_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/pincer-ci}
export CARGO_TARGET_DIR=${CARGO_TARGET_DIR:-$cache/cross/target}

targets=("$@")
((${#targets[@]})) || targets=(aarch64 armv7)
export CARGO_PROFILE_DEV_DEBUG=0
die() { echo "cross-test: $*" >&2; exit 1; }

for t in "${targets[@]}"; do
    start=$SECONDS
    case $t in
    aarch64) triple=aarch64-unknown-linux-gnu qemu=qemu-aarch64 ;;
    armv7) triple=armv7-unknown-linux-gnueabihf qemu=qemu-arm ;;
    *) die "unknown target '$t' (aarch64 or armv7)" ;;
    esac
    echo "== $triple: build"
    bash scripts/cross-build.sh "$t" build -q -p pincer --no-default-features --features demo
    bin=$CARGO_TARGET_DIR/$triple/debug/pincer
    file -b "$bin" | grep -Eq 'statically linked|static-pie linked' || die "$bin is not static: $(file -b "$bin")"
    echo "== $triple: pincer --version (qemu-user)"
    # No -L: a static binary needs no libraries, and this proves it.
    "$qemu" "$bin" --version
    echo "== $triple: pincer demo (qemu-user)"
    out=$(mktemp)
    "$qemu" "$bin" demo --json >"$out" || { cat "$out"; rm -f "$out"; die "pincer demo failed on $triple"; }
    # qemu-user implements neither Landlock nor the sandbox helper's
    # re-exec, so pincer must refuse to offer the shell here (fail closed)
    # and the demo must say so; the rest runs in full.
    python3 -c '
import json, sys
d = json.load(open(sys.argv[1]))
assert d["steps"] and d["agent"]["audit_verified"] and d["hardware"], "an incomplete report"
why = d["agent"]["shell_not_offered"]
assert why and "sandbox" in why, "a shell offered under qemu-user, where no sandbox can be built: %r" % why
print("demo: %d store steps, audit verified; shell refused: %s" % (len(d["steps"]), why[:60]))' "$out" ||
        { rm -f "$out"; die "pincer demo on $triple printed no report"; }
    rm -f "$out"
    echo "== $triple: the session store's tests (qemu-user)"
    bash scripts/cross-build.sh "$t" test -q -p pincer-core --lib session::
    echo "cross-test: $triple took $((SECONDS - start)) s"
done
