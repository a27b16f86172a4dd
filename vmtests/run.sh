#!/bin/bash
# run.sh: boot each cached Debian cloud kernel under QEMU and run the VM tests.
#
#   vmtests/run.sh [--kernel PATH]... [--only SERIES] [--test NAME]... [--cache DIR]
#
# Builds the initramfs once (mkinitramfs.sh), boots every kernel in the cache
# (fetch-kernels.sh fills it) or each --kernel, and prints one line per test,
# e.g. "PASS [6.1.0-56] lsm_smoke", then "N passed, N failed, N skipped".
# Exits non-zero if a test failed, a VM did not print its done marker (hang,
# panic, timeout), or no test ran. Console logs: build/vmtests/logs/.
# Environment (all optional): VMTEST_CACHE, VMTEST_EXTRA, SANDBOX_BIN,
# VMTEST_ACCEL (tcg|kvm; default: kvm only if a probe boot works),
# VMTEST_MACHINE (pc|microvm), VMTEST_IMAGE (vmlinux|vmlinuz),
# VMTEST_TEST_TIMEOUT (per test, s), VMTEST_VM_TIMEOUT (per VM, s),
# VMTEST_TSC_KHZ, VMTEST_MEM (MiB), VMTEST_SMP, VMTEST_TCG_THREAD,
# VMTEST_BOOT_TIMEOUT, VMTEST_BOOT_RETRIES, VMTEST_INITRD_COMPRESS,
# VMTEST_OUT (default build/vmtests), VMTEST_APPEND (kernel args),
# VMTEST_VERBOSE=1 (stream the console).
set -euo pipefail

here=$(cd "$(dirname "$0")" && pwd)
repo=$(cd "$here/.." && pwd)
out=${VMTEST_OUT:-$repo/build/vmtests}
case "$out" in /*) ;; *) out=$repo/$out ;; esac
export VMTEST_OUT=$out
logs=$out/logs

die() { echo "vmtest: error: $*" >&2; exit 2; }
note() { echo "vmtest: $*"; }

cache=${VMTEST_CACHE:-$HOME/.cache/sandbox-bpf/kernels}
kernel_paths=() only='' tests=''
while [ $# -gt 0 ]; do
	case "$1" in
	--kernel) [ $# -ge 2 ] || die "--kernel needs a path"; kernel_paths+=("$2"); shift 2 ;;
	--only) [ $# -ge 2 ] || die "--only needs a series (6.1, 6.12)"; only=$2; shift 2 ;;
	--test) [ $# -ge 2 ] || die "--test needs a test name"; tests=${tests:+$tests,}$2; shift 2 ;;
	--cache) [ $# -ge 2 ] || die "--cache needs a directory"; cache=$2; shift 2 ;;
	-h | --help) sed -n '2,/^set -eu/p' "$0" | sed -e '$d' -e 's/^# \{0,1\}//'; exit 0 ;;
	*) die "unknown argument '$1' (see $0 --help)" ;;
	esac
done

machine=${VMTEST_MACHINE:-microvm}
test_timeout=${VMTEST_TEST_TIMEOUT:-120}
mem=${VMTEST_MEM:-512}
smp=${VMTEST_SMP:-1}
boot_timeout=${VMTEST_BOOT_TIMEOUT:-60}
boot_retries=${VMTEST_BOOT_RETRIES:-1}
# Multi-threaded TCG with several vCPUs oopses now and then in the kernel's
# int3-based code patching (static keys, BPF trampolines); one thread is safe.
tcg_thread=${VMTEST_TCG_THREAD:-single}
qemu=${VMTEST_QEMU:-qemu-system-x86_64}
command -v "$qemu" >/dev/null || die "$qemu not found: install it (apt-get install qemu-system-x86)"
command -v timeout >/dev/null || die "timeout (coreutils) not found"
case "$machine" in pc | q35 | microvm) ;; *) die "VMTEST_MACHINE=$machine: want pc, q35 or microvm" ;; esac

# ---- kernels: "LABEL IMAGE" lines --------------------------------------------
label_of() { # PATH -> label such as 6.1.0-56
	local b d
	b=$(basename "$1")
	d=$(basename "$(dirname "$1")")
	case "$b" in
	vmlinu[xz]-*) b=${b#vmlinu?-} ;;
	vmlinu[xz] | bzImage) b=$d ;;
	esac
	echo "${b%-cloud-amd64}"
}
in_series() { # LABEL SERIES
	[ -z "$2" ] && return 0
	case "$1" in "$2" | "$2".* | "$2"-*) return 0 ;; esac
	return 1
}
pick_image() { # DIR -> the image to boot from a cache directory
	local want=${VMTEST_IMAGE:-vmlinux}
	if [ "$want" = vmlinux ] && [ -s "$1/vmlinux" ]; then echo "$1/vmlinux"; else echo "$1/vmlinuz"; fi
}

kernels=()
if [ ${#kernel_paths[@]} -gt 0 ]; then
	for k in "${kernel_paths[@]}"; do
		[ -r "$k" ] || die "--kernel $k: no such file"
		in_series "$(label_of "$k")" "$only" && kernels+=("$(label_of "$k") $k")
	done
else
	[ -d "$cache" ] || die "no kernel cache at $cache: run 'make vmtest-fetch' (vmtests/fetch-kernels.sh)"
	for d in "$cache"/*/; do
		d=${d%/}
		[ -s "$d/vmlinuz" ] || continue
		in_series "$(label_of "$d/vmlinuz")" "$only" && kernels+=("$(label_of "$d/vmlinuz") $(pick_image "$d")")
	done
