/* Kernel events (struct sb_kevent) as readable lines and JSON lines:
 * every kind (path, exec, network, task), rule names from the policy,
 * the special rule indexes, truncated paths, audit mode. */
#include <arpa/inet.h>
#include <cjson/cJSON.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <cmocka.h>

#include "kernel/events.h"
#include "policy.h"

static struct sb_policy *policy(void)
{
	const char *json = "{\"version\":1,\"write\":{\"deny\":[\"~/.bashrc\"]},\"shell\":{\"deny\":[\"git push*\"]}}";
	struct sb_policy_opts o = { .home_override = "/home/u", .root_override = "/p" };
	struct sb_policy *p = NULL;
	struct sb_err err = { { 0 } };

	if (sb_policy_parse(json, strlen(json), &o, &p, &err))
		fail_msg("parse: %s", err.msg);
	return p;
}

static long rule_index(const struct sb_policy *p, const char *text)
{
	size_t i;

	for (i = 0; i < p->nrules; i++)
		if (!p->rules[i].is_protected && !strcmp(p->rules[i].text, text))
			return (long)i;
	fail_msg("no rule %s", text);
	return -1;
}

static void base(struct sb_kevent *ev)
{
	memset(ev, 0, sizeof(*ev));
	ev->seq = 42;
	ev->pid = 100;
	ev->tgid = 100;
	ev->ppid = 1;
	ev->uid = 1000;
	ev->sandbox = 3;
	ev->cgroup_id = 77;
	memcpy(ev->comm, "bash", 4);
}

static const char *jstr(cJSON *o, const char *k)
{
	cJSON *v = cJSON_GetObjectItemCaseSensitive(o, k);

	return cJSON_IsString(v) ? v->valuestring : "";
}

static double jnum(cJSON *o, const char *k)
{
	cJSON *v = cJSON_GetObjectItemCaseSensitive(o, k);

	return cJSON_IsNumber(v) ? v->valuedouble : -1;
}

static void test_path_event(void **state)
{
	struct sb_policy *p = policy();
	struct sb_kevent ev;
	char line[2048];
	cJSON *o;

	(void)state;
	base(&ev);
	ev.kind = SB_EVK_PATH;
	ev.hook = SB_HOOK_FILE_OPEN;
	ev.action = SB_ACT_DENIED;
	ev.tier = SB_K_DENY;
	ev.trigger = SB_K_WRITE;
	ev.op = SB_KOP_OPEN;
	ev.ret = -1;
	ev.rule = (uint32_t)rule_index(p, "~/.bashrc");
	strcpy(ev.path.path, "/home/u/.bashrc");
	ev.path.len = 15;
	sb_event_format(&ev, p, line, sizeof(line));
	assert_non_null(strstr(line, "DENIED write open /home/u/.bashrc"));
	assert_non_null(strstr(line, "rule '~/.bashrc' at $.write.deny[0]"));
	assert_non_null(strstr(line, "bash[100] uid 1000, sandbox 3, seq 42"));
	o = sb_event_to_json(&ev, p);
	assert_string_equal(jstr(o, "event"), "denied");
	assert_string_equal(jstr(o, "trigger"), "write");
	assert_string_equal(jstr(o, "hook"), "file_open");
	assert_string_equal(jstr(o, "op"), "open");
	assert_string_equal(jstr(o, "path"), "/home/u/.bashrc");
	assert_string_equal(jstr(o, "rule"), "~/.bashrc");
	assert_string_equal(jstr(o, "rule_where"), "$.write.deny[0]");
	assert_string_equal(jstr(o, "errno"), "EPERM");
	assert_true(jnum(o, "seq") == 42 && jnum(o, "cgroup_id") == 77 && jnum(o, "ppid") == 1);
	assert_true(cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(o, "enforced")));
	cJSON_Delete(o);
	/* Truncated and partial paths say so. */
	ev.flags = SB_EVF_PATH_TRUNC | SB_EVF_PATH_PARTIAL;
	ev.rule = SB_RULE_DEFAULT;
	sb_event_format(&ev, p, line, sizeof(line));
	assert_non_null(strstr(line, "/home/u/.bashrc... (path within its filesystem)"));
	assert_non_null(strstr(line, "default 'default'"));
	o = sb_event_to_json(&ev, p);
	assert_true(cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(o, "path_truncated")));
	assert_null(cJSON_GetObjectItemCaseSensitive(o, "rule_index"));
	cJSON_Delete(o);
	sb_policy_free(p);
}

