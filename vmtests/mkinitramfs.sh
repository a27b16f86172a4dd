#!/bin/bash
# mkinitramfs.sh OUT.cpio.gz: build the VM test initramfs (see README.md).
#
# Contents: busybox (/init adds the applet links), /init (init.sh),
# build/sandbox-bpf if it exists, build/vmtests/helpers/* and
# build/vmtests/bpf/*.bpf.o, the tests in vmtests/tests/, $VMTEST_EXTRA/
# (every executable file there is a test), and the shared libraries and ELF
# interpreter of every dynamic binary.
# Environment: SANDBOX_BIN (default build/sandbox-bpf), VMTEST_EXTRA,
# VMTEST_OUT (default build/vmtests),
# VMTEST_BUSYBOX (default: busybox on PATH), VMTEST_INITRD_COMPRESS
# (gzip, the default, or none).
set -euo pipefail

die() { echo "mkinitramfs: $*" >&2; exit 1; }

[ $# -eq 1 ] || die "usage: $0 OUT.cpio.gz"
out=$1
case "$out" in /*) ;; *) out=$PWD/$out ;; esac
mkdir -p "$(dirname "$out")"
here=$(cd "$(dirname "$0")" && pwd)
repo=$(cd "$here/.." && pwd)
build=${VMTEST_OUT:-$repo/build/vmtests}
case "$build" in /*) ;; *) build=$repo/$build ;; esac
sandbox_bin=${SANDBOX_BIN:-build/sandbox-bpf}
case "$sandbox_bin" in /*) ;; *) sandbox_bin=$repo/$sandbox_bin ;; esac
extra=${VMTEST_EXTRA:-}
compress=${VMTEST_INITRD_COMPRESS:-gzip}

busybox=${VMTEST_BUSYBOX:-$(command -v busybox || true)}
[ -n "$busybox" ] && [ -x "$busybox" ] ||
	die "busybox not found: install it (apt-get install busybox-static) or set VMTEST_BUSYBOX"
[ -x "$build/helpers/qemu_exit" ] && [ -x "$build/helpers/vmtest_run" ] ||
	die "harness helpers missing in $build/helpers: run 'make vmtest-helpers' first"
if [ -n "$extra" ]; then
	[ -d "$extra" ] || die "VMTEST_EXTRA=$extra is not a directory"
	extra=$(cd "$extra" && pwd)
fi

mkdir -p "$build"
root=$(mktemp -d "$build/initramfs.XXXXXX")
libs=$root.libs
trap 'rm -rf "$root" "$libs"' EXIT
cd "$root"
mkdir -p bin sbin usr/bin usr/sbin usr/local/bin etc proc sys dev tmp run root \
	home/agent var/tmp opt/vmtest/helpers opt/vmtest/tests opt/vmtest/extra opt/vmtest/bpf
chmod 1777 tmp var/tmp
chmod 700 root

# busybox; /init links its applets (busybox --install -s) at boot
cp -L "$busybox" bin/busybox
ln -s busybox bin/sh

install -m 0755 "$here/init.sh" init
if [ -x "$sandbox_bin" ]; then
	cp -L "$sandbox_bin" usr/local/bin/sandbox-bpf
else
	echo "mkinitramfs: note: no $sandbox_bin (tests that need sandbox-bpf must skip)" >&2
fi
cp -L "$build"/helpers/* opt/vmtest/helpers/
for obj in "$build"/bpf/*.bpf.o; do
	[ -e "$obj" ] && cp -L "$obj" opt/vmtest/bpf/
done
if [ -d "$here/tests" ]; then
	cp -RL "$here/tests/." opt/vmtest/tests/
fi
if [ -n "$extra" ]; then
	cp -RL "$extra/." opt/vmtest/extra/
fi

cat > etc/passwd <<'PASSWD'
root:x:0:0:root:/root:/bin/sh
agent:x:1000:1000:sandbox test agent:/home/agent:/bin/sh
nobody:x:65534:65534:nobody:/nonexistent:/bin/false
PASSWD
cat > etc/group <<'GROUP'
root:x:0:
tty:x:5:
agent:x:1000:
nogroup:x:65534:
GROUP
printf 'root:*:19000:0:99999:7:::\nagent:*:19000:0:99999:7:::\n' > etc/shadow
chmod 600 etc/shadow
printf '127.0.0.1\tlocalhost vmtest\n::1\tlocalhost ip6-localhost\n' > etc/hosts
printf 'passwd: files\ngroup: files\nshadow: files\nhosts: files\n' > etc/nsswitch.conf
printf '/bin/sh\n/bin/ash\n' > etc/shells

# Shared libraries of every dynamic ELF file, at the paths ldd reports.
is_elf() { [ "$(head -c 4 "$1" | od -An -tx1 | tr -d ' \n')" = 7f454c46 ]; }
find . -type f -perm -u+x -print | while read -r f; do
	is_elf "$f" || continue
	deps=$(ldd "$f" 2>/dev/null) || continue # static binaries
	if printf '%s\n' "$deps" | grep -q 'not found'; then
		die "$f: missing shared libraries: $(printf '%s\n' "$deps" | grep 'not found' | tr -s ' \t' ' ')"
	fi
	printf '%s\n' "$deps" | sed -n -e 's/.*=> \(\/[^ ]*\) (0x.*/\1/p' -e 's/^[[:space:]]*\(\/[^ ]*\) (0x.*/\1/p'
done | sort -u > "$libs"
while read -r lib; do
	[ -n "$lib" ] || continue
	mkdir -p ".$(dirname "$lib")"
	cp -L "$lib" ".$lib"
done < "$libs"

if command -v cpio >/dev/null 2>&1; then
	archive() { cpio --null -o -H newc --owner=0:0 --quiet; }
else
	archive() { tr '\0' '\n' | "$busybox" cpio -o -H newc -R 0:0 2>/dev/null; }
fi
case "$compress" in
gzip) pack() { gzip -1 -n; } ;;
none) pack() { cat; } ;;
*) die "VMTEST_INITRD_COMPRESS=$compress: want gzip or none" ;;
esac
find . -mindepth 1 -print0 | LC_ALL=C sort -z | archive | pack > "$out.tmp"
mv "$out.tmp" "$out"
echo "mkinitramfs: $out ($(du -k "$out" | cut -f1) KiB, $(wc -l < "$libs") shared libraries)"
