# Sourced by the escalation_* VM tests (after lib.sh and kernel_lib.sh):
# a scripted approver over the folder queue (pending --json, approve,
# deny) and helpers to watch held tasks.

# pending_n: requests waiting for a decision.
pending_n() { "$SB" pending --folder "$PROJ" --json 2>/dev/null | grep -c '"request"'; }

# wait_pending N [TENTHS]: at least N requests are pending.
wait_pending() {
	want=$1 lim=${2:-600} i=0
	while [ "$(pending_n)" -lt "$want" ]; do
		i=$((i + 1))
		[ $i -lt "$lim" ] || fail "want $want pending requests, have $(pending_n) after $((lim / 10)) s; events: $(tail -n 5 "$EVENTS")"
		sleep 0.1
	done
}

# pending_id PATTERN: the id of the (first) pending request whose JSON
# contains PATTERN.
pending_id() {
	"$SB" pending --folder "$PROJ" --json | grep -F -- "$1" | head -n 1 |
		grep -o '"id":"[0-9A-Za-z_-]*"' | head -n 1 | cut -d'"' -f4
}

# pstate PID: the one-letter state (T: stopped).
pstate() { sed -n 's/^State:[[:space:]]*\(.\).*/\1/p' "/proc/$1/status" 2>/dev/null; }

# wait_state PID STATE [TENTHS]
wait_state() {
	lim=${3:-300} i=0
	while [ "$(pstate "$1")" != "$2" ]; do
		i=$((i + 1))
		[ $i -lt "$lim" ] || fail "pid $1: want state $2, have '$(pstate "$1")'"
		sleep 0.1
	done
}

# decide approve|deny ID [ARGS...]: the scripted approver.
decide() {
	verb=$1 id=$2
	shift 2
	[ -n "$id" ] || fail "decide $verb: no request id"
	"$SB" "$verb" --folder "$PROJ" "$id" --reviewer vmtest "$@" > "$W/decide.out" 2>&1 ||
		fail "$verb $id: $(cat "$W/decide.out")"
}

# no_hold_events PATTERN: no hold was reported for PATTERN (after stop_events).
no_hold_events() {
	if grep -F '"held":true' "$EVENTS" | grep -qF -- "$1"; then
		fail "unexpected hold for $1: $(grep -F -- "$1" "$EVENTS" | head -n 3)"
	fi
}

# bg CMD...: CMD as the agent inside the sandbox, in the background, with
# its pid in BG (the same pid all the way: sh and runas exec).
bg() {
	sh -c 'echo $$ > "$0/cgroup.procs" && exec runas agent "$@"' "$BOX" "$@" &
	BG=$!
}