static void test_exec_event(void **state)
{
	struct sb_policy *p = policy();
	struct sb_kevent ev;
	char line[2048];
	cJSON *o;

	(void)state;
	base(&ev);
	ev.kind = SB_EVK_EXEC;
	ev.hook = SB_HOOK_BPRM_COMMITTED;
	ev.action = SB_ACT_KILLED;
	ev.tier = SB_K_DENY;
	ev.trigger = SB_K_SHELL;
	ev.ret = 9;
	ev.rule = (uint32_t)rule_index(p, "git push*");
	strcpy(ev.exec.path, "/usr/bin/git");
	strcpy(ev.exec.argv, "git push origin");
	sb_event_format(&ev, p, line, sizeof(line));
	assert_non_null(strstr(line, "KILLED shell /usr/bin/git \"git push origin\": rule 'git push*'"));
	o = sb_event_to_json(&ev, p);
	assert_string_equal(jstr(o, "event"), "killed");
	assert_string_equal(jstr(o, "command"), "git push origin");
	assert_string_equal(jstr(o, "signal"), "SIGKILL");
	assert_string_equal(jstr(o, "hook"), "bprm_committed_creds");
	cJSON_Delete(o);
	sb_policy_free(p);
}

static void test_net_event(void **state)
{
	struct sb_kevent ev;
	char line[2048];
	cJSON *o;

	(void)state;
	base(&ev);
	ev.kind = SB_EVK_NET;
	ev.hook = SB_HOOK_SOCKET_SENDMSG;
	ev.action = SB_ACT_ESCALATED;
	ev.tier = SB_K_ESCALATE;
	ev.trigger = SB_K_NETWORK;
	ev.ret = -1;
	ev.rule = SB_RULE_DEFAULT;
	ev.net.family = AF_INET6;
	ev.net.port = 53;
	ev.net.proto = 2;
	inet_pton(AF_INET6, "2001:db8::1", ev.net.addr);
	sb_event_format(&ev, NULL, line, sizeof(line));
	assert_non_null(strstr(line, "ESCALATED network [2001:db8::1]:53 udp"));
	o = sb_event_to_json(&ev, NULL);
	assert_string_equal(jstr(o, "family"), "ipv6");
	assert_string_equal(jstr(o, "addr"), "2001:db8::1");
	assert_true(jnum(o, "port") == 53);
	assert_string_equal(jstr(o, "proto"), "udp");
	assert_string_equal(jstr(o, "tier"), "escalate");
	cJSON_Delete(o);
	ev.net.family = AF_INET;
	memset(ev.net.addr, 0, 16);
	inet_pton(AF_INET, "169.254.169.254", ev.net.addr);
	ev.net.port = 80;
	ev.net.proto = 1;
	ev.action = SB_ACT_AUDIT;
	sb_event_format(&ev, NULL, line, sizeof(line));
	assert_non_null(strstr(line, "AUDIT network 169.254.169.254:80 tcp"));
	assert_non_null(strstr(line, "[audit mode: not enforced]"));
}

static void test_task_event_and_labels(void **state)
{
	struct sb_kevent ev;
	char line[2048], buf[64];
	cJSON *o;

	(void)state;
	base(&ev);
	ev.kind = SB_EVK_TASK;
	ev.hook = SB_HOOK_TASK_KILL;
	ev.action = SB_ACT_DENIED;
	ev.tier = SB_K_DENY;
	ev.rule = SB_RULE_SELF;
	ev.ret = -1;
	ev.task.target_pid = 555;
	ev.task.arg = 15;
	sb_event_format(&ev, NULL, line, sizeof(line));
	assert_non_null(strstr(line, "DENIED self-protection signal 15 to pid 555"));
	o = sb_event_to_json(&ev, NULL);
	assert_string_equal(jstr(o, "rule"), "self-protection");
	assert_true(jnum(o, "target_pid") == 555);
	cJSON_Delete(o);
	assert_string_equal(sb_rule_label(NULL, SB_RULE_WALK_LIMIT, buf, sizeof(buf)), "path-too-deep");
	assert_string_equal(sb_rule_label(NULL, SB_RULE_ANON_EXEC, buf, sizeof(buf)), "anonymous-exec");
	assert_string_equal(sb_rule_label(NULL, SB_RULE_SYS_FS, buf, sizeof(buf)), "kernel-filesystem");
	assert_string_equal(sb_rule_label(NULL, 7, buf, sizeof(buf)), "rule #7");
	assert_string_equal(sb_hook_name(SB_HOOK_USERNS_CREATE), "userns_create");
	assert_string_equal(sb_hook_name(SB_HOOK__COUNT), "?");
	assert_string_equal(sb_kop_name(SB_KOP_RENAME_TO), "rename-to");
	assert_string_equal(sb_kop_name(SB_KOP_LINK_SOURCE), "link-source");
}

/* Every hook has a name (the event format depends on it). */
static void test_all_hooks_named(void **state)
{
	unsigned h;

	(void)state;
	for (h = 0; h < SB_HOOK__COUNT; h++)
		assert_string_not_equal(sb_hook_name(h), "?");
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_path_event),
		cmocka_unit_test(test_exec_event),
		cmocka_unit_test(test_net_event),
		cmocka_unit_test(test_task_event_and_labels),
		cmocka_unit_test(test_all_hooks_named),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
