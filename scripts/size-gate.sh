#!/usr/bin/env bash
# The binary size gate: builds the minimal "kernel" (`cargo build --release
# -p pincer --no-default-features`) and the full default build, strips both
# and fails when the kernel is larger than the limit, naming the numbers.
#
#   scripts/size-gate.sh                 # gate the kernel, report the full build
#   scripts/size-gate.sh --kernel-only   # skip the full build (one release build less)
#   scripts/size-gate.sh --each          # also the kernel plus each feature alone: what
#                                        # each feature costs (one release build per feature)
#
# Environment:
#   PINCER_SIZE_LIMIT   the kernel's limit in bytes (default below)
#   PINCER_CI_CACHE     the CI cache (default ${XDG_CACHE_HOME:-$HOME/.cache}/pincer-ci)
#   CARGO_TARGET_DIR    where to build (default $PINCER_CI_CACHE/size-target: the
#                       release builds survive a fresh clone, so CI rebuilds only
#                       what changed; cold, the two builds take about 10-15 min)
#
# The limit is the goal, 3 MiB (3 145 728 bytes). The release profile and
# crates/pincer/build.rs (no unwind tables, DT_RELR relocations) and
# .cargo/config.toml (LLVM's machine outliner) are what keep the kernel
# under it; docs/edge.md says where its bytes go. A change that grows the
# kernel past it pays for its bytes, or goes behind a feature.
set -euo pipefail
cd "$(dirname "$0")/.."

goal=3145728
limit=${PINCER_SIZE_LIMIT:-$goal}
[[ $limit =~ ^[0-9]+$ ]] || { echo "size-gate: PINCER_SIZE_LIMIT must be a number of bytes, not '$limit'" >&2; exit 2; }
kernel_only=0 each=0
case ${1:-} in
"") ;;
--kernel-only) kernel_only=1 ;;
--each) each=1 ;;
*) echo "size-gate: unknown argument '$1' (--kernel-only or --each)" >&2; exit 2 ;;
esac

# A RUSTFLAGS variable replaces .cargo/config.toml's flags (the machine
# outliner, about 120 KiB): the number would not be the kernel's.
if [[ -n ${RUSTFLAGS:-}${CARGO_ENCODED_RUSTFLAGS:-} ]]; then
    echo "size-gate: RUSTFLAGS or CARGO_ENCODED_RUSTFLAGS is set; it replaces the flags of .cargo/config.toml, so the build would not be the kernel: unset it" >&2
    exit 2
fi
cache=${PINCER_CI_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/pincer-ci}
export CARGO_TARGET_DIR=${CARGO_TARGET_DIR:-$cache/size-target}
target_dir=$CARGO_TARGET_DIR
mib() { awk -v b="$1" 'BEGIN { printf "%.2f MiB", b / 1048576 }'; }
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

# The stripped size of a release build with the given cargo feature flags.
# The release profile strips already; strip again so that the number is the
# stripped one even if someone turns the profile's `strip` off.
stripped_size() {
    local name=$1
    shift
    local start=$SECONDS
    cargo build --release --locked -q -p pincer "$@" >&2
    strip --strip-all -o "$tmp/$name" "$target_dir/release/pincer"
    echo "size-gate: $name build took $((SECONDS - start)) s: $("$tmp/$name" --version)" >&2
    stat -c %s "$tmp/$name"
}

kernel=$(stripped_size kernel --no-default-features)
echo "kernel (--no-default-features), stripped: $kernel bytes ($(mib "$kernel")); limit $limit ($(mib "$limit")); goal $goal ($(mib "$goal"))"
((kernel > limit)) || echo "  $((limit - kernel)) bytes under the limit"
if ((!kernel_only)); then
    full=$(stripped_size full)
    echo "full (default features), stripped: $full bytes ($(mib "$full")); the features add $((full - kernel)) bytes"
fi
if ((each)); then
    # The features as crates/pincer/Cargo.toml lists them in `default`.
    feats=$(sed -n 's/^default = \[\(.*\)\]/\1/p' crates/pincer/Cargo.toml | tr -d '" ' | tr , ' ')
    for f in $feats; do
        n=$(stripped_size "kernel+$f" --no-default-features --features "$f")
        echo "kernel + $f: $n bytes ($(mib "$n")), +$((n - kernel)) bytes"
    done
fi
if ((kernel > limit)); then
    echo "size-gate: FAIL: the kernel is $kernel bytes, $((kernel - limit)) over the limit of $limit" >&2
    exit 1
fi
echo "size-gate: ok"
