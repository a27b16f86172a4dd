/* Exports verify offline (plain and gzip, whole and sliced), and every
 * edit of an export is caught. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/stat.h>
#include <cmocka.h>

#include "audit_testutil.h"

#define N 12	/* seq 1..12; odd seqs are sandbox "q", even ones "p" */

struct ctx {
	struct audit_tmp t;
	char out[400];
};

static int setup(void **state)
{
	struct ctx *c = calloc(1, sizeof(*c));

	audit_tmp_init(&c->t);
	snprintf(c->out, sizeof(c->out), "%s/export.jsonl", c->t.dir);
	if (audit_fill(&c->t, 1, N))
		return -1;
	*state = c;
	return 0;
}

static int teardown(void **state)
{
	struct ctx *c = *state;

	audit_tmp_free(&c->t);
	free(c);
	return 0;
}

static void do_export(struct ctx *c, const struct sb_audit_filter *f, const char *path,
		      struct sb_audit_export_stats *st)
{
	struct sb_err err = { { 0 } };
	struct sb_audit *a;

	assert_int_equal(sb_audit_open(c->t.dir, 0, &a, &err), 0);
	if (sb_audit_export(a, f, path, st, &err))
		fail_msg("export: %s", err.msg);
	assert_int_equal(sb_audit_close(a, &err), 0);
}

static enum sb_audit_problem verify_file(const char *path, const uint8_t *pin, struct sb_audit_report *r)
{
	struct sb_audit_verify_opts o = { .pubkey = pin };
	struct sb_err err = { { 0 } };

	if (sb_audit_verify_file(path, &o, r, &err))
		fail_msg("verify_file: %s", err.msg);
	if (r->problem)
		print_message("  (verify says: %s at %llu: %s)\n", sb_audit_problem_name(r->problem),
			      (unsigned long long)r->problem_seq, r->detail);
	return r->problem;
}

/* --- lines of a plain export, to edit ---------------------------------- */

struct lines {
	char *v[256];
	int n;
};

static void read_lines(const char *path, struct lines *l)
{
	FILE *f = fopen(path, "r");
	char *line = NULL;
	size_t cap = 0;

	assert_non_null(f);
	l->n = 0;
	while (getline(&line, &cap, f) > 0 && l->n < 256)
		l->v[l->n++] = strdup(line);
	free(line);
	fclose(f);
}

static void write_lines(const char *path, struct lines *l)
{
	FILE *f = fopen(path, "w");
	int i;

	assert_non_null(f);
	for (i = 0; i < l->n; i++) {
		if (l->v[i])
			fputs(l->v[i], f);
		free(l->v[i]);
	}
	fclose(f);
}

/* Index of the line holding record seq (or its seal when seal is set). */
static int line_of(const struct lines *l, uint64_t seq, bool seal)
{
	char want[64];
	int i;

	snprintf(want, sizeof(want), "\"seq\":%llu,", (unsigned long long)seq);
	for (i = 1; i < l->n; i++)
		if (l->v[i] && strstr(l->v[i], want) && (strstr(l->v[i], "\"kind\":\"seal\"") != NULL) == seal)
			return i;
	fail_msg("no line for seq %llu", (unsigned long long)seq);
	return -1;
}

static void replace_in_line(struct lines *l, int i, const char *from, const char *to)
{
	char *p = strstr(l->v[i], from), *s;

	assert_non_null(p);
	s = malloc(strlen(l->v[i]) + strlen(to) + 1);
	sprintf(s, "%.*s%s%s", (int)(p - l->v[i]), l->v[i], to, p + strlen(from));
	free(l->v[i]);
	l->v[i] = s;
}

/* --- round trips ----------------------------------------------------------- */

