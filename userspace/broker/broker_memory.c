#include "broker_memory.h"

#include <cjson/cJSON.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <unistd.h>

#define MEM_FILE_MAX (4u << 20)
#define MEM_MAX 10000

void sb_bmem_init(struct sb_bmem *m)
{
	memset(m, 0, sizeof(*m));
}

void sb_bmem_free(struct sb_bmem *m)
{
	size_t i;

	for (i = 0; i < m->n; i++)
		free(m->e[i].value);
	free(m->e);
	memset(m, 0, sizeof(*m));
}

void sb_bmem_remove(struct sb_bmem *m, size_t i)
{
	if (i >= m->n)
		return;
	free(m->e[i].value);
	memmove(&m->e[i], &m->e[i + 1], (m->n - i - 1) * sizeof(m->e[0]));
	m->n--;
}

int sb_bmem_add(struct sb_bmem *m, enum sb_remember_scope scope, enum sb_trigger trigger, const char *value,
		const char *reviewer, const char *request, int64_t created_ms, bool *added, struct sb_err *err)
{
	struct sb_memory canon;
	struct sb_bmem_entry *e;
	size_t i;
	int rc;

	if (added)
		*added = false;
	/* The classifier validates and canonicalises. */
	sb_memory_init(&canon);
	rc = sb_memory_add(&canon, scope, trigger, value, err);
	if (rc) {
		sb_memory_free(&canon);
		return rc;
	}
	if (m->n >= MEM_MAX) {
		sb_memory_free(&canon);
		return sb_errf(err, -E2BIG, "more than %d remembered decisions", MEM_MAX);
	}
	if (m->n == m->cap) {
		size_t ncap = m->cap ? m->cap * 2 : 8;
		struct sb_bmem_entry *ne = realloc(m->e, ncap * sizeof(*ne));

		if (!ne) {
			sb_memory_free(&canon);
			return -ENOMEM;
		}
		m->e = ne;
		m->cap = ncap;
	}
	e = &m->e[m->n];
	memset(e, 0, sizeof(*e));
	e->scope = scope;
	e->trigger = trigger;
	if (canon.items[0].port >= 0) {
		/* host:port: the classifier keeps the port apart; the file
		 * keeps the value as given, in canonical form. */
		const char *v = canon.items[0].value;
		size_t l = strlen(v) + 16;

		e->value = malloc(l);
		if (e->value)
			snprintf(e->value, l, strchr(v, ':') ? "[%s]:%d" : "%s:%d", v, canon.items[0].port);
	} else {
		e->value = canon.items[0].value;
		canon.items[0].value = NULL;
	}
	sb_memory_free(&canon);
	if (!e->value)
		return -ENOMEM;
	snprintf(e->reviewer, sizeof(e->reviewer), "%s", reviewer ? reviewer : "");
	snprintf(e->request, sizeof(e->request), "%s", request ? request : "");
	e->created_ms = created_ms;
	for (i = 0; i < m->n; i++) {
		if (m->e[i].scope == scope && m->e[i].trigger == trigger && !strcmp(m->e[i].value, e->value)) {
			free(e->value);
			return 0;	/* already remembered */
		}
	}
	m->n++;
	if (added)
		*added = true;
	return 0;
}

static const char *str_field(const cJSON *o, const char *name, bool required, size_t max, int i, int *rc,
			     struct sb_err *err)
{
	const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, name);

	if (!v) {
		if (required)
			*rc = sb_errf(err, -EINVAL, "$.remembered[%d].%s is missing", i, name);
		return NULL;
	}
	if (!cJSON_IsString(v) || strlen(v->valuestring) > max) {
		*rc = sb_errf(err, -EINVAL, "$.remembered[%d].%s: expected a string of at most %zu bytes", i, name, max);
		return NULL;
	}
	return v->valuestring;
}

