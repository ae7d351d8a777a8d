#!/usr/bin/env bash
# Release artefacts: static pincer binaries for the boards and for PCs, in
# both feature sets, with their SHA-256 sums.
#
#   scripts/release.sh [TARGET...]      # default: x86_64 aarch64 armv7
#
# Writes dist/pincer-<version>-<triple>[-kernel] (the full default build and
# the `--no-default-features` kernel) and dist/SHA256SUMS. Each binary is
# static glibc (scripts/cross-build.sh says how the board targets are built
# here), built with the release profile (on x86_64 crates/pincer/build.rs
# links it without unwind tables and with DT_RELR relocations) plus `-z
# pack-relative-relocs` for every target (DT_RELR, about 200 KiB less; the
# static glibc here is 2.36, which knows it), and each is checked to run:
# natively for x86_64, under qemu-user for the boards (`--version`).
#
# A fat-LTO release build per target and feature set: about 5-10 minutes
# each on a 2-core machine. Not part of CI (CI builds the board targets
# once, faster, and runs them; see scripts/cross-test.sh).
set -euo pipefail
cd "$(dirname "$0")/.."

targets=("$@")
((${#targets[@]})) || targets=(x86_64 aarch64 armv7)
version=$(sed -n 's/^version = "\(.*\)"/\1/p' Cargo.toml | head -1)
[[ -n $version ]] || { echo "release: no version in Cargo.toml" >&2; exit 1; }
mkdir -p dist

for t in "${targets[@]}"; do
    for set in full kernel; do
        flags=()
        suffix=
        if [[ $set == kernel ]]; then flags=(--no-default-features) suffix=-kernel; fi
        log=$(mktemp)
        PINCER_CROSS_LINK_ARGS="-Wl,-z,pack-relative-relocs" \
            bash scripts/cross-build.sh "$t" build --release -p pincer "${flags[@]}" 2>"$log" ||
            { cat "$log" >&2; exit 1; }
        triple=$(sed -n 's/^cross-build: \([^ ]*\) with .*/\1/p' "$log" | head -1)
        rm -f "$log"
        out=dist/pincer-$version-$triple$suffix
        cp "${CARGO_TARGET_DIR:-target/cross}/$triple/release/pincer" "$out"
        case $triple in
        aarch64-*) run=(qemu-aarch64) ;;
        armv7-*) run=(qemu-arm) ;;
        *) run=() ;;
        esac
        file "$out" | grep -q 'statically linked\|static-pie linked' ||
            { echo "release: $out is not static: $(file -b "$out")" >&2; exit 1; }
        echo "$out: $(stat -c %s "$out") bytes, $("${run[@]}" "$out" --version)"
    done
done
(cd dist && sha256sum pincer-"$version"-* >SHA256SUMS)
echo "dist/SHA256SUMS:"
cat dist/SHA256SUMS
