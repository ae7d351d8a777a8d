#!/usr/bin/env bash
# Static pincer binaries for the boards, built on an x86_64 machine:
#
#   scripts/cross-build.sh TARGET CARGO-SUBCOMMAND [ARGS...]
#   scripts/cross-build.sh aarch64 build --release -p pincer
#   scripts/cross-build.sh armv7 build --release -p pincer --no-default-features
#   scripts/cross-build.sh aarch64 test -p pincer-core --lib session   # runs under qemu-user
#   scripts/cross-build.sh aarch64 setup                               # only the toolchain
#
#   TARGET   aarch64   aarch64-unknown-linux-gnu       Pi Zero 2 W, Pi 3/4/5 (64-bit OS), Jetson
#            armv7     armv7-unknown-linux-gnueabihf   Pi 2/3/4 on a 32-bit OS (ARMv7 + VFPv3-D16)
#            x86_64    x86_64-unknown-linux-gnu        PCs and servers (the installed toolchain)
#
# The binaries are static (glibc, `-C target-feature=+crt-static`): copy one
# file to the board, no libraries needed. They land in
# target/cross/<triple>/<profile>/pincer.
#
# Why this way. The installed Rust toolchain has only the x86_64 standard
# library and rustup cannot fetch another here, and a standard library must
# come from the very compiler that uses it. Debian bookworm ships `rustc-web`
# (a newer Rust, for Firefox/Chromium security updates) and builds its
# standard library, `libstd-rust-web-dev`, for every Debian architecture from
# the same source and version. So for aarch64 and armv7 this script uses
# Debian's rustc-web with Debian's arm64 and armhf builds of its standard
# library, all of one version, unpacked into a cache directory (nothing is
# installed system-wide: rustc-web conflicts with rustup). It fetches them
# with apt-get under a private configuration (its own sources list, lists and
# architectures), because adding a foreign architecture to the system's apt
# breaks `apt-get update` on these machines. C code (SQLite, ring) and the
# final link use Debian's gcc cross compilers and their static glibc; tests
# run under qemu-user (`CARGO_TARGET_<T>_RUNNER`). The x86_64 target uses the
# installed toolchain, as every other build does.
#
# Known limit of static glibc: name lookups (getaddrinfo) go through NSS; the
# `files` and `dns` sources are built in, but any other source named for
# `hosts` in /etc/nsswitch.conf (mdns4_minimal on Raspberry Pi OS) is loaded
# as a shared library at run time, which glibc supports only when the board's
# glibc is the version the binary was linked with (2.36, bookworm). A board
# with another glibc may fail to use that source; `files` and `dns` still work.
#
# Environment:
#   PINCER_CI_CACHE            cache root (default ${XDG_CACHE_HOME:-$HOME/.cache}/pincer-ci);
#                              the toolchain goes to $PINCER_CI_CACHE/cross (~760 MB)
#   PINCER_RUST_WEB_VERSION    a Debian version of rustc-web to use (default: the newest
#                              already in the cache, else the archive's current one)
#   PINCER_CROSS_REFRESH=1     ask the archive for a newer rustc-web even if one is cached
#   PINCER_CROSS_LINK_ARGS     extra linker arguments, space-separated (scripts/release.sh
#                              passes -Wl,-z,pack-relative-relocs)
#   CARGO_TARGET_DIR           default target/cross (separate: another compiler)
set -euo pipefail
cd "$(dirname "$0")/.."
repo=$(pwd)

die() { echo "cross-build: $*" >&2; exit 1; }
usage() { sed -n '2,/^set -euo/{/^#/s/^# \{0,1\}//p}' "$0"; }

