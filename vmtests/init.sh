#!/bin/sh
# /init of the sandbox-bpf VM test initramfs (busybox ash; see README.md).
# Mounts the kernel filesystems, runs every test with a time limit, writes one
# result line per test to /dev/ttyS1, prints SANDBOX-VMTEST-DONE rc=N and
# leaves QEMU through isa-debug-exit (qemu_exit) so QEMU's status carries rc.
# Kernel command line options: vmtest.timeout=SECS (per test),
# vmtest.only=NAME[,NAME...], vmtest.probe (boot check: no tests).

/bin/busybox --install -s # applet links; existing files are kept
VT=/opt/vmtest
export PATH="$VT/helpers:/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"
export HOME=/root TERM=dumb LANG=C LC_ALL=C
umask 022

say() { echo "vmtest-init: $*"; }

mnt() { # TYPE DIR [OPTIONS]
	mkdir -p "$2"
	if [ -n "${3:-}" ]; then
		mount -t "$1" -o "$3" "$1" "$2"
	else
		mount -t "$1" "$1" "$2"
	fi || say "WARNING: cannot mount $1 on $2"
}

finish() { # RC
	echo "SANDBOX-VMTEST-DONE rc=$1"
	echo "SANDBOX-VMTEST-DONE rc=$1" >&3
	exec 3>&-
	sync
	qemu_exit "$1"
	say "qemu_exit failed (no isa-debug-exit device?): powering off"
	poweroff -f
	sleep 5
	exit "$1"
}

mnt proc /proc
mnt sysfs /sys
mnt devtmpfs /dev
mnt devpts /dev/pts gid=5,mode=620,ptmxmode=666
mnt tmpfs /dev/shm mode=1777
mnt tmpfs /tmp mode=1777
mnt tmpfs /run mode=755
mnt securityfs /sys/kernel/security
mnt bpf /sys/fs/bpf mode=700
mnt cgroup2 /sys/fs/cgroup nsdelegate
mount -t tracefs tracefs /sys/kernel/tracing 2>/dev/null
mount -t debugfs debugfs /sys/kernel/debug 2>/dev/null
ln -sf /proc/mounts /etc/mtab
ln -sf /proc/self/fd /dev/fd 2>/dev/null
echo "SANDBOX-VMTEST-INIT uptime=$(cut -d' ' -f1 /proc/uptime)"

# shellcheck disable=SC3045 # busybox ash has ulimit -l and -c
ulimit -l unlimited || say "WARNING: ulimit -l unlimited failed"
# shellcheck disable=SC3045
ulimit -c 0
hostname vmtest
ip link set lo up || say "WARNING: cannot bring lo up"
mkdir -p /home/agent && chown 1000:1000 /home/agent && chmod 755 /home/agent
mkdir -p /root && chmod 700 /root

TEST_TIMEOUT=120 ONLY='' PROBE=''
for arg in $(cat /proc/cmdline); do
	case "$arg" in
	vmtest.timeout=*) TEST_TIMEOUT=${arg#*=} ;;
	vmtest.only=*) ONLY=",${arg#*=}," ;;
	vmtest.probe) PROBE=1 ;;
	esac
done

# Results channel: the second serial port; the console as a fallback.
if stty -F /dev/ttyS1 raw -echo 2>/dev/null && exec 3>/dev/ttyS1; then
	:
else
	say "WARNING: /dev/ttyS1 unusable: results go to the console only"
	exec 3>/dev/null
fi

[ -n "$PROBE" ] && finish 0

export SANDBOX_VMTEST=1
SANDBOX_VMTEST_KERNEL=$(uname -r)
export SANDBOX_VMTEST_KERNEL
export VMTEST_HELPERS="$VT/helpers" VMTEST_BPF_DIR="$VT/bpf"
export VMTEST_AGENT_USER=agent VMTEST_AGENT_UID=1000
if [ -x /usr/local/bin/sandbox-bpf ]; then
	export SANDBOX_BIN=/usr/local/bin/sandbox-bpf
fi

LOGS=/run/vmtest
mkdir -p "$LOGS" /tmp/vmtest-work /sys/fs/cgroup/vmtest
say "kernel $SANDBOX_VMTEST_KERNEL, LSMs: $(cat /sys/kernel/security/lsm 2>/dev/null)"

result() { # LINE
	echo "=== $1"
	echo "$1" >&3
	echo "VMTEST-RESULT $1"
}

skip_reason() { # LOG
	r=$(tr -d '\r' < "$1" | grep -v '^[[:space:]]*$' | tail -n 1)
	r=${r#SKIP: }
	r=${r#skip: }
	echo "${r:-no reason given}"
}

ran=0 failed=0
for path in "$VT"/tests/* "$VT"/extra/*; do
	[ -f "$path" ] && [ -x "$path" ] || continue
	name=${path##*/}
	case "$ONLY" in
	"" | *",$name,"*) ;;
	*) continue ;;
	esac
	ran=$((ran + 1))
	work=/tmp/vmtest-work/$name
	mkdir -p "$work" && chmod 1777 "$work"
	echo "=== RUN $name"
	t0=$(cut -d' ' -f1 /proc/uptime)
	(cd "$work" && VMTEST_WORKDIR="$work" exec vmtest_run -t "$TEST_TIMEOUT" \
		-o "$LOGS/$name.log" -s "$LOGS/$name.status" -c "/sys/fs/cgroup/vmtest/$name" \
		-- "$path") 3>&-
	t1=$(cut -d' ' -f1 /proc/uptime)
	kind=error val="vmtest_run wrote no status"
	[ -s "$LOGS/$name.status" ] && read -r kind val < "$LOGS/$name.status"
	echo "=== END $name: $kind $val, $(awk "BEGIN { printf \"%.2f\", $t1 - $t0 }") s"
	case "$kind $val" in
	"exit 0") result "PASS $name" ;;
	"exit 77") result "SKIP $name: $(skip_reason "$LOGS/$name.log")" ;;
	exit*) result "FAIL $name (exit $val)"; failed=$((failed + 1)) ;;
	signal*) result "FAIL $name (killed by signal $val)"; failed=$((failed + 1)) ;;
	timeout*) result "FAIL $name (timeout after ${val}s)"; failed=$((failed + 1)) ;;
	*) result "FAIL $name ($val)"; failed=$((failed + 1)) ;;
	esac
done

if [ "$ran" -eq 0 ]; then
	say "no tests found in $VT/tests or $VT/extra${ONLY:+ matching $ONLY}"
	finish 2
fi
say "$ran tests, $failed failed, uptime $(cut -d" " -f1 /proc/uptime) s"
[ "$failed" -eq 0 ] && finish 0
finish 1
