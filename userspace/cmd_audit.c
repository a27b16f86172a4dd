/* sandbox-bpf audit: verify, export, query, tail, append to and seal the
 * tamper-evident audit chain (docs/audit.md). */
#include <cjson/cJSON.h>
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "audit/audit.h"
#include "cli.h"
#include "commands.h"

static void usage(FILE *f)
{
	fprintf(f,
		"usage: sandbox-bpf audit COMMAND [OPTIONS]\n"
		"\n"
		"The tamper-evident audit chain in FOLDER/.sandbox/audit.db.\n"
		"\n"
		"Commands:\n"
		"  verify   check the chain (or an export) and its seals\n"
		"  export   write records as JSON Lines that verify offline\n"
		"  query    print records matching filters\n"
		"  tail     print the last records, or follow new ones\n"
		"  append   chain records read as JSON lines on stdin (origin external)\n"
		"  seal     sign the current head with the host key\n"
		"\n"
		"Run 'sandbox-bpf audit COMMAND --help' for the options of a command.\n");
}

static int open_store(const char *cmd, const char *folder_opt, unsigned flags, struct sb_audit **a)
{
	char folder[PATH_MAX];
	struct sb_err err = { { 0 } };
	int rc = sb_resolve_folder(folder_opt, folder, sizeof(folder));

	if (rc)
		return sb_fail(cmd, "folder '%s': %s", folder_opt ? folder_opt : ".", strerror(-rc));
	rc = sb_audit_open(folder, flags, a, &err);
	/* Readers do not need write access: fall back for export. */
	if (rc == -EACCES && !(flags & SB_AUDIT_READONLY))
		rc = sb_audit_open(folder, flags | SB_AUDIT_READONLY, a, &err);
	if (rc)
		return sb_fail(cmd, "%s", err.msg);
	return 0;
}

static void close_store(struct sb_audit *a)
{
	struct sb_err err = { { 0 } };

	if (sb_audit_close(a, &err))
		fprintf(stderr, "sandbox-bpf audit: closing the store: %s\n", err.msg);
}

static int time_opt(const char *cmd, const char *in, char out[SB_AUDIT_TIME_LEN], const char **dst)
{
	struct sb_err err = { { 0 } };

	if (sb_audit_time_parse(in, out, &err))
		return sb_usage_error(cmd, "%s", err.msg);
	*dst = out;
	return 0;
}

/* --- verify -------------------------------------------------------------- */

static void verify_usage(FILE *f)
{
	fprintf(f,
		"usage: sandbox-bpf audit verify [--folder DIR | --file EXPORT] [--pubkey HEX|FILE]\n"
		"                                [--require-seal] [--json]\n"
		"\n"
		"Recomputes every hash of the chain and checks every seal. Exit 0 with a\n"
		"summary when intact; exit 1 naming the first broken record and what is\n"
		"wrong: edited, missing, inserted, reordered, truncated (records a seal\n"
		"covers are gone), rewritten (the chain does not end in a sealed head),\n"
		"bad_signature, key_mismatch, malformed, filter_mismatch, unsealed.\n"
		"\n"
		"  --folder DIR     project folder (default: current directory)\n"
		"  --file EXPORT    verify an export (plain or .gz) instead, offline\n"
		"  --pubkey K       require every seal to be signed by this key: 64 hex\n"
		"                   digits or a file such as /var/lib/sandbox-bpf/audit-ed25519.pub;\n"
		"                   without it the seals only have to agree on one key\n"
		"  --require-seal   fail when records after the last seal exist\n"
		"  --json           print the report as one JSON object\n");
}

