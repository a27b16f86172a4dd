# Sourced by the kernel_* VM tests (after lib.sh): a sandbox on a child
# cgroup of the test's own cgroup, the agent user inside it, and a control
# task (the same command, outside the sandbox cgroup) that must be
# unaffected. Exit codes: 0 pass, 77 skip, else fail.

SB=${SANDBOX_BIN:-sandbox-bpf}
command -v "$SB" >/dev/null 2>&1 || skip "sandbox-bpf is not in the image (build it first)"
command -v sbk >/dev/null 2>&1 || skip "helper sbk is missing (make vmtest-helpers)"
grep -qw bpf /sys/kernel/security/lsm 2>/dev/null || skip "bpf is not an active LSM here"

W=${VMTEST_WORKDIR:?}
PROJ=$W/proj
AGENT_HOME=/home/agent
SELF_CG=/sys/fs/cgroup$(sed -n 's/^0:://p' /proc/self/cgroup)
BOX=$SELF_CG/box
EVENTS=$W/events.jsonl
ATTACH_PID=

mkdir -p "$PROJ"
chown 1000:1000 "$PROJ"

# mkfile PATH...: files owned by the agent, so only the LSM can deny it.
mkfile() {
	for f in "$@"; do
		mkdir -p "$(dirname "$f")"
		echo data > "$f"
		chown 1000:1000 "$f" "$(dirname "$f")"
	done
}

# policy FILE JSON-BODY: a policy rooted at $PROJ (body without braces).
policy() {
	printf '{"version": 1, "root": "%s", %s}\n' "$PROJ" "$2" > "$1"
}

# attach POLICY [ARGS...]: attach to $BOX, streaming JSON events to $EVENTS.
attach() {
	pol=$1
	shift
	mkdir -p "$BOX"
	: > "$EVENTS"
	"$SB" attach --cgroup "$BOX" --policy "$pol" --folder "$PROJ" --home "$AGENT_HOME" --json "$@" \
		> "$EVENTS" 2> "$W/attach.err" &
	ATTACH_PID=$!
	i=0
	while ! grep -q '"event":"attached"' "$EVENTS" 2>/dev/null; do
		if ! kill -0 "$ATTACH_PID" 2>/dev/null; then
			cat "$W/attach.err" >&2
			fail "attach exited: $(cat "$W/attach.err")"
		fi
		i=$((i + 1))
		[ $i -lt 600 ] || fail "attach did not report within 60 s: $(cat "$W/attach.err")"
		sleep 0.1
	done
}

# stop_events: stop streaming (the sandbox stays), wait for the output.
stop_events() {
	[ -n "$ATTACH_PID" ] || return 0
	kill -TERM "$ATTACH_PID" 2>/dev/null
	wait "$ATTACH_PID" 2>/dev/null
	ATTACH_PID=
}

cleanup() {
	rc=$?
	stop_events
	if [ $rc != 0 ] && [ $rc != 77 ] && [ -s "$EVENTS" ]; then
		echo "--- last events:"
		tail -n 15 "$EVENTS"
		[ -s "$W/attach.err" ] && { echo "--- attach stderr:"; tail -n 15 "$W/attach.err"; }
	fi
	"$SB" detach --cgroup "$BOX" >/dev/null 2>&1
	rmdir "$BOX" 2>/dev/null
	true
}
trap cleanup EXIT

# inbox CMD...: CMD as the agent inside the sandbox cgroup.
inbox() { sh -c 'echo $$ > "$0/cgroup.procs" && exec runas agent "$@"' "$BOX" "$@"; }
# inbox_root CMD...: CMD as root inside the sandbox cgroup.
inbox_root() { sh -c 'echo $$ > "$0/cgroup.procs" && exec "$@"' "$BOX" "$@"; }
# outside CMD...: the control: the agent, same command, not in the sandbox.
outside() { runas agent "$@"; }

# expect WANT DESC CMD...: CMD (an sbk call) prints WANT.
expect() {
	want=$1 desc=$2
	shift 2
	got=$("$@" 2>&1 | tail -n 1)
	[ "$got" = "$want" ] || fail "$desc: want $want, got '$got' from: $*"
	echo "ok: $desc ($got)"
}

# expect_not WORD DESC CMD...: CMD does not print WORD (a control case).
expect_not() {
	bad=$1 desc=$2
	shift 2
	got=$("$@" 2>&1 | tail -n 1)
	[ "$got" != "$bad" ] || fail "$desc: got $bad from: $*"
	echo "ok: $desc ($got)"
}

# deny_case DESC SBK-ARGS...: EPERM inside the sandbox, not EPERM outside.
deny_case() {
	desc=$1
	shift
	expect EPERM "$desc (sandbox)" inbox sbk "$@"
	expect_not EPERM "$desc (control outside the sandbox)" outside sbk "$@"
}

# event_has PATTERN...: an event line contains every pattern (after stop_events).
event_has() {
	line=$(cat "$EVENTS")
	for p in "$@"; do
		line=$(printf '%s\n' "$line" | grep -F -- "$p")
	done
	[ -n "$line" ] || fail "no event with $*; events: $(tail -n 20 "$EVENTS")"
	echo "ok: event with $*"
}
