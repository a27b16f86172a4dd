/* Fuzzes the export reader behind `audit verify --file`: line splitting,
 * gzip inflation, JSON parsing, record and seal checks, the verifier's
 * state machine. Exports come from other machines: never trusted. */
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "audit/audit.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static const uint8_t pin[SB_AUDIT_PK_LEN] = { 0x42 };
	struct sb_audit_verify_opts o = { 0 };
	struct sb_audit_report r;
	struct sb_err err = { { 0 } };

	sb_audit_verify_buffer(data, size, &o, &r, &err);
	/* The report must stay printable whatever the input. */
	if (memchr(r.detail, '\0', sizeof(r.detail)) == NULL || memchr(r.head_hash, '\0', sizeof(r.head_hash)) == NULL)
		__builtin_trap();
	o.pubkey = pin;
	o.require_seal = true;
	sb_audit_verify_buffer(data, size, &o, &r, &err);
	return 0;
}