static void print_report(const struct sb_audit_report *r, bool is_file)
{
	if (r->records == 0) {
		printf("audit chain intact: no records\n");
		return;
	}
	printf("audit %s intact: %" PRIu64 " records (seq %" PRIu64 "..%" PRIu64 "), %" PRIu64 " seals\n",
	       is_file ? "export" : "chain", r->records, r->first_seq, r->last_seq, r->seals);
	if (r->elided)
		printf("  %" PRIu64 " of them elided (outside the export's filter: envelope only)\n", r->elided);
	if (r->first_seq > 1)
		printf("  a slice: seq %" PRIu64 " follows hash %s\n", r->first_seq, r->anchor_hash);
	printf("  first %s, last %s\n", r->first_time, r->last_time);
	printf("  head hash %s\n", r->head_hash);
	if (r->sealed_seq == r->last_seq)
		printf("  sealed through seq %" PRIu64 " (every record)\n", r->sealed_seq);
	else if (r->sealed_seq)
		printf("  sealed through seq %" PRIu64 "; seq %" PRIu64 "..%" PRIu64 " are not sealed yet\n",
		       r->sealed_seq, r->sealed_seq + 1, r->last_seq);
	else
		printf("  no seal: nothing fixes where the chain ends (run 'sandbox-bpf audit seal')\n");
	if (r->pubkey[0])
		printf("  signing key %s (%s)\n", r->pubkey,
		       r->pinned ? "pinned" : "not pinned: pass --pubkey to check it is the host's key");
}

static int cmd_verify(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "folder", required_argument, NULL, 'd' }, { "file", required_argument, NULL, 'f' },
		{ "pubkey", required_argument, NULL, 'k' }, { "require-seal", no_argument, NULL, 's' },
		{ "json", no_argument, NULL, 'j' },	    { "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	const char *cmd = "audit verify", *folder = NULL, *file = NULL, *pubkey = NULL;
	struct sb_audit_verify_opts vo = { 0 };
	struct sb_audit_report r;
	struct sb_err err = { { 0 } };
	uint8_t pk[SB_AUDIT_PK_LEN];
	bool json = false;
	int c, rc;

	sb_getopt_reset();
	while ((c = getopt_long(argc, argv, "h", opts, NULL)) != -1) {
		switch (c) {
		case 'd': folder = optarg; break;
		case 'f': file = optarg; break;
		case 'k': pubkey = optarg; break;
		case 's': vo.require_seal = true; break;
		case 'j': json = true; break;
		case 'h': verify_usage(stdout); return SB_EXIT_OK;
		default: return sb_usage_error(cmd, "invalid option");
		}
	}
	if (optind < argc)
		return sb_usage_error(cmd, "unexpected argument '%s'", argv[optind]);
	if (folder && file)
		return sb_usage_error(cmd, "--folder and --file cannot be used together");
	if (pubkey) {
		if (sb_audit_pubkey_parse(pubkey, pk, &err))
			return sb_usage_error(cmd, "%s", err.msg);
		vo.pubkey = pk;
	}
	if (file) {
		rc = sb_audit_verify_file(file, &vo, &r, &err);
	} else {
		struct sb_audit *a;

		if (open_store(cmd, folder, SB_AUDIT_READONLY, &a))
			return SB_EXIT_FAIL;
		rc = sb_audit_verify_store(a, &vo, &r, &err);
		close_store(a);
	}
	if (rc)
		return sb_fail(cmd, "%s", err.msg);
	if (json)
		sb_print_json_line(stdout, sb_audit_report_json(&r));
	if (r.problem != SB_AUDIT_INTACT) {
		fprintf(stderr, "sandbox-bpf audit: verification FAILED at seq %" PRIu64 ": %s: %s\n", r.problem_seq,
			sb_audit_problem_name(r.problem), r.detail);
		if (r.records)
			fprintf(stderr, "  seq %" PRIu64 "..%" PRIu64 " verified before that\n", r.first_seq, r.last_seq);
		return SB_EXIT_FAIL;
	}
	if (!json)
		print_report(&r, file != NULL);
	return SB_EXIT_OK;
}

/* --- export -------------------------------------------------------------- */