static void test_roundtrip_plain(void **state)
{
	struct ctx *c = *state;
	struct sb_audit_export_stats st;
	struct sb_audit_report r, rs;
	uint8_t pk[SB_AUDIT_PK_LEN];

	audit_host_pk(&c->t, pk);
	do_export(c, NULL, c->out, &st);
	assert_int_equal(st.first_seq, 1);
	assert_int_equal(st.last_seq, N);
	assert_int_equal(st.records, N);
	assert_int_equal(st.elided, 0);
	assert_int_equal(st.seals, 1);
	assert_false(st.sealed_now);	/* close had sealed already */
	assert_int_equal(verify_file(c->out, pk, &r), SB_AUDIT_INTACT);
	assert_int_equal(audit_verify(&c->t, pk, &rs), SB_AUDIT_INTACT);
	assert_int_equal(r.records, N);
	assert_int_equal(r.sealed_seq, N);
	assert_string_equal(r.head_hash, rs.head_hash);
	assert_string_equal(r.anchor_hash, "0000000000000000000000000000000000000000000000000000000000000000");
}

static void test_roundtrip_gz(void **state)
{
	struct ctx *c = *state;
	struct sb_audit_export_stats st;
	struct sb_audit_report r, rb;
	struct sb_err err = { { 0 } };
	uint8_t pk[SB_AUDIT_PK_LEN], magic[2], *buf;
	char gz[420];
	struct stat sst;
	FILE *f;

	audit_host_pk(&c->t, pk);
	snprintf(gz, sizeof(gz), "%s.gz", c->out);
	do_export(c, NULL, gz, &st);
	f = fopen(gz, "rb");
	assert_non_null(f);
	assert_int_equal(fread(magic, 1, 2, f), 2);
	assert_int_equal(magic[0], 0x1f);
	assert_int_equal(magic[1], 0x8b);
	fclose(f);
	assert_int_equal(verify_file(gz, pk, &r), SB_AUDIT_INTACT);
	assert_int_equal(r.records, N);
	/* The in-memory parser (the fuzz target's) agrees. */
	assert_int_equal(stat(gz, &sst), 0);
	buf = malloc((size_t)sst.st_size);
	f = fopen(gz, "rb");
	assert_int_equal(fread(buf, 1, (size_t)sst.st_size, f), (size_t)sst.st_size);
	fclose(f);
	assert_int_equal(sb_audit_verify_buffer(buf, (size_t)sst.st_size, NULL, &rb, &err), 0);
	assert_int_equal(rb.problem, SB_AUDIT_INTACT);
	assert_int_equal(rb.records, N);
	/* Cut short: the gzip stream ends early. */
	assert_int_equal(sb_audit_verify_buffer(buf, (size_t)sst.st_size / 2, NULL, &rb, &err), 0);
	assert_int_not_equal(rb.problem, SB_AUDIT_INTACT);
	free(buf);
	assert_int_equal(truncate(gz, sst.st_size / 2), 0);
	assert_int_not_equal(verify_file(gz, pk, &r), SB_AUDIT_INTACT);
}

/* A time range: the selected records in full, then on to the seal. */
static void test_range_export(void **state)
{
	struct ctx *c = *state;
	struct sb_audit_export_stats st;
	struct sb_audit_report r, full;
	struct sb_audit_filter f = { 0 };
	struct lines l;
	char times[N + 1][SB_AUDIT_TIME_LEN], hash3[SB_AUDIT_HEX_LEN];
	int i;

	/* Times and hashes straight from a full export. */
	do_export(c, NULL, c->out, &st);
	read_lines(c->out, &l);
	for (i = 1; i <= N; i++) {
		cJSON *j = cJSON_Parse(l.v[line_of(&l, (uint64_t)i, false)]);

		snprintf(times[i], sizeof(times[i]), "%s", cJSON_GetObjectItem(j, "time")->valuestring);
		if (i == 3)
			snprintf(hash3, sizeof(hash3), "%s", cJSON_GetObjectItem(j, "hash")->valuestring);
		cJSON_Delete(j);
	}
	for (i = 0; i < l.n; i++)
		free(l.v[i]);
	assert_int_equal(verify_file(c->out, NULL, &full), SB_AUDIT_INTACT);

	f.since = times[4];
	f.until = times[8];
	do_export(c, &f, c->out, &st);
	assert_int_equal(st.first_seq, 4);
	assert_int_equal(st.last_seq, N);	/* extended to the seal */
	assert_int_equal(st.records, 5);
	assert_int_equal(st.elided, 4);
	assert_int_equal(verify_file(c->out, NULL, &r), SB_AUDIT_INTACT);
	assert_int_equal(r.first_seq, 4);
	assert_int_equal(r.records, 9);
	assert_int_equal(r.elided, 4);
	assert_int_equal(r.sealed_seq, N);
	assert_string_equal(r.anchor_hash, hash3);
	assert_string_equal(r.head_hash, full.head_hash);

	/* Dropping the first line of the slice is caught: the header says
	 * where it starts. */
	read_lines(c->out, &l);
	free(l.v[1]);
	l.v[1] = NULL;
	write_lines(c->out, &l);
	assert_int_equal(verify_file(c->out, NULL, &r), SB_AUDIT_MISSING);
	assert_int_equal(r.problem_seq, 4);
}

