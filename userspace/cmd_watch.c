/* sandbox-bpf watch: the interactive approver. Shows each pending request
 * as it arrives and asks what to do, in a plain line-based terminal (works
 * over SSH, no curses). While a human looks at a request, watch holds a
 * claim on it (renewed while it waits) so a second watcher moves on to
 * another one; skipping or quitting gives the claim back.
 *
 * Input is read line by line from stdin whatever it is, so a script can
 * drive it through a pipe. Everything waits in one poll(2): stdin, the
 * queue's inotify descriptor and a signalfd for SIGINT/SIGTERM/SIGHUP, so
 * a signal ends the current prompt cleanly and no global state is needed. */
#include <cjson/cJSON.h>
#include <ctype.h>
#include <errno.h>
#include <getopt.h>
#include <poll.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/signalfd.h>
#include <termios.h>
#include <time.h>
#include <unistd.h>

#include "approver.h"
#include "cli.h"
#include "commands.h"

#define WATCH_LINE_MAX 4096
#define WATCH_TICK_MS 1000

static void usage(FILE *f)
{
	fprintf(f,
		"usage: sandbox-bpf watch [--folder DIR] [--json] [--ask-reason] [--reviewer NAME]\n"
		"\n"
		"Shows each escalated request in DIR/.sandbox/escalations as it arrives (what,\n"
		"where, which process chain, which rule and why, its age and the time left\n"
		"before the broker denies it) and asks:\n"
		"\n"
		"  [a]pprove / [d]eny / a[l]ways (choose scope) / [s]kip >\n"
		"\n"
		"Answers (one per line; words after a or d are the reason):\n"
		"  a [REASON]           allow this request\n"
		"  d [REASON]           deny it\n"
		"  l [SCOPE [VALUE]]    allow it and remember the decision; without SCOPE a\n"
		"                       menu lists the scopes that fit the request (once,\n"
		"                       command, prefix, dir, host) with their default values;\n"
		"                       answer with a number or a name, optionally followed\n"
		"                       by your own value (e.g. 'l prefix git push')\n"
		"  s                    skip: leave it pending for someone else\n"
		"  q                    quit\n"
		"\n"
		"A request is claimed while it is shown, so two watchers never show the same\n"
		"one; skip, quit, Ctrl-C and end of input give the claim back. Claims of\n"
		"approvers that died are returned to pending after their lease.\n"
		"\n"
		"Scripts: stdin does not need to be a terminal. Answers are read line by line\n"
		"from a pipe or file, and watch exits when input ends (at a prompt, or when\n"
		"nothing is pending), e.g.\n"
		"  printf 'a\\nd not now\\nl prefix\\n' | sandbox-bpf watch --json\n"
		"\n"
		"  --folder DIR     project folder (default: the current directory)\n"
		"  --json           print requests and results as JSON lines on stdout\n"
		"                   ({\"event\":\"request\"|\"decided\"|\"skipped\"|\"gone\",...});\n"
		"                   prompts go to stderr\n"
		"  --ask-reason     after a/d/l without a reason, ask for one\n"
		"  --reviewer NAME  who decides (default: $SUDO_USER, else your user name)\n"
		"  --lease SECONDS  how long a claim lasts without renewal (default %d)\n",
		SB_QUEUE_DEFAULT_LEASE_MS / 1000);
}

struct linebuf {
	char buf[WATCH_LINE_MAX];
	size_t len;
	bool eof;
};

struct watch {
	struct sb_queue *q;
	struct sb_queue_notify *n;
	int sigfd;
	struct linebuf in;
	bool tty, json, ask_reason;
	FILE *out;		/* requests and results */
	FILE *ui;		/* prompts */
	int lease_ms;
	char owner[SB_QUEUE_OWNER_MAX + 1];
	char reviewer[SB_QUEUE_NAME_MAX + 1];
	char (*skipped)[SB_QUEUE_ID_MAX + 1];
	size_t nskipped, capskipped;
};

enum wev { WEV_LINE, WEV_EOF, WEV_SIGNAL, WEV_GONE, WEV_ERROR };
enum wres { WRES_NEXT, WRES_RETRY, WRES_QUIT };

/* ---- line input ----------------------------------------------------------- */

