# Sourced by VM test scripts: . "$(dirname "$0")/lib.sh"
# Exit codes: 0 pass, 77 skip (the last output line is the reason), else fail.

skip() { echo "SKIP: $*"; exit 77; }
fail() { echo "FAIL: $*" >&2; exit 1; }
# as_agent CMD [ARG...]: run CMD as the non-root user "agent" (uid 1000).
as_agent() { runas "${VMTEST_AGENT_USER:-agent}" "$@"; }