static void test_sandbox_export(void **state)
{
	struct ctx *c = *state;
	struct sb_audit_filter f = { .sandbox = "p" };
	struct sb_audit_export_stats st;
	struct sb_audit_report r;
	struct sb_err err = { { 0 } };
	struct lines l;
	cJSON *j, *prev, *hash, *env;
	char *s;
	int i;

	do_export(c, &f, c->out, &st);
	assert_int_equal(st.first_seq, 2);
	assert_int_equal(st.last_seq, N);
	assert_int_equal(st.records, 6);
	assert_int_equal(st.elided, 5);
	assert_int_equal(verify_file(c->out, NULL, &r), SB_AUDIT_INTACT);
	assert_int_equal(r.elided, 5);

	/* Elided lines show no content. */
	read_lines(c->out, &l);
	i = line_of(&l, 5, false);
	assert_null(strstr(l.v[i], "git push"));
	assert_non_null(strstr(l.v[i], "\"body_digest\""));

	/* Hiding a selected record behind its envelope keeps every hash
	 * valid, but the filter shows it should have been there in full. */
	i = line_of(&l, 6, false);
	j = cJSON_Parse(l.v[i]);
	prev = cJSON_DetachItemFromObject(j, "prev_hash");
	hash = cJSON_DetachItemFromObject(j, "hash");
	env = sb_audit_envelope(j, &err);
	cJSON_AddItemToObject(env, "prev_hash", prev);
	cJSON_AddItemToObject(env, "hash", hash);
	s = cJSON_PrintUnformatted(env);
	free(l.v[i]);
	l.v[i] = malloc(strlen(s) + 2);
	sprintf(l.v[i], "%s\n", s);
	free(s);
	cJSON_Delete(env);
	cJSON_Delete(j);
	write_lines(c->out, &l);
	assert_int_equal(verify_file(c->out, NULL, &r), SB_AUDIT_FILTER);
	assert_int_equal(r.problem_seq, 6);
}

static void test_empty_export(void **state)
{
	struct ctx *c = *state;
	struct sb_audit_filter f = { .sandbox = "nobody" };
	struct sb_audit_export_stats st;
	struct sb_audit_report r;

	do_export(c, &f, c->out, &st);
	assert_int_equal(st.first_seq, 0);
	assert_int_equal(verify_file(c->out, NULL, &r), SB_AUDIT_INTACT);
	assert_int_equal(r.records, 0);
}

/* --- edits of an export ------------------------------------------------------ */

typedef void (*edit_fn)(struct lines *l);

static void edit_field(struct lines *l)
{
	replace_in_line(l, line_of(l, 5, false), "\"deny\"", "\"allow\"");
}

static void delete_record(struct lines *l)
{
	int i = line_of(l, 7, false);

	free(l->v[i]);
	l->v[i] = NULL;
}

static void swap_records(struct lines *l)
{
	int a = line_of(l, 3, false), b = line_of(l, 4, false);
	char *t = l->v[a];

	l->v[a] = l->v[b];
	l->v[b] = t;
}

static void duplicate_record(struct lines *l)
{
	int i = line_of(l, 9, false);
	char *s = malloc(2 * strlen(l->v[i]) + 1);

	sprintf(s, "%s%s", l->v[i], l->v[i]);
	free(l->v[i]);
	l->v[i] = s;
}

static void truncate_tail(struct lines *l)
{
	int i;

	for (i = line_of(l, 10, false); i < l->n; i++) {
		free(l->v[i]);
		l->v[i] = NULL;
	}
}