static bool lb_take(struct linebuf *lb, char *out, size_t cap)
{
	char *nl = memchr(lb->buf, '\n', lb->len);
	size_t n, take, used;

	if (!nl && !(lb->eof && lb->len) && lb->len < sizeof(lb->buf))
		return false;
	n = nl ? (size_t)(nl - lb->buf) : lb->len;
	used = nl ? n + 1 : n;
	take = n < cap - 1 ? n : cap - 1;
	memcpy(out, lb->buf, take);
	out[take] = '\0';
	if (take && out[take - 1] == '\r')
		out[take - 1] = '\0';
	memmove(lb->buf, lb->buf + used, lb->len - used);
	lb->len -= used;
	return true;
}

static int lb_fill(struct linebuf *lb, int fd)
{
	ssize_t r;

	if (lb->eof || lb->len == sizeof(lb->buf))
		return 0;
	r = read(fd, lb->buf + lb->len, sizeof(lb->buf) - lb->len);
	if (r < 0)
		return errno == EINTR || errno == EAGAIN ? 0 : -errno;
	if (r == 0)
		lb->eof = true;
	else
		lb->len += (size_t)r;
	return 0;
}

static int64_t mono_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static bool got_signal(struct watch *w, short revents)
{
	struct signalfd_siginfo si;

	if (!(revents & POLLIN))
		return false;
	return read(w->sigfd, &si, sizeof(si)) == (ssize_t)sizeof(si);
}

static void prompt(struct watch *w, const char *text)
{
	fputs(text, w->ui);
	fflush(w->ui);
}

