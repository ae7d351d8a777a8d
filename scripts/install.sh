#!/usr/bin/env bash
# Installs a pincer binary and a default config for one user, on the machine
# it runs on (a Raspberry Pi, a Jetson, a server):
#
#   scripts/install.sh [--service] [BINARY]
#
#   --service  also write the systemd unit for `pincer serve` with
#            `pincer service install`: a user unit (~/.config/systemd/user),
#            or a system one when run as root (it runs as the user `pincer`,
#            who must exist and own PINCER_HOME). It prints the systemctl
#            commands to run next and runs none of them.
#   BINARY   a pincer binary to install, e.g. one of the static binaries of
#            scripts/release.sh copied to the board; without it, the script
#            builds one here with `cargo build --release -p pincer` (fine on
#            a PC, far too slow and too hungry on a Pi Zero: build elsewhere).
#
# It puts the binary at $PREFIX/bin/pincer (default PREFIX: ~/.local, or
# /usr/local when run as root), checks that it runs (`pincer --version`), and
# writes the commented default config into the state directory ($PINCER_HOME,
# else ~/.pincer) with `pincer init`, unless a config is already there. It
# never overwrites a config and never touches the audit trail or sessions.
# Re-running it replaces the binary only (atomically, so a running pincer
# keeps its old file).
#
# Without --service the systemd unit for `pincer serve` is not installed;
# `pincer service install` (docs/serve.md) writes it later.
set -euo pipefail
cd "$(dirname "$0")/.."

die() { echo "install: $*" >&2; exit 1; }

if [[ $(id -u) == 0 ]]; then
    prefix=${PREFIX:-/usr/local}
else
    prefix=${PREFIX:-$HOME/.local}
fi

service=0
if [[ ${1:-} == --service ]]; then
    service=1
    shift
fi

case $# in
0)
    command -v cargo >/dev/null || die "no BINARY given and no cargo to build one (see scripts/release.sh)"
    cargo build --release --locked -p pincer
    src=target/release/pincer
    ;;
1) src=$1 ;;
*) die "usage: scripts/install.sh [--service] [BINARY]" ;;
esac
[[ -f $src ]] || die "$src is not a file"
# A binary for another CPU fails here, before anything is replaced.
version=$("$src" --version 2>&1) || die "$src does not run on this machine: $version"
# The features it names: `pincer 0.1.0 (commit …, features: a, b)`.
features=${version##*features: }
has_feature() { [[ ", ${features%)}, " == *", $1, "* ]]; }
# The kernel build (--no-default-features) has no daemon: refused before
# anything is replaced.
if [[ $service == 1 ]] && ! has_feature serve; then
    die "--service: $src was built without the \`serve\` feature (the kernel has no pincer serve)"
fi

mkdir -p "$prefix/bin"
dest=$prefix/bin/pincer
install -m 0755 "$src" "$dest.new"
mv -f "$dest.new" "$dest"
echo "installed $dest: $version"

home=${PINCER_HOME:-$HOME/.pincer}
if [[ -e $home/config.toml ]]; then
    echo "kept the config at $home/config.toml"
else
    "$dest" init || die "pincer init failed"
fi
if [[ $service == 1 ]]; then
    if [[ $(id -u) == 0 ]]; then
        "$dest" service install || die "pincer service install failed"
    else
        "$dest" service install --user || die "pincer service install --user failed"
    fi
fi
if has_feature tls; then
    echo "next: set OPENAI_API_KEY or ANTHROPIC_API_KEY (or a local server in the config), then: pincer doctor"
else
    echo "next: this build has no TLS: point it at a local server over http:// (OPENAI_BASE_URL or [providers] in the config), then: pincer doctor"
fi
case :$PATH: in
*":$prefix/bin:"*) ;;
*) echo "note: $prefix/bin is not on PATH" ;;
esac
