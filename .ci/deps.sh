#!/bin/sh
# Installs the Debian packages that building, testing and the VM tests need.
# Idempotent and quiet when everything is already there; runs apt-get update
# at most once, and only when something is missing and the lists are stale.
set -eu
PKGS="make gcc libc6-dev pkg-config clang llvm bpftool libbpf-dev libelf-dev
zlib1g-dev libcjson-dev libsqlite3-dev sqlite3 libsodium-dev libcmocka-dev liburing-dev
libclang-rt-14-dev valgrind qemu-system-x86 busybox-static cpio gzip lz4 zstd
iproute2 procps util-linux ca-certificates git debian-archive-keyring"

missing=""
for p in $PKGS; do
	st=$(dpkg-query -W -f='${Status}' "$p" 2>/dev/null || true)
	case "$st" in
	*" installed") ;;
	*) missing="$missing $p" ;;
	esac
done
[ -n "$missing" ] || exit 0

if [ "$(id -u)" != 0 ]; then
	echo "make deps: these packages are missing:$missing" >&2
	echo "make deps: run it as root (sudo make deps) to install them." >&2
	exit 1
fi
echo "make deps: installing:$missing"
export DEBIAN_FRONTEND=noninteractive
# Skip the update when the lists were refreshed in the last hour (a README
# one-liner or CI may just have run it).
if [ -z "$(find /var/lib/apt/lists -maxdepth 1 -name '*_Packages*' -mmin -60 2>/dev/null | head -n 1)" ]; then
	apt-get update -qq
fi
# shellcheck disable=SC2086
apt-get install -y -qq --no-install-recommends $missing >/dev/null
echo "make deps: done"