static void say(struct watch *w, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void say(struct watch *w, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vfprintf(w->ui, fmt, ap);
	va_end(ap);
	fflush(w->ui);
}

/* ---- waiting ---------------------------------------------------------------- */

/* Waits for an answer about id, keeping the claim alive, and notices when
 * someone else decides the request meanwhile. */
static enum wev wait_answer(struct watch *w, const char *id, char *line, size_t cap)
{
	int64_t next_renew = mono_ms() + w->lease_ms / 3;

	for (;;) {
		struct pollfd p[3] = { { .fd = 0, .events = POLLIN }, { .fd = w->sigfd, .events = POLLIN },
				       { .fd = sb_queue_notify_fd(w->n), .events = POLLIN } };
		enum sb_queue_state st;
		int rc;

		if (lb_take(&w->in, line, cap)) {
			if (!w->tty && !w->json)
				fprintf(w->ui, "%s\n", line);	/* a readable transcript */
			return WEV_LINE;
		}
		if (w->in.eof)
			return WEV_EOF;
		rc = poll(p, p[2].fd >= 0 ? 3 : 2, WATCH_TICK_MS);
		if (rc < 0 && errno != EINTR)
			return WEV_ERROR;
		if (rc > 0 && got_signal(w, p[1].revents))
			return WEV_SIGNAL;
		if (rc > 0 && p[2].fd >= 0 && p[2].revents)
			sb_queue_notify_drain(w->n);
		if (sb_queue_locate(w->q, id, &st, NULL) == 0 && st != SB_QS_PENDING && st != SB_QS_CLAIMED)
			return WEV_GONE;
		if (mono_ms() >= next_renew) {
			sb_queue_renew(w->q, id, w->owner, w->lease_ms, NULL);
			next_renew = mono_ms() + w->lease_ms / 3;
		}
		if (rc > 0 && (p[0].revents & (POLLIN | POLLHUP | POLLERR)) && lb_fill(&w->in, 0))
			return WEV_ERROR;
	}
}

/* Nothing to show: wait for the queue to change. false means quit (end of
 * input or a signal). */
static bool wait_idle(struct watch *w)
{
	bool room = !w->in.eof && w->in.len < sizeof(w->in.buf);
	struct pollfd p[3] = { { .fd = w->sigfd, .events = POLLIN },
			       { .fd = sb_queue_notify_fd(w->n), .events = POLLIN },
			       { .fd = room ? 0 : -1, .events = POLLIN } };
	int rc;

	if (w->in.eof)
		return false;
	rc = poll(p, 3, p[1].fd >= 0 ? WATCH_TICK_MS : SB_QUEUE_POLL_MS);
	if (rc <= 0)
		return rc == 0 || errno == EINTR;
	if (got_signal(w, p[0].revents))
		return false;
	if (p[1].fd >= 0 && p[1].revents)
		sb_queue_notify_drain(w->n);
	/* Read ahead (a script may answer before the request arrives), but
	 * end of input while idle ends the session. */
	if (p[2].fd >= 0 && (p[2].revents & (POLLIN | POLLHUP | POLLERR)) && lb_fill(&w->in, 0))
		return false;
	/* A human's answer must follow what it answers: a stray "a" typed
	 * while nothing is shown must not approve the next request. */
	if (w->tty && w->in.len) {
		char line[WATCH_LINE_MAX];

		while (lb_take(&w->in, line, sizeof(line)))
			;
		say(w, "(nothing is pending; input ignored)\n");
	}
	return !w->in.eof;
}

/* ---- output ---------------------------------------------------------------- */

static void emit_event(struct watch *w, const char *event, const char *id, cJSON *extra_key_obj,
		       const char *key, const char *message)
{
	cJSON *o = cJSON_CreateObject();

	cJSON_AddStringToObject(o, "event", event);
	cJSON_AddStringToObject(o, "id", id);
	if (extra_key_obj)
		cJSON_AddItemToObject(o, key, extra_key_obj);
	if (message)
		cJSON_AddStringToObject(o, "message", message);
	sb_print_json_line(w->out, o);
	fflush(w->out);
}

static void release(struct watch *w, const char *id)
{
	sb_queue_release(w->q, id, w->owner, NULL);
}

static void report_gone(struct watch *w, const char *id)
{
	struct sb_queue_item it;
	char msg[SB_ERR_MSG_MAX];

	if (sb_queue_get(w->q, id, &it, NULL) == 0 && it.has_decision) {
		snprintf(msg, sizeof(msg), "request %s was decided elsewhere: %s by %s%s", id,
			 it.dec.verdict == SB_QV_ALLOW ? "allowed" : "denied", it.dec.reviewer,
			 it.dec.timed_out ? " (timeout)" : "");
		sb_queue_item_free(&it);
	} else {
		snprintf(msg, sizeof(msg), "request %s left the queue", id);
	}
	if (w->json)
		emit_event(w, "gone", id, NULL, NULL, msg);
	else
		say(w, "\n%s\n", msg);
}

/* ---- answers --------------------------------------------------------------- */

static char *trim(char *s)
{
	char *e;

	while (isspace((unsigned char)*s))
		s++;
	e = s + strlen(s);
	while (e > s && isspace((unsigned char)e[-1]))
		*--e = '\0';
	return s;
}

/* Splits "word rest" in place; returns rest (trimmed, maybe ""). */
static char *split_word(char *s)
{
	char *p = s;

	while (*p && !isspace((unsigned char)*p)) {
		*p = (char)tolower((unsigned char)*p);
		p++;
	}
	if (*p)
		*p++ = '\0';
	return trim(p);
}

static bool is_word(const char *w, const char *a, const char *b, const char *c)
{
	return !strcmp(w, a) || !strcmp(w, b) || (c && !strcmp(w, c));
}

static enum wres on_event(struct watch *w, const char *id, enum wev ev)
{
	if (ev == WEV_GONE) {
		report_gone(w, id);
		return WRES_NEXT;
	}
	release(w, id);
	if (!w->json)
		say(w, "\n");
	return WRES_QUIT;
}

static enum wres decide(struct watch *w, const struct sb_queue_item *it, enum sb_queue_verdict v,
			const enum sb_remember_scope *scope, const char *value, const char *reason)
{
	struct sb_queue_decision d;
	struct sb_err err = { { 0 } };
	char line[WATCH_LINE_MAX];
	const char *id = it->req.id;
	int rc;

	memset(&d, 0, sizeof(d));
	d.verdict = v;
	snprintf(d.reviewer, sizeof(d.reviewer), "%s", w->reviewer);
	if (scope) {
		d.remember = true;
		d.scope = *scope;
		if (value && snprintf(d.remember_value, sizeof(d.remember_value), "%s", value) >=
				     (int)sizeof(d.remember_value)) {
			say(w, "that value is too long\n");
			return WRES_RETRY;
		}
	}
	if (!reason[0] && w->ask_reason) {
		enum wev ev;

		prompt(w, "reason (optional) > ");
		ev = wait_answer(w, id, line, sizeof(line));
		if (ev != WEV_LINE)
			return on_event(w, id, ev);
		reason = trim(line);
	}
	if (snprintf(d.reason, sizeof(d.reason), "%s", reason) >= (int)sizeof(d.reason)) {
		say(w, "the reason is longer than %zu bytes\n", sizeof(d.reason) - 1);
		return WRES_RETRY;
	}
	if (sb_queue_decision_check(&it->req, &d, &err)) {
		say(w, "cannot decide that: %s\n", err.msg);
		return WRES_RETRY;
	}
	d.decided_ms = sb_queue_now_ms();
	rc = sb_queue_decide(w->q, id, &d, &err);
	if (rc) {
		/* Lost the race (the broker's timeout, another approver) or
		 * the request is gone: move on. Anything else: ask again. */
		bool gone = rc == -EALREADY || rc == -ENOENT;

		if (w->json)
			emit_event(w, gone ? "gone" : "error", id, NULL, NULL, err.msg);
		else
			say(w, "%s\n", err.msg);
		return gone ? WRES_NEXT : WRES_RETRY;
	}
	if (w->json)
		emit_event(w, "decided", id, sb_queue_decision_to_json(&d), "decision", NULL);
	else
		sb_approver_print_decided(w->out, &it->req, &d);
	fflush(w->out);
	return WRES_NEXT;
}

struct scope_opt {
	enum sb_remember_scope scope;
	char value[SB_PATH_MAX + 1];
};

static const char *const scope_help[] = {
	"this exact request, once more", "this exact command line", "commands starting with these words",
	"under this directory", "connections to this host",
};

/* The scopes that fit the request, with their default values. "dir" is
 * not offered for shell commands: the directory of git is /usr/bin, and
 * remembering that would stop every program there from being asked about
 * (it can still be typed: "l dir /opt/tool/bin"). */
static size_t scope_options(const struct watch *w, const struct sb_queue_item *it, struct scope_opt opts[5])
{
	size_t n = 0;
	int s;

	for (s = SB_REM_ONCE; s <= SB_REM_HOST; s++) {
		struct sb_queue_decision d;

		if (s == SB_REM_DIR && it->req.trigger == SB_TRIG_SHELL)
			continue;

		memset(&d, 0, sizeof(d));
		d.verdict = SB_QV_ALLOW;
		d.remember = true;
		d.scope = (enum sb_remember_scope)s;
		snprintf(d.reviewer, sizeof(d.reviewer), "%s", w->reviewer);
		if (sb_queue_decision_check(&it->req, &d, NULL))
			continue;
		opts[n].scope = d.scope;
		memcpy(opts[n].value, d.remember_value, sizeof(opts[n].value));
		n++;
	}
	return n;
}

static enum wres always(struct watch *w, const struct sb_queue_item *it, char *inline_answer)
{
	struct scope_opt opts[5];
	size_t n = scope_options(w, it, opts), i;
	char line[WATCH_LINE_MAX], esc[512];
	const char *id = it->req.id;

	for (;;) {
		char *answer, *rest, *end;
		enum sb_remember_scope scope;
		const char *value = NULL;
		long num;

		if (inline_answer && inline_answer[0]) {
			answer = inline_answer;
			inline_answer = NULL;
		} else {
			enum wev ev;

			say(w, "Remember this approval as:\n");
			for (i = 0; i < n; i++) {
				sb_queue_escape(opts[i].value, esc, sizeof(esc));
				say(w, "  %zu) %-8s %s  (%s)\n", i + 1, sb_remember_scope_name(opts[i].scope), esc,
				    scope_help[opts[i].scope]);
			}
			if (n == 0)
				say(w, "  (no scope fits this request by default; give a scope and a value)\n");
			prompt(w, "scope [number or name, optionally followed by a value; Enter to go back] > ");
			ev = wait_answer(w, id, line, sizeof(line));
			if (ev != WEV_LINE)
				return on_event(w, id, ev);
			answer = trim(line);
			if (!answer[0])
				return WRES_RETRY;
		}
		rest = split_word(answer);
		num = strtol(answer, &end, 10);
		if (*answer && !*end) {
			if (num < 1 || (size_t)num > n) {
				say(w, "choose 1 to %zu\n", n);
				continue;
			}
			scope = opts[num - 1].scope;
			value = opts[num - 1].value;
		} else if (sb_remember_scope_parse(answer, &scope) == 0) {
			for (i = 0; i < n; i++) {
				if (opts[i].scope == scope)
					value = opts[i].value;
			}
		} else {
			say(w, "unknown scope '%s': once, command, prefix, dir or host\n", answer);
			continue;
		}
		if (rest[0])
			value = rest;
		if (!value) {
			say(w, "scope '%s' needs a value for this request\n", sb_remember_scope_name(scope));
			continue;
		}
		{
			enum wres r = decide(w, it, SB_QV_ALLOW, &scope, value, "");

			if (r != WRES_RETRY)
				return r;
		}
	}
}

static enum wres handle(struct watch *w, const struct sb_queue_item *it)
{
	char line[WATCH_LINE_MAX];
	const char *id = it->req.id;

	if (w->json) {
		cJSON *o = sb_approver_item_json(it, sb_queue_now_ms());

		cJSON_AddStringToObject(o, "event", "request");
		sb_print_json_line(w->out, o);
		fflush(w->out);
	} else {
		sb_approver_show(w->out, it, sb_queue_now_ms());
		fflush(w->out);
	}
	if (w->tty) {
		/* Type-ahead was typed before this request was on screen. */
		w->in.len = 0;
		tcflush(0, TCIFLUSH);
	}
	for (;;) {
		enum wev ev;
		enum wres r;
		char *word, *rest;

		prompt(w, "[a]pprove / [d]eny / a[l]ways (choose scope) / [s]kip > ");
		ev = wait_answer(w, id, line, sizeof(line));
		if (ev != WEV_LINE)
			return on_event(w, id, ev);
		word = trim(line);
		if (!word[0])
			continue;
		rest = split_word(word);
		if (is_word(word, "a", "approve", "y")) {
			r = decide(w, it, SB_QV_ALLOW, NULL, NULL, rest);
		} else if (is_word(word, "d", "deny", "n")) {
			r = decide(w, it, SB_QV_DENY, NULL, NULL, rest);
		} else if (is_word(word, "l", "always", NULL)) {
			r = always(w, it, rest);
		} else if (is_word(word, "s", "skip", NULL)) {
			release(w, id);
			if (w->nskipped == w->capskipped) {
				size_t ncap = w->capskipped ? w->capskipped * 2 : 16;
				void *ns = realloc(w->skipped, ncap * sizeof(*w->skipped));

				if (ns) {
					w->skipped = ns;
					w->capskipped = ncap;
				}
			}
			if (w->nskipped < w->capskipped)
				memcpy(w->skipped[w->nskipped++], id, SB_QUEUE_ID_MAX + 1);
			if (w->json)
				emit_event(w, "skipped", id, NULL, NULL, NULL);
			else
				say(w, "skipped %s; it stays pending (this watch will not show it again)\n", id);
			return WRES_NEXT;
		} else if (is_word(word, "q", "quit", NULL)) {
			release(w, id);
			return WRES_QUIT;
		} else if (is_word(word, "?", "h", "help")) {
			say(w, "a [reason]: approve   d [reason]: deny   l [scope [value]]: approve and remember\n"
			       "s: skip (leave pending)   q: quit\n");
			continue;
		} else {
			say(w, "unknown answer '%s': type a, d, l or s (or q to quit, ? for help)\n", word);
			continue;
		}
		if (r != WRES_RETRY)
			return r;
	}
}

static bool skipped(const struct watch *w, const char *id)
{
	size_t i;

	for (i = 0; i < w->nskipped; i++) {
		if (!strcmp(w->skipped[i], id))
			return true;
	}
	return false;
}

/* Claims the oldest pending request this watch has not skipped. */
static int next_request(struct watch *w, struct sb_queue_item *out, struct sb_err *err)
{
	struct sb_queue_list l;
	size_t i;
	int rc;

	rc = sb_queue_list(w->q, SB_QSM(SB_QS_PENDING), &l, err);
	if (rc)
		return rc;
	rc = -ENOENT;
	for (i = 0; i < l.n && rc == -ENOENT; i++) {
		const char *id = l.items[i].req.id;
		int c;

		if (skipped(w, id))
			continue;
		c = sb_queue_claim(w->q, id, w->owner, w->lease_ms, err);
		if (c == -EBUSY || c == -EALREADY || c == -ENOENT || c == -EAGAIN)
			continue;	/* someone else was quicker */
		if (c) {
			rc = c;
			break;
		}
		if (sb_queue_get(w->q, id, out, NULL) == 0 && out->state == SB_QS_CLAIMED) {
			rc = 0;
			break;
		}
		sb_queue_item_free(out);
	}
	sb_queue_list_free(&l);
	return rc;
}

int cmd_watch(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "folder", required_argument, NULL, 'f' }, { "json", no_argument, NULL, 'j' },
		{ "ask-reason", no_argument, NULL, 'a' },   { "reviewer", required_argument, NULL, 'u' },
		{ "lease", required_argument, NULL, 'l' },  { "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	struct watch w;
	struct sb_err err = { { 0 } };
	const char *folder = NULL;
	sigset_t block, old;
	char host[256] = "localhost", *end;
	bool announced = false;
	int c, rc = SB_EXIT_OK;
	long lease;

	memset(&w, 0, sizeof(w));
	w.sigfd = -1;
	w.lease_ms = SB_QUEUE_DEFAULT_LEASE_MS;
	while ((c = getopt_long(argc, argv, "h", opts, NULL)) != -1) {
		switch (c) {
		case 'f':
			folder = optarg;
			break;
		case 'j':
			w.json = true;
			break;
		case 'a':
			w.ask_reason = true;
			break;
		case 'u':
			if (!optarg[0] || strlen(optarg) > SB_QUEUE_NAME_MAX)
				return sb_usage_error("watch", "--reviewer must be 1 to %d characters", SB_QUEUE_NAME_MAX);
			snprintf(w.reviewer, sizeof(w.reviewer), "%s", optarg);
			break;
		case 'l':
			lease = strtol(optarg, &end, 10);
			if (*end || lease < 3 || lease > 86400)
				return sb_usage_error("watch", "--lease takes 3 to 86400 seconds");
			w.lease_ms = (int)lease * 1000;
			break;
		case 'h':
			usage(stdout);
			return SB_EXIT_OK;
		default:
			return sb_usage_error("watch", "invalid option");
		}
	}
	if (optind < argc)
		return sb_usage_error("watch", "unexpected argument '%s'", argv[optind]);
	if (!w.reviewer[0])
		sb_approver_reviewer(w.reviewer);
	gethostname(host, sizeof(host) - 1);
	snprintf(w.owner, sizeof(w.owner), "watch:%s@%.64s:%d", w.reviewer, host, (int)getpid());
	w.tty = isatty(0);
	w.out = stdout;
	w.ui = w.json ? stderr : stdout;
	if ((rc = sb_approver_open("watch", folder, SB_QUEUE_CREATE, &w.q)))
		return rc;
	if (sb_queue_notify_open(w.q, SB_QSM(SB_QS_PENDING) | SB_QSM(SB_QS_CLAIMED) | SB_QSM(SB_QS_DONE), &w.n,
				 &err)) {
		sb_queue_close(w.q);
		return sb_fail("watch", "%s", err.msg);
	}
	sigemptyset(&block);
	sigaddset(&block, SIGINT);
	sigaddset(&block, SIGTERM);
	sigaddset(&block, SIGHUP);
	sigprocmask(SIG_BLOCK, &block, &old);
	w.sigfd = signalfd(-1, &block, SFD_CLOEXEC | SFD_NONBLOCK);
	if (w.sigfd < 0) {
		rc = sb_fail("watch", "signalfd: %s", strerror(errno));
		goto out;
	}
	if (!w.json)
		say(&w, "Watching %s as %s (Ctrl-C or Ctrl-D to stop).\n", sb_queue_path(w.q), w.reviewer);
	for (;;) {
		struct sb_queue_item it;
		enum wres r;

		sb_queue_reclaim_stale(w.q, 0, NULL, NULL);
		c = next_request(&w, &it, &err);
		if (c == 0) {
			r = handle(&w, &it);
			sb_queue_item_free(&it);
			announced = false;
			if (r == WRES_QUIT)
				break;
			continue;
		}
		if (c != -ENOENT) {
			rc = sb_fail("watch", "%s", err.msg);
			break;
		}
		if (!announced && !w.json)
			say(&w, "waiting for requests...\n");
		announced = true;
		if (!wait_idle(&w))
			break;
	}
out:
	if (w.sigfd >= 0)
		close(w.sigfd);
	sigprocmask(SIG_SETMASK, &old, NULL);
	sb_queue_notify_close(w.n);
	sb_queue_close(w.q);
	free(w.skipped);
	return rc;
}