static int parse_entry(const cJSON *o, int i, struct sb_bmem *m, struct sb_err *err)
{
	static const char *const known[] = { "scope", "trigger", "value", "reviewer", "request", "created_at", NULL };
	const char *scope, *trigger, *value, *reviewer, *request, *created;
	enum sb_remember_scope sc;
	enum sb_trigger tr;
	const cJSON *f;
	int64_t ms = 0;
	int rc = 0;

	if (!cJSON_IsObject(o))
		return sb_errf(err, -EINVAL, "$.remembered[%d]: expected an object", i);
	cJSON_ArrayForEach(f, o) {
		size_t k;

		for (k = 0; known[k] && strcmp(known[k], f->string); k++)
			;
		if (!known[k])
			return sb_errf(err, -EINVAL, "$.remembered[%d]: unknown field '%s'", i, f->string);
	}
	scope = str_field(o, "scope", true, 16, i, &rc, err);
	trigger = str_field(o, "trigger", true, 16, i, &rc, err);
	value = str_field(o, "value", true, SB_PATH_MAX, i, &rc, err);
	reviewer = str_field(o, "reviewer", false, SB_QUEUE_NAME_MAX, i, &rc, err);
	request = str_field(o, "request", false, SB_QUEUE_ID_MAX, i, &rc, err);
	created = str_field(o, "created_at", false, 64, i, &rc, err);
	if (rc)
		return rc;
	if (sb_remember_scope_parse(scope, &sc))
		return sb_errf(err, -EINVAL, "$.remembered[%d].scope: '%s' is not once, command, prefix, dir or host", i,
			       scope);
	if (sb_trigger_parse(trigger, &tr))
		return sb_errf(err, -EINVAL, "$.remembered[%d].trigger: '%s' is not shell, write, network or read", i,
			       trigger);
	if (request && request[0] && !sb_queue_id_valid(request))
		return sb_errf(err, -EINVAL, "$.remembered[%d].request: invalid request id", i);
	if (created && sb_queue_time_parse(created, &ms))
		return sb_errf(err, -EINVAL, "$.remembered[%d].created_at: expected an RFC 3339 UTC time", i);
	rc = sb_bmem_add(m, sc, tr, value, reviewer, request, ms, NULL, err);
	if (rc && err)
		sb_err_prefix(err, "$.remembered[%d]: ", i);
	return rc;
}

int sb_bmem_parse(const char *text, size_t len, struct sb_bmem *m, struct sb_err *err)
{
	cJSON *doc, *ver, *list, *it, *f;
	int rc = 0, i = 0;

	sb_bmem_init(m);
	if (len > MEM_FILE_MAX || memchr(text, '\0', len))
		return sb_errf(err, -EINVAL, "not a remembered-decisions file (too large or binary)");
	doc = cJSON_ParseWithLength(text, len);
	if (!doc || !cJSON_IsObject(doc)) {
		cJSON_Delete(doc);
		return sb_errf(err, -EINVAL, "invalid JSON; expected {\"version\": 1, \"remembered\": [...]}");
	}
	cJSON_ArrayForEach(f, doc) {
		if (strcmp(f->string, "version") && strcmp(f->string, "remembered")) {
			rc = sb_errf(err, -EINVAL, "$: unknown field '%s'", f->string);
			goto out;
		}
	}
	ver = cJSON_GetObjectItemCaseSensitive(doc, "version");
	list = cJSON_GetObjectItemCaseSensitive(doc, "remembered");
	if (!cJSON_IsNumber(ver) || ver->valuedouble != 1) {
		rc = sb_errf(err, -EINVAL, "$.version: expected 1");
		goto out;
	}
	if (!cJSON_IsArray(list)) {
		rc = sb_errf(err, -EINVAL, "$.remembered: expected an array");
		goto out;
	}
	cJSON_ArrayForEach(it, list) {
		rc = parse_entry(it, i++, m, err);
		if (rc)
			goto out;
	}
out:
	cJSON_Delete(doc);
	if (rc)
		sb_bmem_free(m);
	return rc;
}

static void mem_path(const char *folder, const char *name, char *out, size_t len)
{
	snprintf(out, len, "%s/.sandbox/%s", folder, name);
}

