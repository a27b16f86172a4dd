#!/bin/sh
# make demo: runs vmtests/demo/demo_loop on the best backend this machine
# has. Natively when 'sandbox-bpf doctor' proves the host kernel runs
# BPF-LSM programs (it loads, attaches and triggers one); otherwise in a
# QEMU VM booting Debian's 6.12 cloud kernel, with the guest's console
# streamed here. There is no weaker fallback: if neither works, the demo
# fails and says why.
# Environment: SANDBOX_BIN (default build/sandbox-bpf), VMTEST_OUT
# (default build/vmtests), VMTEST_CACHE, DEMO_BACKEND=native|vm to choose.
set -eu
cd "$(dirname "$0")/.."
SB=${SANDBOX_BIN:-build/sandbox-bpf}
OUT=${VMTEST_OUT:-build/vmtests}
[ -x "$SB" ] || { echo "demo: $SB is missing: run make first" >&2; exit 1; }

backend=${DEMO_BACKEND:-}
if [ -z "$backend" ]; then
	if "$SB" doctor --json 2>/dev/null | grep -q '"bpf-lsm":{"status":"ok"'; then
		backend=native
	else
		backend=vm
	fi
fi

case "$backend" in
native)
	echo "demo: this kernel runs BPF-LSM programs (sandbox-bpf doctor): running natively"
	[ "$(id -u)" = 0 ] || { echo "demo: run it as root (sudo make demo)" >&2; exit 1; }
	sbdir=$(cd "$(dirname "$SB")" && pwd)
	PATH="$sbdir:$PWD/$OUT/helpers:$PATH" SANDBOX_BIN="$sbdir/$(basename "$SB")" \
		exec vmtests/demo/demo_loop
	;;
vm)
	echo "demo: this kernel refuses BPF-LSM programs ('$SB doctor' says why):"
	echo "demo: running the demo in a QEMU VM on Debian's 6.12 cloud kernel"
	VMTEST_EXTRA=vmtests/demo VMTEST_VERBOSE=1 SANDBOX_BIN="$SB" VMTEST_OUT="$OUT" \
		exec vmtests/run.sh --only 6.12 --test demo_loop
	;;
*)
	echo "demo: DEMO_BACKEND must be native or vm, not '$backend'" >&2
	exit 2
	;;
esac