fi
[ ${#kernels[@]} -gt 0 ] || die "no kernel${only:+ of series $only} in ${kernel_paths[*]:-$cache}: run 'make vmtest-fetch' (vmtests/fetch-kernels.sh)"

# ---- TSC frequency for tsc_early_khz (TCG uses the host's TSC) ---------------
tsc_khz() {
	local v
	if [ "${VMTEST_TSC_KHZ:-}" = 0 ]; then return; fi # 0: do not pass one
	if [ -n "${VMTEST_TSC_KHZ:-}" ]; then echo "$VMTEST_TSC_KHZ"; return; fi
	if [ -r /sys/devices/system/cpu/cpu0/tsc_freq_khz ]; then cat /sys/devices/system/cpu/cpu0/tsc_freq_khz; return; fi
	v=$(dmesg 2>/dev/null | sed -n -e 's/.*tsc: Refined TSC clocksource calibration: \([0-9.]*\) MHz.*/\1/p' | tail -n 1)
	[ -n "$v" ] || v=$(dmesg 2>/dev/null | sed -n -e 's/.*tsc: Detected \([0-9.]*\) MHz.*/\1/p' | tail -n 1)
	[ -n "$v" ] || v=$(sed -n -e 's/^cpu MHz[[:space:]]*: \([0-9.]*\)/\1/p' /proc/cpuinfo | head -n 1)
	[ -n "$v" ] && awk -v m="$v" 'BEGIN { printf "%d\n", m * 1000 }'
}

# ---- one VM ----------------------------------------------------------------
# boot ACCEL IMAGE LOG RESULTS TIMEOUT EXTRA_APPEND
# Sets vm_rc (qemu's status; 124/137 = overall timeout) and boot_hung=1 when
# /init did not start within $boot_timeout seconds (QEMU is then killed).
boot() {
	local accel=$1 image=$2 log=$3 res=$4 limit=$5 extra=$6 cpu=max append tail_pid='' qpid wpid
	local accel_opt=$accel
	append="console=ttyS0 8250.nr_uarts=4 quiet panic=-1 oops=panic mitigations=off nokaslr cryptomgr.notests"
	append="$append vmtest.timeout=$test_timeout${tests:+ vmtest.only=$tests}"
	if [ "$accel" = kvm ]; then
		cpu=host
	else
		accel_opt=tcg,thread=$tcg_thread
		[ -z "$tsc" ] || append="$append tsc_early_khz=$tsc tsc=reliable"
	fi
	append="$append ${VMTEST_APPEND:-} $extra"
	: > "$log"
	: > "$res"
	rm -f "$log.boot-hung"
	if [ "${VMTEST_VERBOSE:-}" = 1 ]; then
		tail -n +1 -f "$log" &
		tail_pid=$!
	fi
	timeout --kill-after=10 "$limit" "$qemu" -M "$machine" -accel "$accel_opt" -cpu "$cpu" \
		-smp "$smp" -m "$mem" -nodefaults -no-user-config -display none -no-reboot \
		-chardev "file,id=con,path=$log" -serial chardev:con \
		-chardev "file,id=res,path=$res" -device isa-serial,chardev=res,index=1 \
		-device isa-debug-exit,iobase=0xf4,iosize=4 \
		-kernel "$image" -initrd "$initrd" -append "$append" \
		</dev/null 2>"$log.qemu-stderr" &
	qpid=$!
	# Boot watchdog: a VM that has not reached /init in time is stuck.
	(
		trap 'kill "$spid" 2>/dev/null; exit 0' TERM
		sleep "$boot_timeout" &
		spid=$!
		wait "$spid"
		if ! grep -q 'SANDBOX-VMTEST-INIT' "$log"; then
			: > "$log.boot-hung"
			kill "$qpid" 2>/dev/null
		fi
	) </dev/null >/dev/null 2>&1 &
	wpid=$!
	vm_rc=0
	wait "$qpid" || vm_rc=$?
	kill "$wpid" 2>/dev/null || true
	wait "$wpid" 2>/dev/null || true
	boot_hung=0
	if [ -e "$log.boot-hung" ]; then
		boot_hung=1
		rm -f "$log.boot-hung"
	fi
	if [ -n "$tail_pid" ]; then
		sleep 0.2
		kill "$tail_pid" 2>/dev/null || true
		wait "$tail_pid" 2>/dev/null || true
	fi
}

# ---- accelerator: KVM only if it really boots these kernels -----------------
tsc=$(tsc_khz || true)
mkdir -p "$logs" "$out/run"
# Uncompressed: the guest unpacks it 0.3-0.6 s faster than a .cpio.gz.
initrd_compress=${VMTEST_INITRD_COMPRESS:-none}
initrd=$out/run/initramfs.$$.cpio
[ "$initrd_compress" = none ] || initrd=$initrd.gz
trap 'rm -f "$initrd"' EXIT
VMTEST_INITRD_COMPRESS=$initrd_compress "$here/mkinitramfs.sh" "$initrd"

accel=${VMTEST_ACCEL:-}
if [ -z "$accel" ]; then
	accel=tcg
	if [ -r /dev/kvm ] && [ -w /dev/kvm ]; then
		set -- ${kernels[0]}
		boot kvm "$2" "$logs/kvm-probe.console.log" "$logs/kvm-probe.results" 30 vmtest.probe
		if tr -d '\r' < "$logs/kvm-probe.console.log" | grep -q 'SANDBOX-VMTEST-DONE rc=0' && [ "$vm_rc" = 1 ]; then
			accel=kvm
		else
			note "/dev/kvm is present but a KVM probe boot failed (qemu exit $vm_rc$(head -c 200 "$logs/kvm-probe.console.log.qemu-stderr" | tr '\n' ' ' | sed 's/^./: &/')): using TCG"
		fi
	fi
fi
# Under TCG, microvm boots hang calibrating the TSC unless tsc_early_khz says
# its rate (every boot did here); the pc machine calibrates against its PIT.
if [ "$accel" = tcg ] && [ -z "$tsc" ] && [ "$machine" = microvm ]; then
	if [ -z "${VMTEST_MACHINE:-}" ]; then
		machine=pc
		note "host TSC frequency unknown: using -M pc (set VMTEST_TSC_KHZ for the faster microvm)"
	else
		note "warning: host TSC frequency unknown (set VMTEST_TSC_KHZ): microvm boots will likely hang"
	fi
fi

# ---- run the kernels ---------------------------------------------------------
ntests=0
for f in "$here"/tests/* ${VMTEST_EXTRA:+"$VMTEST_EXTRA"/*}; do
	[ -f "$f" ] && [ -x "$f" ] && ntests=$((ntests + 1))
done
vm_timeout=${VMTEST_VM_TIMEOUT:-$((90 + ntests * (test_timeout + 15)))}

passed=0 failed=0 skipped=0
clean() { # console text without CRs and terminal escapes
	tr -d '\r' | sed 's/\x1b\[[0-9;?]*[A-Za-z]//g'
}
running_test() { # LOG -> the test that started last and never ended
	tr -d '\r' < "$1" | awk '/^=== RUN / { t = substr($0, 9) } /^=== END / { t = "" } END { print t }'
}
fail_vm() { # LABEL LOG MESSAGE
	local t
	t=$(running_test "$2")
	echo "FAIL [$1] vm: $3${t:+ (during test $t)}"
	echo "    last console lines ($2):"
	clean < "$2" | tail -n 30 | awk '{ print "    | " $0 }'
	failed=$((failed + 1))
}
show_output() { # LOG NAME
	tr -d '\r' < "$1" | awk -v n="$2" '$0 == "=== RUN " n { on = 1; next } on && index($0, "=== END " n ":") == 1 { on = 0 } on' |
		tail -n 40 | awk '{ print "    | " $0 }'
}

# Why a VM that never reached /init failed (empty if it did reach /init).
boot_failure() { # LOG
	local panic
	if [ "$boot_hung" = 1 ]; then
		echo "no /init within ${boot_timeout}s (boot hang)"
	elif ! grep -q 'SANDBOX-VMTEST-INIT' "$1"; then
		panic=$(tr -d '\r' < "$1" | sed -n 's/.*\(Kernel panic - not syncing: .*\)/\1/p' | head -n 1)
		echo "died before /init (qemu exit $vm_rc${panic:+, $panic})"
	fi
}

for entry in "${kernels[@]}"; do
	set -- $entry
	label=$1 image=$2
	log=$logs/$label.console.log res=$logs/$label.results
	attempt=1
	while :; do
		note "booting $label ($(basename "$image"), $machine, $accel, smp $smp)"
		t0=$(date +%s.%N)
		boot "$accel" "$image" "$log" "$res" "$vm_timeout" ""
		t1=$(date +%s.%N)
		why=$(boot_failure "$log")
		[ -n "$why" ] && [ "$attempt" -le "$boot_retries" ] || break
		# Nothing of the tests ran: a boot flake, not a test result. Say so, retry.
		cp "$log" "$log.attempt$attempt"
		note "warning: $label boot attempt $attempt $why; retrying (log $log.attempt$attempt)"
		attempt=$((attempt + 1))
	done
	marker=$(tr -d '\r' < "$res" | sed -n 's/^SANDBOX-VMTEST-DONE rc=\([0-9]*\)$/\1/p' | tail -n 1)
	[ -n "$marker" ] || marker=$(tr -d '\r' < "$log" | sed -n 's/.*SANDBOX-VMTEST-DONE rc=\([0-9]*\).*/\1/p' | tail -n 1)
	init_at=$(tr -d '\r' < "$log" | sed -n 's/.*SANDBOX-VMTEST-INIT uptime=\([0-9.]*\).*/\1/p' | head -n 1)
	results=$(tr -d '\r' < "$res" | grep -E '^(PASS|FAIL|SKIP) ' || true)
	if ! tr -d '\r' < "$res" | grep -q '^SANDBOX-VMTEST-DONE'; then
		console_results=$(tr -d '\r' < "$log" | sed -n 's/^VMTEST-RESULT \(\(PASS\|FAIL\|SKIP\) .*\)/\1/p')
		if [ -n "$marker" ] && [ -n "$console_results" ]; then
			note "warning: results channel (ttyS1) incomplete for $label: using the console's copy"
			results=$console_results
		fi
	fi
	nres=0 nfail=0
	while IFS= read -r line; do
		[ -n "$line" ] || continue
		nres=$((nres + 1))
		word=${line%% *} rest=${line#* }
		echo "$word [$label] $rest"
		case "$word" in
		PASS) passed=$((passed + 1)) ;;
		SKIP) skipped=$((skipped + 1)) ;;
		FAIL)
			failed=$((failed + 1)) nfail=$((nfail + 1))
			name=${rest%% *}
			show_output "$log" "$name"
			;;
		esac
	done <<< "$results"

	if [ -n "$why" ]; then
		[ -s "$log.qemu-stderr" ] && why="$why; qemu: $(head -c 300 "$log.qemu-stderr" | tr '\n' ' ')"
		fail_vm "$label" "$log" "$why"
	elif [ "$vm_rc" = 124 ] || [ "$vm_rc" = 137 ]; then
		fail_vm "$label" "$log" "timed out after ${vm_timeout}s without the done marker (hang)"
	elif [ -z "$marker" ]; then
		why="no SANDBOX-VMTEST-DONE marker (qemu exit $vm_rc)"
		panic=$(tr -d '\r' < "$log" | sed -n 's/.*\(Kernel panic - not syncing: .*\)/\1/p' | head -n 1)
		[ -n "$panic" ] && why="$panic: $why"
		[ -s "$log.qemu-stderr" ] && why="$why; qemu: $(head -c 300 "$log.qemu-stderr" | tr '\n' ' ')"
		fail_vm "$label" "$log" "$why"
	elif [ "$vm_rc" != $((marker * 2 + 1)) ]; then
		fail_vm "$label" "$log" "qemu exit $vm_rc does not match the marker rc=$marker (isa-debug-exit not reached)"
	elif [ "$nres" = 0 ]; then
		fail_vm "$label" "$log" "no tests ran (marker rc=$marker)"
	elif [ "$marker" != 0 ] && [ "$nfail" = 0 ]; then
		fail_vm "$label" "$log" "guest reported rc=$marker but no failing test"
	fi
	note "$label: /init at ${init_at:-?} s guest uptime, VM wall time $(awk -v a="$t0" -v b="$t1" 'BEGIN { printf "%.2f", b - a }') s, console log $log"
done

total=$((passed + failed + skipped))
echo "$passed passed, $failed failed, $skipped skipped"
[ "$failed" = 0 ] && [ "$total" -gt 0 ]
