# Sourced by the redteam_* VM tests after lib.sh and kernel_lib.sh: what an
# agent with a shell inside the sandbox would try. Every case is a bypass
# attempt that must be blocked inside the sandbox, with a control showing
# the same call works where the policy allows it or outside the sandbox.

command -v sbrt >/dev/null 2>&1 || skip "helper sbrt is missing (make vmtest-helpers)"

# With "redteam.keepgoing" on the kernel command line (VMTEST_APPEND), a
# failed case is reported as BYPASS and the test goes on, so one run lists
# every bypass of a build (used to survey a build before fixing it).
if grep -qw redteam.keepgoing /proc/cmdline 2>/dev/null; then
	RT_BYPASSES=0
	fail() { echo "BYPASS: $*"; RT_BYPASSES=$((RT_BYPASSES + 1)); }
	rt_exit() { [ "$RT_BYPASSES" = 0 ] || { echo "$RT_BYPASSES bypasses" >&2; exit 1; }; }
else
	rt_exit() { :; }
fi

# deny_rt DESC SBRT-ARGS...: EPERM inside the sandbox, not EPERM outside.
deny_rt() {
	desc=$1
	shift
	expect EPERM "$desc (sandbox)" inbox sbrt "$@"
	expect_not EPERM "$desc (control outside the sandbox)" outside sbrt "$@"
}
echo 0 > /proc/sys/kernel/yama/ptrace_scope 2>/dev/null

# expect_blocked DESC CMD...: CMD prints EPERM or EACCES (the kernel turns
# some LSM denials into EACCES, e.g. /proc/PID/fd links).
expect_blocked() {
	desc=$1
	shift
	got=$("$@" 2>&1 | tail -n 1)
	case "$got" in EPERM | EACCES) ;; *) fail "$desc: want EPERM or EACCES, got '$got' from: $*" ;; esac
	echo "ok: $desc ($got)"
}

# expect_rc WANT DESC CMD...: CMD exits with status WANT.
expect_rc() {
	want=$1 desc=$2
	shift 2
	"$@" > "$W/rc.out" 2>&1
	rc=$?
	[ "$rc" = "$want" ] || fail "$desc: want exit $want, got $rc: $(tail -n 3 "$W/rc.out")"
	echo "ok: $desc (exit $rc)"
}

# str CHAR N: CHAR repeated N times.
str() { printf "%${2}s" '' | tr ' ' "$1"; }

# alive PID DESC: the process still exists.
alive() {
	kill -0 "$1" 2>/dev/null || fail "$2: process $1 is gone"
	echo "ok: $2 (pid $1 alive)"
}
