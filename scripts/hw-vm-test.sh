#!/usr/bin/env bash
# Proves pincer's Linux hardware backends against real kernel drivers, with no
# board: boots a stock Debian kernel under qemu (TCG, no KVM) from a busybox
# initramfs, loads i2c-dev, `i2c-stub chip_addr=0x48` and an out-of-tree
# gpio-sim (Debian does not build it), configures a 54-line gpio-sim bank
# labelled "pinctrl-bcm2835" (the Raspberry Pi's GPIO controller), and runs
# real `pincer hw` commands inside the VM against /dev/i2c-* and /dev/gpiochip*.
#
#   scripts/hw-vm-test.sh [--pincer PATH]
#
#   --pincer PATH   use this pincer binary instead of building one (a dynamic
#                   binary works too: its loader and libraries are copied in)
#
# Environment:
#   PINCER_VM_CACHE       cache dir (default $HOME/.cache/pincer-hw-vm): the
#                         kernel and source .debs, the extracted kernel, the
#                         gpio-sim module
#   PINCER_VM_TARGET_DIR  CARGO_TARGET_DIR for the static build (default
#                         target/hw-vm; separate because RUSTFLAGS differ)
#   PINCER_VM_KEEP=1      keep the run directory (initramfs, serial log)
#
# Stages: host packages (installed only when missing), kernel + source .debs
# (apt-get download, pinned to the installed linux-headers version), gpio-sim
# module (built once, cached), pincer (static glibc, dev profile without debug
# info: the fastest build that works), initramfs (every run), boot, check.
# The VM prints exactly one `PINCER-HW-VM: PASS` or `PINCER-HW-VM: FAIL ...`
# line; qemu exits 0 whatever happens inside, so that line is the verdict.
# Before pincer runs, a preflight checks the drivers with busybox's i2c
# applets and a tiny static GPIO v2 prober, so a broken VM is not blamed on
# pincer.
#
# Checks (strict where it matters, lenient about extra JSON fields):
#   scan finds 0x48 and nothing else; write 00 17 80 / read reg 0x00 len 2
#   gives "17 80" via smbus; write 05 aa / read reg 5 gives "aa"; 0x49 exits 1
#   with "no device"; 0x78 exits 2 (address); header pin 11 (line 17) follows
#   gpio-sim's pull-up/pull-down; `gpio write 12 1 --hold-ms 4000` shows in
#   sim_gpio18/value within ~3 s; pin 3 exits 2 with "pinmux"; `audit verify`
#   passes and the log holds human:cli i2c_read entries.
#
# Timings, 2 cores, TCG, measured while other builds loaded the machine
# (load ~3.5): cold (fresh cache dir and target dir; packages installed,
# crates fetched) 155 s = downloads 6 + kernel 5 + gpio-sim 15 + pincer
# build 102 + VM 26; warm 27-29 s (the VM ~25 s of it). A fresh machine adds
# ~20 s of apt-get install. As the last stage of .ci/run on a fresh clone of
# main: 174 s (pincer build 123 s, VM 20 s) of a 12.5 min .ci/run.
# Profiles for the static build, cold: dev without debug info 2m04, dev
# 2m14, bench 4m09 (release: fat LTO, slower still).
set -euo pipefail
cd "$(dirname "$0")/.."
repo=$(pwd)

kver=6.1.0-57-amd64
cache=${PINCER_VM_CACHE:-$HOME/.cache/pincer-hw-vm}
target_dir=${PINCER_VM_TARGET_DIR:-$repo/target/hw-vm}
qemu_timeout=300
pincer_bin=