static void truncate_keep_seal(struct lines *l)
{
	int i, seal = line_of(l, N, true);

	for (i = line_of(l, 10, false); i < l->n; i++) {
		if (i == seal)
			continue;
		free(l->v[i]);
		l->v[i] = NULL;
	}
}

static void break_signature(struct lines *l)
{
	int i = line_of(l, N, true);
	char *p = strstr(l->v[i], "\"sig\":\"") + 7;

	*p = *p == '0' ? '1' : '0';
}

static void not_json(struct lines *l)
{
	int i = line_of(l, 2, false);

	l->v[i][0] = '#';
}

static void check_edit(struct ctx *c, edit_fn fn, enum sb_audit_problem want, uint64_t seq)
{
	struct sb_audit_export_stats st;
	struct sb_audit_report r;
	struct lines l;

	do_export(c, NULL, c->out, &st);
	read_lines(c->out, &l);
	fn(&l);
	write_lines(c->out, &l);
	assert_int_equal(verify_file(c->out, NULL, &r), want);
	assert_int_equal(r.problem_seq, seq);
}

static void test_edit_export(void **state)
{
	struct ctx *c = *state;

	check_edit(c, edit_field, SB_AUDIT_EDITED, 5);
	check_edit(c, delete_record, SB_AUDIT_MISSING, 7);
	check_edit(c, swap_records, SB_AUDIT_REORDERED, 3);
	check_edit(c, duplicate_record, SB_AUDIT_INSERTED, 9);
	check_edit(c, truncate_tail, SB_AUDIT_TRUNCATED, 10);
	check_edit(c, truncate_keep_seal, SB_AUDIT_TRUNCATED, 10);
	check_edit(c, break_signature, SB_AUDIT_BAD_SIGNATURE, N);
	check_edit(c, not_json, SB_AUDIT_MALFORMED, 2);
}

static void test_export_pinned_other_key(void **state)
{
	struct ctx *c = *state;
	struct sb_audit_export_stats st;
	struct sb_audit_report r;
	uint8_t pk[32], sk[64];

	crypto_sign_keypair(pk, sk);
	do_export(c, NULL, c->out, &st);
	assert_int_equal(verify_file(c->out, pk, &r), SB_AUDIT_KEY_MISMATCH);
}

/* Without the key the export still works; its tail is unsealed. */
static void test_export_without_key(void **state)
{
	struct ctx *c = *state;
	struct sb_audit_verify_opts o = { .require_seal = true };
	struct sb_audit_export_stats st;
	struct sb_audit_report r;
	struct sb_err err = { { 0 } };
	struct sb_audit *a;

	setenv("SANDBOX_BPF_KEY_DIR", "/proc/sb-audit-no-such-dir", 1);
	assert_int_equal(sb_audit_open(c->t.dir, 0, &a, &err), 0);
	assert_int_equal(audit_test_append(a, "p", 77), 0);
	assert_int_equal(sb_audit_export(a, NULL, c->out, &st, &err), 0);
	assert_true(st.seal_error[0] != '\0');
	assert_int_equal(sb_audit_close(a, &err), 0);
	setenv("SANDBOX_BPF_KEY_DIR", c->t.keys, 1);
	assert_int_equal(verify_file(c->out, NULL, &r), SB_AUDIT_INTACT);
	assert_int_equal(r.sealed_seq, N);
	assert_int_equal(r.last_seq, N + 1);
	assert_int_equal(sb_audit_verify_file(c->out, &o, &r, &err), 0);
	assert_int_equal(r.problem, SB_AUDIT_UNSEALED);
}

int main(void)
{
#define T(f) cmocka_unit_test_setup_teardown(f, setup, teardown)
	const struct CMUnitTest tests[] = {
		T(test_roundtrip_plain), T(test_roundtrip_gz),	       T(test_range_export),
		T(test_sandbox_export),	 T(test_empty_export),	       T(test_edit_export),
		T(test_export_pinned_other_key), T(test_export_without_key),
	};

	return cmocka_run_group_tests_name("audit_export", tests, NULL, NULL);
}