static void export_usage(FILE *f)
{
	fprintf(f,
		"usage: sandbox-bpf audit export [--folder DIR] [--since T] [--until T] [--sandbox NAME]\n"
		"                                --output FILE\n"
		"\n"
		"Writes the chain as JSON Lines (gzip when FILE ends in .gz) with its hashes\n"
		"and seals, for 'sandbox-bpf audit verify --file FILE' on any machine. The\n"
		"head is sealed first when it is not and the host key is readable.\n"
		"With filters the export is the contiguous slice from the first to the last\n"
		"selected record, extended to the next seal; records in it that the filter\n"
		"does not select appear as their envelope only (seq, time, kind, origin,\n"
		"sandbox, body_digest), so the slice still verifies and shows nothing was left out.\n"
		"\n"
		"  --folder DIR     project folder (default: current directory)\n"
		"  --since T        records at or after T (RFC 3339, a date, or 90s/15m/2h/7d ago)\n"
		"  --until T        records at or before T\n"
		"  --sandbox NAME   records of this sandbox\n"
		"  --output FILE    where to write (replaced atomically)\n");
}

static int cmd_export(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "folder", required_argument, NULL, 'd' }, { "since", required_argument, NULL, 's' },
		{ "until", required_argument, NULL, 'u' },  { "sandbox", required_argument, NULL, 'b' },
		{ "output", required_argument, NULL, 'o' }, { "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	const char *cmd = "audit export", *folder = NULL, *output = NULL;
	char since[SB_AUDIT_TIME_LEN], until[SB_AUDIT_TIME_LEN];
	struct sb_audit_filter f = { 0 };
	struct sb_audit_export_stats st;
	struct sb_err err = { { 0 } };
	struct sb_audit *a;
	int c, rc;

	sb_getopt_reset();
	while ((c = getopt_long(argc, argv, "ho:", opts, NULL)) != -1) {
		switch (c) {
		case 'd': folder = optarg; break;
		case 's': if (time_opt(cmd, optarg, since, &f.since)) return SB_EXIT_USAGE; break;
		case 'u': if (time_opt(cmd, optarg, until, &f.until)) return SB_EXIT_USAGE; break;
		case 'b': f.sandbox = optarg; break;
		case 'o': output = optarg; break;
		case 'h': export_usage(stdout); return SB_EXIT_OK;
		default: return sb_usage_error(cmd, "invalid option");
		}
	}
	if (optind < argc)
		return sb_usage_error(cmd, "unexpected argument '%s'", argv[optind]);
	if (!output)
		return sb_usage_error(cmd, "--output FILE is required");
	if (open_store(cmd, folder, 0, &a))
		return SB_EXIT_FAIL;
	rc = sb_audit_export(a, &f, output, &st, &err);
	close_store(a);
	if (rc)
		return sb_fail(cmd, "%s", err.msg);
	if (st.seal_error[0])
		fprintf(stderr, "sandbox-bpf audit export: note: could not seal the head first: %s\n", st.seal_error);
	if (st.first_seq)
		printf("exported seq %" PRIu64 "..%" PRIu64 ": %" PRIu64 " records, %" PRIu64 " elided, %" PRIu64
		       " seals to %s\n",
		       st.first_seq, st.last_seq, st.records, st.elided, st.seals, output);
	else
		printf("no records matched; wrote an empty export to %s\n", output);
	return SB_EXIT_OK;
}

/* --- query and tail ------------------------------------------------------- */

struct printer {
	bool json;
	uint64_t last_seq;
};