[[ $# -ge 1 ]] || { usage; exit 2; }
case $1 in
-h | --help) usage; exit 0 ;;
aarch64 | aarch64-unknown-linux-gnu) triple=aarch64-unknown-linux-gnu deb_arch=arm64 gnu=aarch64-linux-gnu qemu=qemu-aarch64 ;;
armv7 | armv7-unknown-linux-gnueabihf) triple=armv7-unknown-linux-gnueabihf deb_arch=armhf gnu=arm-linux-gnueabihf qemu=qemu-arm ;;
x86_64 | x86_64-unknown-linux-gnu) triple=x86_64-unknown-linux-gnu deb_arch= gnu= qemu= ;;
*) die "unknown target '$1' (aarch64, armv7 or x86_64)" ;;
esac
shift
[[ $# -ge 1 ]] || die "no cargo subcommand (build, test, ... or setup)"

cache=${PINCER_CI_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/pincer-ci}/cross
mkdir -p "$cache"
cache=$(realpath "$cache")

# ------------------------------------------------------------ host packages
need_pkgs() { # install the Debian packages named that are missing
    local missing=() p
    for p in "$@"; do dpkg -s "$p" >/dev/null 2>&1 || missing+=("$p"); done
    ((${#missing[@]})) || return 0
    echo "cross-build: installing ${missing[*]}" >&2
    export DEBIAN_FRONTEND=noninteractive
    apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null ||
        { apt-get update -qq && apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null; } ||
        die "apt-get install ${missing[*]} failed"
}

# ------------------------------------------------------------ Debian's rustc-web, privately
# apt-get with its own state under $cache/apt: Debian's main and security
# archives for amd64, arm64 and armhf, nothing from the system's sources.
apt_dir=$cache/apt
papt() {
    local sub=$1
    shift
    "$sub" -q -o Debug::NoLocking=1 \
        -o APT::Architecture=amd64 -o APT::Architectures="amd64,arm64,armhf" \
        -o Dir::State="$apt_dir/state" -o Dir::State::Lists="$apt_dir/state/lists" \
        -o Dir::State::status="$apt_dir/state/status" -o Dir::Cache="$apt_dir/cache" \
        -o Dir::Etc::SourceList="$apt_dir/sources.list" -o Dir::Etc::SourceParts="$apt_dir/empty" \
        -o Dir::Etc::Preferences="$apt_dir/empty/none" -o Dir::Etc::PreferencesParts="$apt_dir/empty" \
        -o APT::Sandbox::User=root "$@"
}
papt_update() {
    mkdir -p "$apt_dir/state/lists/partial" "$apt_dir/cache/archives/partial" "$apt_dir/empty"
    local key=/usr/share/keyrings/debian-archive-keyring.gpg
    [[ -s $key ]] || die "no $key (apt-get install debian-archive-keyring)"
    printf '%s\n' \
        "deb [signed-by=$key] http://deb.debian.org/debian bookworm main" \
        "deb [signed-by=$key] http://deb.debian.org/debian-security bookworm-security main" \
        >"$apt_dir/sources.list"
    : >"$apt_dir/state/status"
    papt apt-get update -qq >/dev/null || die "apt-get update (private, for rustc-web) failed"
}
# The first dependency of package PKG=VER whose name matches REGEX.
dep_named() { papt apt-cache depends "$1" 2>/dev/null | awk -v re="$2" '$1 ~ /Depends:/ && $2 ~ re { print $2; exit }'; }

rust_web() { # sets $tc to a complete toolchain directory
    local v=${PINCER_RUST_WEB_VERSION:-}
    if [[ -z $v && ${PINCER_CROSS_REFRESH:-0} != 1 ]]; then
        v=$(find "$cache" -maxdepth 2 -name .complete -path '*/rust-web-*' -printf '%h\n' 2>/dev/null |
            sed 's|.*/rust-web-||' | sort -V | tail -1)
    fi
    if [[ -n $v && -e $cache/rust-web-$v/.complete ]]; then
        tc=$cache/rust-web-$v
        return
    fi
    echo "cross-build: fetching Debian's rustc-web ${v:-(current)} into $cache" >&2
    papt_update
    if [[ -z $v ]]; then
        v=$(papt apt-cache policy rustc-web:amd64 | awk '/Candidate:/ { print $2 }')
        [[ -n $v && $v != "(none)" ]] || die "the archive has no rustc-web"
    fi
    local std llvm llvm_v
    std=$(dep_named "libstd-rust-web-dev:amd64=$v" '^libstd-rust-web-[0-9]')
    llvm=$(dep_named "$std:amd64=$v" '^libllvm[0-9]+')
    [[ -n $std && -n $llvm ]] || die "cannot tell rustc-web $v's runtime packages from the archive"
    llvm_v=$(papt apt-cache policy "$llvm:amd64" | awk '/Candidate:/ { print $2 }')
    local dl
    dl=$(mktemp -d "$cache/.dl.XXXXXX")
    # shellcheck disable=SC2064
    trap "rm -rf '$dl'" EXIT
    (cd "$dl" && papt apt-get download -qq \
        "rustc-web:amd64=$v" "$std:amd64=$v" "libstd-rust-web-dev:amd64=$v" \
        "libstd-rust-web-dev:arm64=$v" "libstd-rust-web-dev:armhf=$v" "$llvm:amd64=$llvm_v") ||
        die "apt-get download of rustc-web $v failed (a version no longer in the archive? unset PINCER_RUST_WEB_VERSION)"
    local d f
    d=$dl/root
    for f in "$dl"/*.deb; do dpkg-deb -x "$f" "$d"; done
    rm -rf "$d/usr/share/doc" "$d/usr/share/man"
    mkdir -p "$d/bin"
    # rustc finds its sysroot (usr/) from its own path; the wrapper gives it
    # its shared libraries (librustc_driver, libLLVM), kept in the cache.
    printf '#!/bin/sh\nLD_LIBRARY_PATH="%s/usr/lib/x86_64-linux-gnu${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}" exec "%s/usr/bin/rustc" "$@"\n' \
        "$cache/rust-web-$v" "$cache/rust-web-$v" >"$d/bin/rustc"
    chmod +x "$d/bin/rustc"
    # libLLVM's own dependencies (libz3, libxml2, ...) come from the system.
    local libs
    libs=$(papt apt-cache depends "$llvm:amd64=$llvm_v" | awk '$1 == "Depends:" && $2 !~ /^</ { print $2 }' | sort -u)
    # shellcheck disable=SC2086
    need_pkgs $libs
    rm -rf "$cache/rust-web-$v"
    mv "$d" "$cache/rust-web-$v"
    rm -rf "$dl"
    trap - EXIT
    tc=$cache/rust-web-$v
    "$tc/bin/rustc" -vV >/dev/null || die "the unpacked rustc-web $v does not run: $("$tc/bin/rustc" -vV 2>&1 | tail -1)"
    date -u +%FT%TZ >"$tc/.complete"
}

# ------------------------------------------------------------ environment
unset CARGO_ENCODED_RUSTFLAGS
if [[ -n ${RUSTFLAGS:-} ]]; then
    echo "cross-build: ignoring RUSTFLAGS=$RUSTFLAGS (it would replace the static-linking flag)" >&2
    unset RUSTFLAGS
fi
T=$(echo "$triple" | tr 'a-z-' 'A-Z_')
t=${triple//-/_}
export CARGO_TARGET_DIR=${CARGO_TARGET_DIR:-$repo/target/cross}
flags="-C target-feature=+crt-static"
for a in ${PINCER_CROSS_LINK_ARGS:-}; do flags+=" -C link-arg=$a"; done
export "CARGO_TARGET_${T}_RUSTFLAGS=$flags"
if [[ -n $deb_arch ]]; then
    need_pkgs "gcc-$gnu" "libc6-dev-$deb_arch-cross" qemu-user
    rust_web
    export RUSTC=$tc/bin/rustc
    export "CARGO_TARGET_${T}_LINKER=$gnu-gcc" "CC_$t=$gnu-gcc" "AR_$t=$gnu-ar"
    # Tests and `cargo run` under qemu-user; -L for the rare dynamic helper.
    export "CARGO_TARGET_${T}_RUNNER=$qemu -L /usr/$gnu"
    [[ -d $("$RUSTC" --print target-libdir --target "$triple") ]] ||
        die "rustc-web in $tc has no standard library for $triple"
fi
echo "cross-build: $triple with $("${RUSTC:-rustc}" --version), target dir $CARGO_TARGET_DIR" >&2

if [[ $1 == setup ]]; then
    exit 0
fi
exec cargo "$1" --locked --target "$triple" "${@:2}"
