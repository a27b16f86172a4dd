#!/bin/sh
# Runs cmocka test binaries with TAP output and prints one summary line:
#   unit: N passed, N failed, N skipped
# A binary that crashes or exits non-zero without reporting a failure counts
# as a failure of its own, so a crash can never look like a pass.
# SB_VALGRIND=1 runs each binary under valgrind with leaks as errors.
set -u
passed=0 failed=0 skipped=0 failures=""
log_dir=${SB_BUILD:-build}/test-logs
mkdir -p "$log_dir"
for bin in "$@"; do
	name=$(basename "$bin")
	log="$log_dir/$name.log"
	if [ "${SB_VALGRIND:-0}" = 1 ]; then
		set -- valgrind --quiet --error-exitcode=99 --leak-check=full \
			--suppressions="$(dirname "$0")/valgrind.supp" \
			--show-leak-kinds=definite,indirect,possible --errors-for-leak-kinds=definite,indirect,possible \
			--track-fds=no "$bin"
	else
		set -- "$bin"
	fi
	CMOCKA_MESSAGE_OUTPUT=TAP "$@" >"$log" 2>&1
	rc=$?
	p=$(grep -c '^ok [0-9]' "$log")
	s=$(grep -c '^not ok [0-9]* # SKIP' "$log")
	f=$(grep '^not ok [0-9]' "$log" | grep -vc '# SKIP')
	passed=$((passed + p)); skipped=$((skipped + s)); failed=$((failed + f))
	if [ "$f" -gt 0 ] || { [ "$rc" -ne 0 ] && [ "$f" -eq 0 ]; }; then
		if [ "$f" -eq 0 ]; then
			failed=$((failed + 1))
			echo "FAIL $name: exited $rc without reporting a failed test (crash, leak or sanitizer error)"
		fi
		failures="$failures $name"
		echo "---- $log"
		grep -v '^ok [0-9]' "$log" | tail -n 60
	fi
	if [ "$s" -gt 0 ]; then
		grep '^not ok [0-9]* # SKIP' "$log" | sed "s/^/SKIP $name: /"
		grep -i '^# *skip reason' "$log" | sed "s/^/     /"
	fi
done
echo "unit: $passed passed, $failed failed, $skipped skipped"
[ -z "$failures" ] || { echo "failing binaries:$failures"; exit 1; }
[ "$passed" -gt 0 ] || { echo "no unit test ran"; exit 1; }
exit 0