static int print_record(const cJSON *rec, void *arg)
{
	struct printer *p = arg;
	const cJSON *seq = cJSON_GetObjectItemCaseSensitive(rec, "seq"), *c;

	/* Stored records are read unverified here: check before converting. */
	if (cJSON_IsNumber(seq) && seq->valuedouble >= 0 && seq->valuedouble <= 9007199254740991.0)
		p->last_seq = (uint64_t)seq->valuedouble;
	if (p->json) {
		char *s = cJSON_PrintUnformatted(rec);

		if (s)
			puts(s);
		free(s);
	} else {
		const char *fields[] = { "time", "kind", "origin", "sandbox" };
		size_t i;

		printf("%" PRIu64, p->last_seq);
		for (i = 0; i < 4; i++) {
			c = cJSON_GetObjectItemCaseSensitive(rec, fields[i]);
			printf(" %s", cJSON_IsString(c) && c->valuestring[0] ? c->valuestring : "-");
		}
		cJSON_ArrayForEach(c, rec) {
			bool skip = !strcmp(c->string, "seq") || !strcmp(c->string, "hash");
			char *s;

			for (i = 0; i < 4 && !skip; i++)
				skip = !strcmp(c->string, fields[i]);
			if (skip)
				continue;
			if (cJSON_IsString(c)) {
				printf(" %s=%s", c->string, c->valuestring);
				continue;
			}
			s = cJSON_PrintUnformatted(c);
			printf(" %s=%s", c->string, s ? s : "?");
			free(s);
		}
		putchar('\n');
	}
	return fflush(stdout) == EOF && errno == EPIPE ? -EPIPE : 0;
}

static void query_usage(FILE *f, bool tail)
{
	if (tail)
		fprintf(f,
			"usage: sandbox-bpf audit tail [--folder DIR] [-n N] [-f] [--json]\n"
			"\n"
			"Prints the last N records (default 10); with -f keeps printing new ones.\n"
			"Reads what is stored without verifying it ('audit verify' does that).\n"
			"\n"
			"  --folder DIR   project folder (default: current directory)\n"
			"  -n, --lines N  how many records\n"
			"  -f, --follow   wait for new records (Ctrl-C stops)\n"
			"  --json         one JSON object per record (with its hash)\n");
	else
		fprintf(f,
			"usage: sandbox-bpf audit query [--folder DIR] [--kind K] [--trigger T] [--decision D]\n"
			"                               [--pid P] [--path S] [--command S] [--sandbox NAME]\n"
			"                               [--since T] [--until T] [-n N] [--json]\n"
			"\n"
			"Prints the records matching every filter given, oldest first. Reads what is\n"
			"stored without verifying it ('audit verify' does that).\n"
			"\n"
			"  --kind K        record kind (decision, verdict, escalation, ...)\n"
			"  --trigger T     shell, write, network or read\n"
			"  --decision D    allow, deny, escalate, observe, ...\n"
			"  --pid P         process id\n"
			"  --path S        \"path\" contains S\n"
			"  --command S     \"command\" (or argv joined by spaces) contains S\n"
			"  --sandbox NAME  sandbox name\n"
			"  --since T       at or after T (RFC 3339, a date, or 90s/15m/2h/7d ago)\n"
			"  --until T       at or before T\n"
			"  -n, --lines N   only the last N matches\n"
			"  --json          one JSON object per record (with its hash)\n");
}

static volatile sig_atomic_t stop_follow;

static void on_signal(int sig)
{
	(void)sig;
	stop_follow = 1;
}