int sb_bmem_load(const char *folder, struct sb_bmem *m, struct sb_err *err)
{
	char path[PATH_MAX], *buf;
	struct stat st;
	ssize_t n;
	size_t got = 0;
	int fd, rc;

	sb_bmem_init(m);
	mem_path(folder, "remembered.json", path, sizeof(path));
	fd = open(path, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
	if (fd < 0) {
		if (errno == ENOENT)
			return 0;
		return sb_errf(err, -errno, "cannot open %s: %s", path, strerror(errno));
	}
	if (fstat(fd, &st) || !S_ISREG(st.st_mode) || st.st_size > (off_t)MEM_FILE_MAX) {
		close(fd);
		return sb_errf(err, -EINVAL, "%s is not a regular file of at most 4 MiB", path);
	}
	buf = malloc((size_t)st.st_size + 1);
	if (!buf) {
		close(fd);
		return -ENOMEM;
	}
	while (got < (size_t)st.st_size && (n = read(fd, buf + got, (size_t)st.st_size - got)) > 0)
		got += (size_t)n;
	close(fd);
	rc = sb_bmem_parse(buf, got, m, err);
	free(buf);
	if (rc)
		sb_err_prefix(err, "%s: ", path);
	return rc;
}

static cJSON *to_json(const struct sb_bmem *m)
{
	cJSON *doc = cJSON_CreateObject(), *list;
	size_t i;

	if (!doc)
		return NULL;
	cJSON_AddNumberToObject(doc, "version", 1);
	list = cJSON_AddArrayToObject(doc, "remembered");
	for (i = 0; list && i < m->n; i++) {
		const struct sb_bmem_entry *e = &m->e[i];
		cJSON *o = cJSON_CreateObject();
		char t[SB_QUEUE_TIME_LEN];

		if (!o)
			break;
		cJSON_AddStringToObject(o, "scope", sb_remember_scope_name(e->scope));
		cJSON_AddStringToObject(o, "trigger", sb_trigger_name(e->trigger));
		cJSON_AddStringToObject(o, "value", e->value);
		if (e->reviewer[0])
			cJSON_AddStringToObject(o, "reviewer", e->reviewer);
		if (e->request[0])
			cJSON_AddStringToObject(o, "request", e->request);
		if (e->created_ms) {
			sb_queue_time_format(e->created_ms, t);
			cJSON_AddStringToObject(o, "created_at", t);
		}
		cJSON_AddItemToArray(list, o);
	}
	return doc;
}

int sb_bmem_save(const char *folder, const struct sb_bmem *m, struct sb_err *err)
{
	char dir[PATH_MAX], tmp[PATH_MAX], dst[PATH_MAX];
	cJSON *doc = to_json(m);
	char *text = doc ? cJSON_Print(doc) : NULL;
	uint64_t rnd = 0;
	size_t len, off = 0;
	int fd = -1, dfd, rc = 0;

	cJSON_Delete(doc);
	if (!text)
		return -ENOMEM;
	len = strlen(text);
	mem_path(folder, "", dir, sizeof(dir));
	if (mkdir(dir, 0700) && errno != EEXIST) {
		rc = sb_errf(err, -errno, "cannot create %s: %s", dir, strerror(errno));
		goto out;
	}
	mem_path(folder, "tmp", dir, sizeof(dir));
	if (mkdir(dir, 0700) && errno != EEXIST) {
		rc = sb_errf(err, -errno, "cannot create %s: %s", dir, strerror(errno));
		goto out;
	}
	if (getrandom(&rnd, sizeof(rnd), 0) != sizeof(rnd))
		rnd = (uint64_t)getpid() * 2654435761u;
	/* The queue's crash recovery removes "<pid>-<hex>.tmp" of dead writers. */
	snprintf(tmp, sizeof(tmp), "%s/%d-%016llx.tmp", dir, (int)getpid(), (unsigned long long)rnd);
	mem_path(folder, "remembered.json", dst, sizeof(dst));
	fd = open(tmp, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
	if (fd < 0) {
		rc = sb_errf(err, -errno, "cannot create %s: %s", tmp, strerror(errno));
		goto out;
	}
	while (off < len) {
		ssize_t n = write(fd, text + off, len - off);

		if (n < 0) {
			if (errno == EINTR)
				continue;
			rc = sb_errf(err, -errno, "cannot write %s: %s", tmp, strerror(errno));
			goto out;
		}
		off += (size_t)n;
	}
	if (write(fd, "\n", 1) != 1 || fsync(fd)) {
		rc = sb_errf(err, -errno, "cannot write %s: %s", tmp, strerror(errno));
		goto out;
	}
	close(fd);
	fd = -1;
	if (rename(tmp, dst)) {
		rc = sb_errf(err, -errno, "cannot replace %s: %s", dst, strerror(errno));
		goto out;
	}
	mem_path(folder, "", dir, sizeof(dir));
	dfd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (dfd >= 0) {
		fsync(dfd);
		close(dfd);
	}
out:
	if (fd >= 0) {
		close(fd);
		unlink(tmp);
	}
	free(text);
	return rc;
}

int sb_bmem_to_memory(const struct sb_bmem *m, struct sb_memory *out, struct sb_err *err)
{
	size_t i;
	int rc;

	sb_memory_init(out);
	for (i = 0; i < m->n; i++) {
		rc = sb_memory_add(out, m->e[i].scope, m->e[i].trigger, m->e[i].value, err);
		if (rc) {
			sb_memory_free(out);
			return rc;
		}
	}
	return 0;
}

static bool same_entry(const struct sb_bmem_entry *a, const struct sb_bmem_entry *b)
{
	return a->scope == b->scope && a->trigger == b->trigger && !strcmp(a->value, b->value);
}

static bool same_list(const struct sb_bmem *a, const struct sb_bmem *b)
{
	size_t i;

	if (a->n != b->n)
		return false;
	for (i = 0; i < a->n; i++)
		if (!same_entry(&a->e[i], &b->e[i]))
			return false;
	return true;
}

/* Brokers of one folder (two `run` in the same project) share the file:
 * each change is a read-modify-write of what is on disk, under an
 * exclusive flock(2) that the kernel drops when its holder dies. */
static int lock_file(const char *folder, struct sb_err *err)
{
	char dir[PATH_MAX], path[PATH_MAX];
	int fd;

	mem_path(folder, "", dir, sizeof(dir));
	if (mkdir(dir, 0700) && errno != EEXIST)
		return sb_errf(err, -errno, "cannot create %s: %s", dir, strerror(errno));
	mem_path(folder, "remembered.lock", path, sizeof(path));
	fd = open(path, O_RDWR | O_CREAT | O_NOFOLLOW | O_CLOEXEC, 0600);
	if (fd < 0)
		return sb_errf(err, -errno, "cannot open %s: %s", path, strerror(errno));
	while (flock(fd, LOCK_EX)) {
		int e = errno;

		if (e == EINTR)
			continue;
		close(fd);
		return sb_errf(err, -e, "cannot lock %s: %s", path, strerror(e));
	}
	return fd;
}

/* *m becomes cur (the file's list); *changed when that differs from *m. */
static void take_list(struct sb_bmem *m, struct sb_bmem *cur, bool *changed)
{
	if (changed)
		*changed = !same_list(m, cur);
	sb_bmem_free(m);
	*m = *cur;
	sb_bmem_init(cur);
}

/* One change of the file: under the lock, load it, let edit change the
 * loaded list (returning 1 when it must be saved), save, and take the
 * file's list as *m. -ENOENT from edit (the entry is gone) still takes
 * the file's list: the file is the truth from now on. */
static int edit_saved(const char *folder, struct sb_bmem *m, bool *changed,
		      int (*edit)(struct sb_bmem *cur, void *arg, struct sb_err *err), void *arg, struct sb_err *err)
{
	struct sb_bmem cur;
	int fd, rc;

	if (changed)
		*changed = false;
	fd = lock_file(folder, err);
	if (fd < 0)
		return fd;
	rc = sb_bmem_load(folder, &cur, err);
	if (rc)
		goto out;
	rc = edit(&cur, arg, err);
	if (rc == 1)
		rc = sb_bmem_save(folder, &cur, err);
	if (rc == 0 || rc == -ENOENT)
		take_list(m, &cur, changed);
	sb_bmem_free(&cur);
out:
	close(fd);
	return rc;
}

struct add_arg {
	enum sb_remember_scope scope;
	enum sb_trigger trigger;
	const char *value, *reviewer, *request;
	int64_t created_ms;
};

static int edit_add(struct sb_bmem *cur, void *arg, struct sb_err *err)
{
	const struct add_arg *a = arg;
	bool added = false;
	int rc = sb_bmem_add(cur, a->scope, a->trigger, a->value, a->reviewer, a->request, a->created_ms, &added, err);

	return rc ? rc : added;
}

int sb_bmem_add_saved(const char *folder, struct sb_bmem *m, enum sb_remember_scope scope, enum sb_trigger trigger,
		      const char *value, const char *reviewer, const char *request, int64_t created_ms, bool *changed,
		      struct sb_err *err)
{
	struct add_arg a = { scope, trigger, value, reviewer, request, created_ms };

	return edit_saved(folder, m, changed, edit_add, &a, err);
}

static int edit_take_once(struct sb_bmem *cur, void *arg, struct sb_err *err)
{
	const struct sb_bmem_entry *want = arg;
	size_t i;

	for (i = 0; i < cur->n && !same_entry(&cur->e[i], want); i++)
		;
	if (i == cur->n)
		return sb_errf(err, -ENOENT, "remembered once '%s' was used already (by another broker, or removed)",
			       want->value);
	sb_bmem_remove(cur, i);
	return 1;
}

int sb_bmem_take_once(const char *folder, struct sb_bmem *m, enum sb_trigger trigger, const char *value,
		      bool *changed, struct sb_err *err)
{
	struct sb_bmem_entry want = { .scope = SB_REM_ONCE, .trigger = trigger, .value = (char *)value };

	return edit_saved(folder, m, changed, edit_take_once, &want, err);
}