usage() { sed -n '2,/^set -euo/{/^#/s/^# \{0,1\}//p}' "$0"; }
while (($#)); do
    case $1 in
    --pincer)
        [[ $# -ge 2 ]] || { echo "hw-vm-test: --pincer needs a path" >&2; exit 2; }
        pincer_bin=$(realpath "$2")
        shift 2
        ;;
    -h | --help) usage; exit 0 ;;
    *) echo "hw-vm-test: unknown argument: $1 (see --help)" >&2; exit 2 ;;
    esac
done

t0=$(date +%s.%N)
now() { date +%s.%N; }
since() { awk -v a="$1" -v b="$(now)" 'BEGIN { printf "%.1f", b - a }'; }
stage() { echo "== $* (t=$(since "$t0")s)"; }
die() { echo "hw-vm-test: FAIL: $*" >&2; echo "elapsed: $(since "$t0")s" >&2; exit 1; }

# ------------------------------------------------------------ host packages
stage "host packages"
pkgs=(qemu-system-x86 busybox-static cpio kmod "linux-headers-$kver" gcc make xz-utils libc6-dev binutils)
missing=()
for p in "${pkgs[@]}"; do
    dpkg -s "$p" >/dev/null 2>&1 || missing+=("$p")
done
if ((${#missing[@]})); then
    echo "installing: ${missing[*]}"
    export DEBIAN_FRONTEND=noninteractive
    if ! apt-get install -y --no-install-recommends "${missing[@]}"; then
        echo "install failed; refreshing the package lists and retrying"
        apt-get update
        apt-get install -y --no-install-recommends "${missing[@]}" || die "apt-get install ${missing[*]}"
    fi
else
    echo "all present: ${pkgs[*]}"
fi
# The source must match the headers the module is built against.
kpkgver=$(dpkg-query -W -f='${Version}' "linux-headers-$kver")
echo "kernel $kver, Debian version $kpkgver"

mkdir -p "$cache"
cache=$(realpath "$cache")
exec 9>"$cache/.lock"
flock 9 # one run at a time per cache

# ------------------------------------------------------------ downloads
stage "downloads (cache: $cache)"
debs=$cache/debs
mkdir -p "$debs"
img_deb=$debs/linux-image-${kver}_${kpkgver}_amd64.deb
src_deb=$debs/linux-source-6.1_${kpkgver}_all.deb
fetch() { # fetch PKG=VERSION FILE
    if [[ -s $2 ]]; then
        echo "cached: ${2##*/}"
        return
    fi
    local tmp
    tmp=$(mktemp -d "$debs/.dl.XXXXXX")
    # Sandbox user root: the cache may live in root's 0700 home, out of _apt's reach.
    (cd "$tmp" && apt-get -q -o APT::Sandbox::User=root download "$1") || {
        rm -rf "$tmp"
        die "apt-get download $1 (is the version still in the archive? the script pins the installed headers' version)"
    }
    mv "$tmp"/*.deb "$2"
    rm -rf "$tmp"
}
fetch "linux-image-$kver=$kpkgver" "$img_deb"
fetch "linux-source-6.1=$kpkgver" "$src_deb"

# ------------------------------------------------------------ kernel
stage "kernel"
kdir=$cache/kernel-$kver-$kpkgver
if [[ ! -f $kdir/.done ]]; then
    rm -rf "$kdir"
    mkdir -p "$kdir/x"
    m=./lib/modules/$kver
    dpkg-deb --fsys-tarfile "$img_deb" | tar -x -C "$kdir/x" \
        "./boot/vmlinuz-$kver" "$m/modules.order" "$m/modules.builtin" "$m/modules.builtin.modinfo" \
        "$m/kernel/drivers/i2c/i2c-dev.ko" "$m/kernel/drivers/i2c/i2c-stub.ko" "$m/kernel/fs/configfs/configfs.ko"
    # XZ decompression is slow under TCG: boot the ELF vmlinux directly (CONFIG_PVH=y).
    bz=$kdir/x/boot/vmlinuz-$kver
    while read -r off; do
        tail -c +$((off + 1)) "$bz" | xz -dc --single-stream >"$kdir/vmlinux" 2>/dev/null || true
        if [[ $(head -c 4 "$kdir/vmlinux" | od -An -c | tr -d ' ') == '177ELF' ]]; then
            break
        fi
        rm -f "$kdir/vmlinux"
    done < <(LC_ALL=C grep -obUaP '\xfd7zXZ\x00' "$bz" | cut -d: -f1)
    [[ -s $kdir/vmlinux ]] || die "could not extract an ELF vmlinux from $bz"
    touch "$kdir/.done"
    echo "extracted vmlinux and modules"
else
    echo "cached: $kdir"
fi

# ------------------------------------------------------------ gpio-sim
stage "gpio-sim module"
simko=$cache/gpio-sim-$kver-$kpkgver/gpio-sim.ko
if [[ ! -s $simko ]]; then
    b=$(mktemp -d "$cache/.gpio-sim.XXXXXX")
    s=linux-source-6.1
    echo "extracting gpio-sim.c, gpiolib.h, irq_sim.c from linux-source-6.1 $kpkgver"
    dpkg-deb --fsys-tarfile "$src_deb" | tar -xO ./usr/src/linux-source-6.1.tar.xz | xz -dc |
        tar -x -C "$b" "$s/drivers/gpio/gpio-sim.c" "$s/drivers/gpio/gpiolib.h" "$s/kernel/irq/irq_sim.c"
    # The module name must not equal a source file's name, and irq_sim (off in
    # Debian's config) is compiled in; its one unexported call is irq_to_desc.
    cp "$b/$s/drivers/gpio/gpio-sim.c" "$b/sim_main.c"
    cp "$b/$s/drivers/gpio/gpiolib.h" "$b/gpiolib.h"
    sed 's/handle_simple_irq(irq_to_desc(irqnum));/generic_handle_irq(irqnum);/' \
        "$b/$s/kernel/irq/irq_sim.c" >"$b/irq_sim.c"
    grep -q 'generic_handle_irq(irqnum);' "$b/irq_sim.c" || die "irq_sim.c changed: the irq_to_desc patch no longer applies"
    printf 'obj-m := gpio-sim.o\ngpio-sim-y := sim_main.o irq_sim.o\n' >"$b/Kbuild"
    make -s -C "/usr/src/linux-headers-$kver" M="$b" modules || die "gpio-sim module build failed (kept in $b)"
    mkdir -p "${simko%/*}"
    mv "$b/gpio-sim.ko" "$simko"
    rm -rf "$b"
    echo "built $simko"
else
    echo "cached: $simko"
fi

# ------------------------------------------------------------ pincer
stage "pincer binary"
if [[ -z $pincer_bin ]]; then
    # dev profile without debug info: the release profile's fat LTO is slow and
    # `bench` (opt 3, thin LTO) builds slower too; the VM needs no speed.
    export CARGO_PROFILE_DEV_DEBUG=0
    build() {
        cargo build --locked --target x86_64-unknown-linux-gnu -p pincer
    }
    echo "cargo build (static glibc) into $target_dir"
    if CARGO_TARGET_DIR=$target_dir RUSTFLAGS='-C target-feature=+crt-static' build; then
        pincer_bin=$target_dir/x86_64-unknown-linux-gnu/debug/pincer
    else
        echo "static build failed; building a dynamic binary and copying its libraries into the VM"
        CARGO_TARGET_DIR=$target_dir-dyn build || die "cargo build failed"
        pincer_bin=$target_dir-dyn/x86_64-unknown-linux-gnu/debug/pincer
    fi
fi
[[ -x $pincer_bin ]] || die "no executable pincer at $pincer_bin"
command -v file >/dev/null && file -b "$pincer_bin"
if readelf -l "$pincer_bin" | grep -q 'program interpreter'; then
    pincer_static=0
    echo "pincer is dynamic: $pincer_bin (loader and libraries go into the initramfs)"
else
    pincer_static=1
    echo "pincer is static: $pincer_bin"
fi

# ------------------------------------------------------------ initramfs
stage "initramfs"
work=$(mktemp -d /tmp/pincer-hw-vm.XXXXXX)
if [[ ${PINCER_VM_KEEP:-0} == 1 ]]; then
    echo "keeping $work"
else
    trap 'rm -rf "$work"' EXIT
fi
root=$work/root
mkdir -p "$root"/{bin,dev,proc,sys,tmp,root,lib/modules}
cp /bin/busybox "$root/bin/busybox"
for a in $("$root/bin/busybox" --list); do
    [[ $a == busybox || -e $root/bin/$a ]] || ln -s busybox "$root/bin/$a"
done
ln -s bin "$root/sbin"

# Modules: the three stock ones and gpio-sim, with a modules.dep for busybox modprobe.
cp -a "$kdir/x/lib/modules/$kver" "$root/lib/modules/"
mkdir -p "$root/lib/modules/$kver/extra"
cp "$simko" "$root/lib/modules/$kver/extra/"
depmod -b "$root" "$kver"

# A small static GPIO v2 uAPI prober: checks the chardev independently of pincer.
cat >"$work/gpioprobe.c" <<'GPIOPROBE'
#include <fcntl.h>
#include <linux/gpio.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <unistd.h>

/* gpioprobe info CHIP | get CHIP LINE | set CHIP LINE VALUE HOLD_MS */
int main(int argc, char **argv) {
    if (argc < 3) goto usage;
    int fd = open(argv[2], O_RDWR | O_CLOEXEC);
    if (fd < 0) { perror(argv[2]); return 1; }
    if (!strcmp(argv[1], "info")) {
        struct gpiochip_info ci;
        memset(&ci, 0, sizeof ci);
        if (ioctl(fd, GPIO_GET_CHIPINFO_IOCTL, &ci) < 0) { perror("GPIO_GET_CHIPINFO"); return 1; }
        printf("name=%s label=%s lines=%u\n", ci.name, ci.label, ci.lines);
        return 0;
    }
    int set = !strcmp(argv[1], "set");
    if (!(set ? argc == 6 : argc == 4 && !strcmp(argv[1], "get"))) goto usage;
    struct gpio_v2_line_request req;
    memset(&req, 0, sizeof req);
    req.offsets[0] = (unsigned)atoi(argv[3]);
    req.num_lines = 1;
    strcpy(req.consumer, "gpioprobe");
    req.config.flags = set ? GPIO_V2_LINE_FLAG_OUTPUT : GPIO_V2_LINE_FLAG_INPUT;
    if (set) {
        req.config.num_attrs = 1;
        req.config.attrs[0].attr.id = GPIO_V2_LINE_ATTR_ID_OUTPUT_VALUES;
        req.config.attrs[0].attr.values = atoi(argv[4]) ? 1 : 0;
        req.config.attrs[0].mask = 1;
    }
    if (ioctl(fd, GPIO_V2_GET_LINE_IOCTL, &req) < 0) { perror("GPIO_V2_GET_LINE"); return 1; }
    if (set) {
        printf("line %s driven to %d\n", argv[3], atoi(argv[4]) ? 1 : 0);
        fflush(stdout);
        usleep((useconds_t)atoi(argv[5]) * 1000);
        return 0;
    }
    struct gpio_v2_line_values v = {.bits = 0, .mask = 1};
    if (ioctl(req.fd, GPIO_V2_LINE_GET_VALUES_IOCTL, &v) < 0) { perror("GPIO_V2_LINE_GET_VALUES"); return 1; }
    printf("%d\n", (int)(v.bits & 1));
    return 0;
usage:
    fprintf(stderr, "usage: gpioprobe info CHIP | get CHIP LINE | set CHIP LINE VALUE HOLD_MS\n");
    return 2;
}
GPIOPROBE
gcc -static -O2 -Wall -Werror -o "$root/bin/gpioprobe" "$work/gpioprobe.c" || die "gpioprobe build failed"

# pincer (stripped: a smaller initramfs unpacks faster under TCG).
strip -o "$root/bin/pincer" "$pincer_bin" 2>/dev/null || cp "$pincer_bin" "$root/bin/pincer"
chmod 755 "$root/bin/pincer"
if ((!pincer_static)); then
    ldd "$pincer_bin" | awk '{ for (i = 1; i <= NF; i++) if ($i ~ /^\//) print $i }' | sort -u |
        while read -r lib; do
            mkdir -p "$root${lib%/*}"
            cp -L "$lib" "$root$lib"
        done
fi

# /init: everything below runs inside the VM (busybox sh).
cat >"$root/init" <<'VMINIT'
#!/bin/sh
export PATH=/bin HOME=/root
mount -t proc proc /proc
mount -t sysfs sys /sys
mount -t devtmpfs devtmpfs /dev

FAILS=""
ok() { echo "  ok: $*"; }
bad() { echo "  FAIL: $*"; FAILS="${FAILS:+$FAILS; }$*"; }
finish() {
    echo "PINCER-HW-VM: END"
    if [ -z "$FAILS" ]; then echo "PINCER-HW-VM: PASS"; else echo "PINCER-HW-VM: FAIL $FAILS"; fi
    poweroff -f
    sleep 5
    exit 1
}
abort() { bad "$*"; finish; }
# show FILE PREFIX: FILE for the transcript; lines over 400 characters are
# cut, and past $SHOW_LINES lines only a count is shown (checks always read
# the full output).
SHOW_LINES=1000
show() {
    awk -v p="$2" -v max="$SHOW_LINES" '
        NR <= max { if (length($0) > 400) $0 = substr($0, 1, 400) " ...(" length($0) " chars)"; print p $0 }
        END { if (NR > max) print p "... (" NR - max " more lines)" }' "$1"
}
# run CMD...: prints the command, its stdout, its stderr (prefixed) and exit
# code; leaves them in OUT, ERR, RC.
run() {
    echo "\$ $*"
    "$@" >/tmp/out 2>/tmp/err
    RC=$?
    OUT=$(cat /tmp/out)
    ERR=$(cat /tmp/err)
    show /tmp/out ""
    show /tmp/err "stderr: "
    echo "[exit $RC]"
}
# has [-i] TEXT: the last run's stdout or stderr contains TEXT.
has() { printf '%s\n%s\n' "$OUT" "$ERR" | grep -qF "$@"; }
# One-line JSON on stdout, read leniently (extra fields and spacing are fine):
# jstr KEY -> the string value, jnum KEY -> the integer value, jarr KEY -> the
# array's items without quotes or spaces ("0x48,0x49"). The last "KEY" wins.
jval() { printf '%s\n' "$OUT" | sed -n "s/.*\"$1\"[[:space:]]*:[[:space:]]*$2.*/\\1/p" | head -n 1; }
jstr() { jval "$1" '"\([^"]*\)"'; }
jnum() { jval "$1" '\(-\{0,1\}[0-9][0-9]*\)'; }
jarr() { jval "$1" '\[\([^]]*\)\]' | tr -d ' "'; }
# sysw VALUE FILE: a sysfs/configfs write, shown in the transcript.
sysw() {
    echo "\$ echo $1 > $2"
    echo "$1" >"$2"
}
# poll_value FILE WANT: up to ~3 s for FILE to read WANT.
poll_value() {
    i=0
    while [ $i -lt 30 ]; do
        [ "$(cat "$1" 2>/dev/null)" = "$2" ] && return 0
        sleep 0.1
        i=$((i + 1))
    done
    return 1
}

echo "PINCER-HW-VM: BEGIN (kernel $(uname -r))"
echo "--- setup"
modprobe configfs && mount -t configfs none /sys/kernel/config || abort "configfs"
modprobe i2c-dev || abort "modprobe i2c-dev"
modprobe i2c-stub chip_addr=0x48 || abort "modprobe i2c-stub"
modprobe gpio-sim || abort "modprobe gpio-sim"

BUS=""
for a in /sys/class/i2c-adapter/i2c-*; do
    [ "$(cat "$a/name" 2>/dev/null)" = "SMBus stub driver" ] && BUS=${a##*/i2c-}
done
[ -n "$BUS" ] || abort "no i2c adapter named 'SMBus stub driver'"
[ -c /dev/i2c-$BUS ] || abort "/dev/i2c-$BUS missing"
echo "i2c-stub is bus $BUS (/dev/i2c-$BUS)"

CFG=/sys/kernel/config/gpio-sim/pincer
mkdir "$CFG" "$CFG/bank0" || abort "gpio-sim configfs mkdir"
sysw pinctrl-bcm2835 "$CFG/bank0/label"
sysw 54 "$CFG/bank0/num_lines"
sysw 1 "$CFG/live" || abort "gpio-sim: live"
CHIP=$(cat "$CFG/bank0/chip_name")
SIM=/sys/devices/platform/$(cat "$CFG/dev_name")/$CHIP
[ -c "/dev/$CHIP" ] || abort "/dev/$CHIP missing"
[ -d "$SIM/sim_gpio17" ] || abort "no sim_gpio17 under $SIM"
echo "gpio-sim bank is /dev/$CHIP (sysfs $SIM)"

echo "--- preflight: the drivers themselves (busybox i2c applets, gpioprobe)"
run i2cdetect -y -r "$BUS" 0x03 0x77
found=$(printf '%s\n' "$OUT" | sed -n '2,$p' | sed 's/^[0-9a-f]*://' | tr ' ' '\n' | grep -E '^[0-9a-f]{2}$' | tr '\n' ' ')
[ "$RC" = 0 ] && [ "$found" = "48 " ] && ok "i2cdetect finds only 0x48" || bad "preflight i2cdetect: found '$found' (exit $RC)"
run i2cset -y "$BUS" 0x48 0x20 0x5a
run i2cget -y "$BUS" 0x48 0x20
[ "$OUT" = 0x5a ] && ok "i2c-stub register 0x20 holds 0x5a" || bad "preflight i2cget 0x20: '$OUT'"
run i2cget -y "$BUS" 0x49 0x00
[ "$RC" != 0 ] && ok "0x49 absent" || bad "preflight: 0x49 answered"
run gpioprobe info "/dev/$CHIP"
[ "$OUT" = "name=$CHIP label=pinctrl-bcm2835 lines=54" ] && ok "chip label and lines" || bad "preflight chip info: '$OUT'"
sysw pull-up "$SIM/sim_gpio17/pull"
run gpioprobe get "/dev/$CHIP" 17
[ "$OUT" = 1 ] && ok "line 17 follows pull-up" || bad "preflight line 17 pull-up read '$OUT'"
sysw pull-down "$SIM/sim_gpio17/pull"
run gpioprobe get "/dev/$CHIP" 17
[ "$OUT" = 0 ] && ok "line 17 follows pull-down" || bad "preflight line 17 pull-down read '$OUT'"
echo "\$ gpioprobe set /dev/$CHIP 18 1 1500 &"
gpioprobe set "/dev/$CHIP" 18 1 1500 &
P=$!
poll_value "$SIM/sim_gpio18/value" 1 && ok "line 18 driven high shows in sim_gpio18/value" || bad "preflight: sim_gpio18/value never read 1"
wait $P || bad "preflight: gpioprobe set exited $?"
poll_value "$SIM/sim_gpio18/value" 0 && ok "line 18 back to its pull (0) once released" || bad "preflight: sim_gpio18/value stuck after release"

echo "--- pincer hw (PINCER_BOARD=rpi: Raspberry Pi Zero 2 W pin table, chip by label)"
export PINCER_HOME=/tmp/ph PINCER_BOARD=rpi
run pincer --version
[ "$RC" = 0 ] || abort "pincer does not run in the VM: pincer --version exit $RC"
echo "\$ pincer hw --help >/dev/null"
pincer hw --help >/dev/null 2>&1 || abort "this pincer has no 'hw' command (built from a tree without the hw CLI?)"

run pincer hw info
[ "$RC" = 0 ] && ok "hw info" || bad "hw info: exit $RC"
run pincer hw info --json
[ "$RC" = 0 ] && has pinctrl-bcm2835 && ok "hw info --json sees the pinctrl-bcm2835 chip" ||
    bad "hw info --json: exit $RC, no pinctrl-bcm2835 chip in it"

run pincer hw scan --bus "$BUS" --json
found=$(jarr found)
[ "$RC" = 0 ] && [ "$found" = 0x48 ] && ok "scan finds 0x48 and nothing else" ||
    bad "hw scan --bus $BUS: exit $RC, found '$found', expected exactly 0x48"
run pincer hw scan --bus "$BUS"
[ "$RC" = 0 ] || bad "hw scan --bus $BUS (text): exit $RC"

run pincer hw write 0x48 0x00 0x17 0x80 --bus "$BUS" --json
[ "$RC" = 0 ] && ok "write 00 17 80 (via $(jstr path))" || bad "hw write 0x48 0x00 0x17 0x80: exit $RC"
run pincer hw read 0x48 --register 0x00 --len 2 --bus "$BUS" --json
data=$(jstr data) path=$(jstr path)
[ "$RC" = 0 ] && [ "$data" = "17 80" ] && [ "$path" = smbus ] && ok "register 0x00 reads 17 80 via smbus" ||
    bad "hw read 0x48 --register 0x00 --len 2: exit $RC, data '$data' path '$path', expected '17 80' via smbus"
run pincer hw read 0x48 --register 0x00 --len 2 --bus "$BUS"
[ "$RC" = 0 ] || bad "hw read (text): exit $RC"

run pincer hw write 0x48 0x05 0xaa --bus "$BUS" --json
[ "$RC" = 0 ] && ok "write 05 aa (via $(jstr path))" || bad "hw write 0x48 0x05 0xaa: exit $RC"
run pincer hw read 0x48 --register 5 --bus "$BUS" --json
data=$(jstr data) path=$(jstr path)
[ "$RC" = 0 ] && [ "$data" = aa ] && [ "$path" = smbus ] && ok "register 0x05 reads aa via smbus" ||
    bad "hw read 0x48 --register 5: exit $RC, data '$data' path '$path', expected 'aa' via smbus"
run i2cget -y "$BUS" 0x48 0x05
[ "$OUT" = 0xaa ] && ok "busybox i2cget agrees: 0xaa" || bad "i2cget after pincer's write: '$OUT'"

run pincer hw read 0x49 --bus "$BUS"
[ "$RC" = 1 ] && has -i "no device" && ok "absent 0x49: exit 1, no device" ||
    bad "hw read 0x49: exit $RC, expected 1 with 'no device'"
run pincer hw read 0x78 --bus "$BUS"
[ "$RC" = 2 ] && has address && ok "0x78: exit 2, address refused" ||
    bad "hw read 0x78: exit $RC, expected 2 naming the address"

sysw pull-up "$SIM/sim_gpio17/pull"
run pincer hw gpio read 11 --json
level=$(jstr level) value=$(jnum value) line=$(jnum line)
[ "$RC" = 0 ] && [ "$level" = high ] && [ "$value" = 1 ] && [ "$line" = 17 ] &&
    ok "pin 11 (line 17) reads high under pull-up" ||
    bad "hw gpio read 11 (pull-up): exit $RC, level '$level' value '$value' line '$line'"
sysw pull-down "$SIM/sim_gpio17/pull"
run pincer hw gpio read 11 --json
level=$(jstr level) value=$(jnum value)
[ "$RC" = 0 ] && [ "$level" = low ] && [ "$value" = 0 ] && ok "pin 11 reads low under pull-down" ||
    bad "hw gpio read 11 (pull-down): exit $RC, level '$level' value '$value'"
run pincer hw gpio read 11
[ "$RC" = 0 ] || bad "hw gpio read 11 (text): exit $RC"

echo "\$ pincer hw gpio write 12 1 --hold-ms 4000 --json &"
pincer hw gpio write 12 1 --hold-ms 4000 --json >/tmp/w.out 2>/tmp/w.err &
P=$!
# Start-up under TCG takes a moment: wait (bounded) for the result line, then
# give the value at most ~3 s to show.
i=0
while [ $i -lt 150 ] && [ ! -s /tmp/w.out ] && kill -0 $P 2>/dev/null; do
    sleep 0.1
    i=$((i + 1))
done
if poll_value "$SIM/sim_gpio18/value" 1; then
    ok "pin 12 driven high: sim_gpio18/value reads 1 while pincer holds it"
else
    bad "hw gpio write 12 1: sim_gpio18/value is '$(cat "$SIM/sim_gpio18/value")', never 1"
fi
wait $P
RC=$?
OUT=$(cat /tmp/w.out)
ERR=$(cat /tmp/w.err)
show /tmp/w.out ""
show /tmp/w.err "stderr: "
echo "[exit $RC]"
level=$(jstr level) line=$(jnum line)
[ "$RC" = 0 ] && [ "$level" = high ] && [ "$line" = 18 ] && ok "gpio write exits 0 after holding line 18 high" ||
    bad "hw gpio write 12 1: exit $RC, level '$level' line '$line'"

run pincer hw gpio read 3
[ "$RC" = 2 ] && has pinmux && ok "pin 3 (I2C SDA): exit 2, pinmux" ||
    bad "hw gpio read 3: exit $RC, expected 2 with 'pinmux'"

run pincer audit verify
[ "$RC" = 0 ] && ok "audit trail verifies" || bad "audit verify: exit $RC"
SHOW_LINES=4 # the trail is long: the transcript shows its first entries
run pincer audit log --limit 50 --json
SHOW_LINES=1000
[ "$RC" = 0 ] && has human:cli && has i2c_read && ok "audit log records human:cli i2c_read" ||
    bad "audit log: exit $RC, human:cli/i2c_read missing"

finish
VMINIT
chmod 755 "$root/init"
(cd "$root" && find . | LC_ALL=C sort | cpio -o -H newc -R 0:0 --quiet) >"$work/initramfs.cpio"
echo "initramfs: $(du -h "$work/initramfs.cpio" | cut -f1)"

# ------------------------------------------------------------ boot
stage "boot (qemu TCG, timeout ${qemu_timeout}s)"
log=$work/serial.log
boot_t=$(now)
rc=0
# No KVM: /dev/kvm exists on our machines but qemu hangs or aborts with it.
timeout "$qemu_timeout" qemu-system-x86_64 -accel tcg -m 512 -nodefaults -display none \
    -serial stdio -net none -no-reboot \
    -kernel "$kdir/vmlinux" -initrd "$work/initramfs.cpio" \
    -append "console=ttyS0 panic=-1 loglevel=3" </dev/null >"$log" 2>"$work/qemu.err" || rc=$?
tr -d '\r' <"$log" >"$log.txt"
echo "qemu exited $rc after $(since "$boot_t")s"

# ------------------------------------------------------------ verdict
stage "transcript"
if grep -q '^PINCER-HW-VM: BEGIN' "$log.txt"; then
    sed -n '/^PINCER-HW-VM: BEGIN/,/^PINCER-HW-VM: END/p' "$log.txt"
else
    echo "(the VM never reached /init; last serial lines:)"
    tail -n 40 "$log.txt"
fi
[[ -s $work/qemu.err ]] && sed 's/^/qemu: /' "$work/qemu.err"
verdicts=$(grep -E '^PINCER-HW-VM: (PASS|FAIL)' "$log.txt" || true)
echo "elapsed: $(since "$t0")s"
if ((rc == 124)); then
    echo "hw-vm-test: FAIL: qemu timed out after ${qemu_timeout}s"
    exit 1
fi
if [[ $verdicts == "PINCER-HW-VM: PASS" ]]; then
    echo "hw-vm-test: PASS"
    exit 0
fi
if [[ -z $verdicts ]]; then
    echo "hw-vm-test: FAIL: no verdict line from the VM (qemu exit $rc)"
    tail -n 20 "$log.txt" | sed 's/^/serial: /'
else
    echo "hw-vm-test: FAIL: ${verdicts//$'\n'/ | }"
fi
exit 1