static int run_query(int argc, char **argv, bool tail)
{
	static const struct option opts[] = {
		{ "folder", required_argument, NULL, 'd' },  { "kind", required_argument, NULL, 'k' },
		{ "trigger", required_argument, NULL, 't' }, { "decision", required_argument, NULL, 'D' },
		{ "pid", required_argument, NULL, 'p' },     { "path", required_argument, NULL, 'P' },
		{ "command", required_argument, NULL, 'c' }, { "sandbox", required_argument, NULL, 'b' },
		{ "since", required_argument, NULL, 's' },   { "until", required_argument, NULL, 'u' },
		{ "lines", required_argument, NULL, 'n' },   { "follow", no_argument, NULL, 'f' },
		{ "json", no_argument, NULL, 'j' },	     { "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	const char *cmd = tail ? "audit tail" : "audit query", *folder = NULL;
	char since[SB_AUDIT_TIME_LEN], until[SB_AUDIT_TIME_LEN], *end;
	struct sb_audit_query q = { .last = tail ? 10 : 0 };
	struct printer p = { 0 };
	struct sb_err err = { { 0 } };
	struct sb_audit *a;
	bool follow = false;
	int c, rc;

	sb_getopt_reset();
	while ((c = getopt_long(argc, argv, tail ? "hn:f" : "hn:", opts, NULL)) != -1) {
		if (tail && strchr("ktDpPcbsu", c))
			return sb_usage_error(cmd, "filters belong to 'audit query'");
		switch (c) {
		case 'd': folder = optarg; break;
		case 'k': q.kind = optarg; break;
		case 't': q.trigger = optarg; break;
		case 'D': q.decision = optarg; break;
		case 'p':
			errno = 0;
			q.pid = strtoll(optarg, &end, 10);
			if (errno || *end || end == optarg || q.pid < 0)
				return sb_usage_error(cmd, "--pid wants a process id, not '%s'", optarg);
			q.has_pid = true;
			break;
		case 'P': q.path = optarg; break;
		case 'c': q.command = optarg; break;
		case 'b': q.f.sandbox = optarg; break;
		case 's': if (time_opt(cmd, optarg, since, &q.f.since)) return SB_EXIT_USAGE; break;
		case 'u': if (time_opt(cmd, optarg, until, &q.f.until)) return SB_EXIT_USAGE; break;
		case 'n':
			errno = 0;
			q.last = strtoull(optarg, &end, 10);
			if (errno || *end || end == optarg || optarg[0] == '-' || q.last == 0 || q.last > 1000000)
				return sb_usage_error(cmd, "-n wants a count from 1 to 1000000, not '%s'", optarg);
			break;
		case 'f':
			if (!tail)
				return sb_usage_error(cmd, "invalid option");
			follow = true;
			break;
		case 'j': p.json = true; break;
		case 'h': query_usage(stdout, tail); return SB_EXIT_OK;
		default: return sb_usage_error(cmd, "invalid option");
		}
	}
	if (optind < argc)
		return sb_usage_error(cmd, "unexpected argument '%s'", argv[optind]);
	if (open_store(cmd, folder, SB_AUDIT_READONLY, &a))
		return SB_EXIT_FAIL;
	rc = sb_audit_query_run(a, &q, print_record, &p, &err);
	if (!rc && follow) {
		struct sigaction sa = { .sa_handler = on_signal };

		sigaction(SIGINT, &sa, NULL);
		sigaction(SIGTERM, &sa, NULL);
		q.last = 0;
		if (!p.last_seq)
			rc = sb_audit_head(a, &p.last_seq, NULL, &err);
		while (!rc && !stop_follow) {
			usleep(250 * 1000);
			q.after_seq = p.last_seq;
			rc = sb_audit_query_run(a, &q, print_record, &p, &err);
		}
	}
	close_store(a);
	if (rc == -EPIPE)
		return SB_EXIT_OK;
	if (rc)
		return sb_fail(cmd, "%s", err.msg);
	return SB_EXIT_OK;
}

/* --- append -------------------------------------------------------------- */

static void append_usage(FILE *f)
{
	fprintf(f,
		"usage: sandbox-bpf audit append [--folder DIR]\n"
		"\n"
		"Reads records as JSON lines on stdin, one object per line, and chains them\n"
		"for integrations that decide outside this program (a CI pipeline, an agent\n"
		"wrapper). Every record gets origin \"external\" (a different origin given is\n"
		"kept as \"claimed_origin\"); \"kind\" defaults to \"external\" and \"sandbox\" to \"\".\n"
		"\"seq\", \"time\", \"prev_hash\", \"hash\" and \"body_digest\" are assigned by the chain\n"
		"and refused in input; numbers must be integers (write others as strings).\n"
		"\n"
		"All lines are checked before anything is written: one bad line is reported\n"
		"with its line number and nothing is appended. Otherwise all records are\n"
		"committed in one transaction at end of input. Creates the store when there\n"
		"is none.\n"
		"\n"
		"  --folder DIR   project folder (default: current directory)\n");
}

/* Applies the external-record defaults; returns the message of a line
 * that cannot be a record. */
static const char *external_record(cJSON *rec)
{
	cJSON *origin = cJSON_GetObjectItemCaseSensitive(rec, "origin");

	if (!cJSON_IsObject(rec))
		return "not a JSON object";
	if (origin) {
		if (!cJSON_IsString(origin) || strcmp(origin->valuestring, "external")) {
			if (cJSON_GetObjectItemCaseSensitive(rec, "claimed_origin"))
				return "\"origin\" and \"claimed_origin\" both given";
			cJSON_AddItemToObject(rec, "claimed_origin", cJSON_DetachItemViaPointer(rec, origin));
			cJSON_AddStringToObject(rec, "origin", "external");
		}
	} else if (!cJSON_AddStringToObject(rec, "origin", "external")) {
		return "out of memory";
	}
	if (!cJSON_GetObjectItemCaseSensitive(rec, "kind"))
		cJSON_AddStringToObject(rec, "kind", "external");
	if (!cJSON_GetObjectItemCaseSensitive(rec, "sandbox"))
		cJSON_AddStringToObject(rec, "sandbox", "");
	return NULL;
}

static int cmd_append(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "folder", required_argument, NULL, 'd' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	const char *cmd = "audit append", *folder = NULL;
	struct sb_err err = { { 0 } };
	cJSON **recs = NULL;
	size_t n = 0, cap = 0, lineno = 0, i;
	char *line = NULL;
	size_t linecap = 0;
	ssize_t len;
	struct sb_audit *a;
	uint64_t first = 0;
	int c, bad = 0, rc = SB_EXIT_OK;

	sb_getopt_reset();
	while ((c = getopt_long(argc, argv, "h", opts, NULL)) != -1) {
		switch (c) {
		case 'd': folder = optarg; break;
		case 'h': append_usage(stdout); return SB_EXIT_OK;
		default: return sb_usage_error(cmd, "invalid option");
		}
	}
	if (optind < argc)
		return sb_usage_error(cmd, "unexpected argument '%s' (records are read from stdin)", argv[optind]);
	while ((len = getline(&line, &linecap, stdin)) >= 0) {
		const char *msg;
		cJSON *rec;

		lineno++;
		while (len > 0 && (line[len - 1] == '\n' || line[len - 1] == '\r'))
			line[--len] = '\0';
		if (len == 0)
			continue;
		rec = cJSON_ParseWithLength(line, (size_t)len);
		msg = rec ? external_record(rec) : "not valid JSON";
		if (!msg && sb_audit_record_check(rec, &err))
			msg = err.msg;
		if (msg) {
			fprintf(stderr, "sandbox-bpf audit append: line %zu: %s\n", lineno, msg);
			cJSON_Delete(rec);
			bad++;
			continue;
		}
		if (n == cap) {
			size_t ncap = cap ? cap * 2 : 64;
			cJSON **r = realloc(recs, ncap * sizeof(*r));

			if (!r) {
				cJSON_Delete(rec);
				rc = sb_fail(cmd, "out of memory");
				goto out;
			}
			recs = r;
			cap = ncap;
		}
		recs[n++] = rec;
	}
	if (bad) {
		rc = sb_fail(cmd, "%d bad line%s: nothing was appended", bad, bad > 1 ? "s" : "");
		goto out;
	}
	if (n == 0) {
		printf("no records on stdin\n");
		goto out;
	}
	if (open_store(cmd, folder, SB_AUDIT_CREATE, &a)) {
		rc = SB_EXIT_FAIL;
		goto out;
	}
	if (sb_audit_append_batch(a, (const cJSON *const *)recs, n, &first, &err)) {
		close_store(a);
		rc = sb_fail(cmd, "%s", err.msg);
		goto out;
	}
	close_store(a);
	printf("appended %zu record%s (seq %" PRIu64 "..%" PRIu64 ")\n", n, n > 1 ? "s" : "", first,
	       first + n - 1);
out:
	for (i = 0; i < n; i++)
		cJSON_Delete(recs[i]);
	free(recs);
	free(line);
	return rc;
}

/* --- seal ---------------------------------------------------------------- */

static void seal_usage(FILE *f)
{
	fprintf(f,
		"usage: sandbox-bpf audit seal [--folder DIR] [--json]\n"
		"\n"
		"Signs the current head (its hash and seq) with the host's Ed25519 key, so\n"
		"records cut from the end and chains recomputed without the key are detected.\n"
		"The key is $SANDBOX_BPF_KEY_DIR/audit-ed25519.key (default directory\n"
		"/var/lib/sandbox-bpf), created on first use with mode 0600; a key that group\n"
		"or others can read is refused. Its public half is audit-ed25519.pub.\n"
		"\n"
		"  --folder DIR   project folder (default: current directory)\n"
		"  --json         print the seal as JSON\n");
}

static int cmd_seal(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "folder", required_argument, NULL, 'd' },
		{ "json", no_argument, NULL, 'j' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	const char *cmd = "audit seal", *folder = NULL;
	struct sb_audit_seal_info info;
	struct sb_err err = { { 0 } };
	struct sb_audit *a;
	bool json = false;
	int c, rc;

	sb_getopt_reset();
	while ((c = getopt_long(argc, argv, "h", opts, NULL)) != -1) {
		switch (c) {
		case 'd': folder = optarg; break;
		case 'j': json = true; break;
		case 'h': seal_usage(stdout); return SB_EXIT_OK;
		default: return sb_usage_error(cmd, "invalid option");
		}
	}
	if (optind < argc)
		return sb_usage_error(cmd, "unexpected argument '%s'", argv[optind]);
	if (open_store(cmd, folder, SB_AUDIT_NO_SEAL, &a))
		return SB_EXIT_FAIL;
	rc = sb_audit_seal(a, &info, &err);
	close_store(a);
	if (rc)
		return sb_fail(cmd, "%s", err.msg);
	if (json) {
		cJSON *o = cJSON_CreateObject();

		cJSON_AddNumberToObject(o, "seq", (double)info.seq);
		cJSON_AddStringToObject(o, "head_hash", info.head_hash);
		cJSON_AddStringToObject(o, "time", info.time);
		cJSON_AddStringToObject(o, "pubkey", info.pubkey);
		cJSON_AddBoolToObject(o, "created", info.created);
		sb_print_json_line(stdout, o);
	} else if (info.seq == 0) {
		printf("nothing to seal: the store is empty\n");
	} else {
		printf("%s seq %" PRIu64 " (head %s) with key %s\n", info.created ? "sealed" : "already sealed:",
		       info.seq, info.head_hash, info.pubkey);
	}
	return SB_EXIT_OK;
}

/* --- dispatch ------------------------------------------------------------ */

static int cmd_tail(int argc, char **argv)
{
	return run_query(argc, argv, true);
}

static int cmd_query(int argc, char **argv)
{
	return run_query(argc, argv, false);
}

int cmd_audit(int argc, char **argv)
{
	static const struct {
		const char *name;
		int (*run)(int, char **);
	} subs[] = {
		{ "verify", cmd_verify }, { "export", cmd_export }, { "query", cmd_query },
		{ "tail", cmd_tail },	  { "append", cmd_append }, { "seal", cmd_seal },
	};
	size_t i;

	if (argc < 2) {
		usage(stderr);
		return SB_EXIT_USAGE;
	}
	if (!strcmp(argv[1], "--help") || !strcmp(argv[1], "-h") || !strcmp(argv[1], "help")) {
		usage(stdout);
		return SB_EXIT_OK;
	}
	for (i = 0; i < sizeof(subs) / sizeof(subs[0]); i++)
		if (!strcmp(argv[1], subs[i].name))
			return subs[i].run(argc - 1, argv + 1);
	return sb_usage_error("audit", "unknown command '%s'", argv[1]);
}
