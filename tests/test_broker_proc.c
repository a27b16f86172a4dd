/* The broker's /proc reading against a fake proc tree: task identity
 * (start time, so a recycled pid is never the held task), state, the
 * process chain up to the sandbox root, argv splitting. */
#include "broker_test_util.h"

#include <sys/mman.h>

#include "broker/broker_proc.h"

struct fx {
	char dir[PATH_MAX];
};

static int setup(void **state)
{
	struct fx *f = calloc(1, sizeof(*f));

	bt_tmpdir(f->dir, sizeof(f->dir));
	*state = f;
	return 0;
}

static int teardown(void **state)
{
	struct fx *f = *state;

	bt_rm_rf(f->dir);
	free(f);
	return 0;
}

/* A process: stat (state, ppid, start ticks), cmdline, cgroup. */
static void proc_add(const char *dir, int pid, const char *comm, char state, int ppid, unsigned long long start,
		     const char *cmdline, size_t cmdlen, const char *cg)
{
	char rel[128];

	snprintf(rel, sizeof(rel), "%d/stat", pid);
	bt_write(dir, rel, "%d (%s) %c %d 1 1 0 -1 4194304 100 0 0 0 1 2 0 0 20 0 1 0 %llu 1000 100\n", pid, comm, state,
		 ppid, start);
	snprintf(rel, sizeof(rel), "%d/task/%d/stat", pid, pid);
	bt_write(dir, rel, "%d (%s) %c %d 1 1 0 -1 4194304 100 0 0 0 1 2 0 0 20 0 1 0 %llu 1000 100\n", pid, comm, state,
		 ppid, start);
	snprintf(rel, sizeof(rel), "%d/cgroup", pid);
	bt_write(dir, rel, "0::%s\n", cg);
	if (cmdline) {
		char path[PATH_MAX];
		FILE *fp;

		snprintf(path, sizeof(path), "%s/%d/cmdline", dir, pid);
		fp = fopen(path, "w");
		assert_non_null(fp);
		fwrite(cmdline, 1, cmdlen, fp);
		fclose(fp);
	}
}

static void test_stat_parse(void **state)
{
	struct fx *f = *state;
	struct sb_pstat st;

	proc_add(f->dir, 42, "we (ird) name", 'T', 7, 123456, NULL, 0, "/");
	assert_int_equal(sb_proc_stat(f->dir, 42, 0, &st), 0);
	assert_string_equal(st.comm, "we (ird) name");
	assert_int_equal(st.state, 'T');
	assert_int_equal(st.ppid, 7);
	assert_int_equal(st.start_ticks, 123456);
	assert_int_equal(sb_proc_stat(f->dir, 42, 42, &st), 0);
	assert_int_equal(sb_proc_stat(f->dir, 43, 0, &st), -ENOENT);
	bt_write(f->dir, "44/stat", "44 (broken\n");
	assert_int_equal(sb_proc_stat(f->dir, 44, 0, &st), -EINVAL);
}

static void test_same_start(void **state)
{
	(void)state;
	/* /proc rounds start_boottime down to ticks. */
	assert_true(sb_proc_same_start(123, 1230000000ULL, 100));
	assert_true(sb_proc_same_start(123, 1239999999ULL, 100));
	assert_false(sb_proc_same_start(123, 1240000000ULL, 100));
	assert_false(sb_proc_same_start(124, 1230000000ULL, 100));
}

static void test_task_check(void **state)
{
	struct fx *f = *state;
	bool stopped = false;

	proc_add(f->dir, 50, "held", 'T', 1, 500, NULL, 0, "/box");
	proc_add(f->dir, 51, "runs", 'S', 1, 510, NULL, 0, "/box");
	proc_add(f->dir, 52, "zombie", 'Z', 1, 520, NULL, 0, "/box");
	assert_int_equal(sb_proc_task_check(f->dir, 50, 50, 5000000000ULL, 100, &stopped), 0);
	assert_true(stopped);
	assert_int_equal(sb_proc_task_check(f->dir, 51, 51, 5100000000ULL, 100, &stopped), 0);
	assert_false(stopped);
	/* Same pid, another start time: a recycled pid, not the held task. */
	assert_int_equal(sb_proc_task_check(f->dir, 50, 50, 4990000000ULL, 100, &stopped), -ESRCH);
	assert_int_equal(sb_proc_task_check(f->dir, 52, 52, 5200000000ULL, 100, &stopped), -ESRCH);
	assert_int_equal(sb_proc_task_check(f->dir, 53, 53, 1, 100, &stopped), -ESRCH);
	/* A thread that is not in that process. */
	assert_int_equal(sb_proc_task_check(f->dir, 50, 51, 5100000000ULL, 100, &stopped), -ESRCH);
	/* /proc that cannot be read (here stat is a directory: EISDIR, as
	 * EMFILE or ENOMEM would be) is not a task that is gone. */
	bt_write(f->dir, "55/task/55/x", "");
	{
		char p[PATH_MAX + 32];

		snprintf(p, sizeof(p), "%s/55/task/55/stat", f->dir);
		assert_int_equal(mkdir(p, 0755), 0);
	}
	assert_int_equal(sb_proc_task_check(f->dir, 55, 55, 5500000000ULL, 100, &stopped), -EISDIR);
}

static void test_split_cmdline(void **state)
{
	char **argv;
	size_t argc;

	(void)state;
	assert_int_equal(sb_proc_split_cmdline("git\0push\0origin\0", 16, &argv, &argc), 0);
	assert_int_equal(argc, 3);
	assert_string_equal(argv[0], "git");
	assert_string_equal(argv[2], "origin");
	sb_proc_argv_free(argv, argc);
	/* An empty argument stays; a cut last string is kept. */
	assert_int_equal(sb_proc_split_cmdline("a\0\0b", 4, &argv, &argc), 0);
	assert_int_equal(argc, 3);
	assert_string_equal(argv[1], "");
	assert_string_equal(argv[2], "b");
	sb_proc_argv_free(argv, argc);
	assert_int_equal(sb_proc_split_cmdline("", 0, &argv, &argc), 0);
	assert_int_equal(argc, 0);
	assert_null(argv);
}

static void test_enrich_chain(void **state)
{
	struct fx *f = *state;
	struct sb_penrich e;
	char link[PATH_MAX];

	/* 1 (outside) <- 10 agent (box) <- 20 bash (box/sub) <- 30 git (box/sub) */
	proc_add(f->dir, 1, "systemd", 'S', 0, 1, "/sbin/init\0", 11, "/init.scope");
	proc_add(f->dir, 10, "claude", 'S', 1, 100, "claude\0--yes\0", 13, "/box");
	proc_add(f->dir, 20, "bash", 'S', 10, 200, "bash\0", 5, "/box/sub");
	proc_add(f->dir, 30, "git", 'T', 20, 300, "git\0push\0origin\0main\0", 21, "/box/sub");
	snprintf(link, sizeof(link), "%s/30/cwd", f->dir);
	assert_int_equal(symlink("/home/u/proj", link), 0);
	snprintf(link, sizeof(link), "%s/30/exe", f->dir);
	assert_int_equal(symlink("/usr/bin/git (deleted)", link), 0);
	assert_int_equal(sb_proc_enrich(f->dir, 30, "/box", &e), 0);
	assert_string_equal(e.cwd, "/home/u/proj");
	assert_string_equal(e.exe, "");	/* a deleted executable is not a path */
	assert_int_equal(e.argc, 4);
	assert_string_equal(e.argv[1], "push");
	assert_int_equal(e.nchain, 3);	/* stops at the sandbox root */
	assert_int_equal(e.chain[0].pid, 30);
	assert_string_equal(e.chain[0].cmdline, "git push origin main");
	assert_int_equal(e.chain[1].pid, 20);
	assert_string_equal(e.chain[2].comm, "claude");
	assert_string_equal(e.chain[2].cmdline, "claude --yes");
	sb_proc_enrich_free(&e);
	/* "/box2" is not below "/box". */
	proc_add(f->dir, 40, "x", 'S', 10, 400, NULL, 0, "/box2");
	assert_int_equal(sb_proc_enrich(f->dir, 30, "/box2", &e), 0);
	assert_int_equal(e.nchain, 1);	/* the process itself is always there */
	sb_proc_enrich_free(&e);
	/* A process that is gone: empty, not an error. */
	assert_int_equal(sb_proc_enrich(f->dir, 99, "/box", &e), 0);
	assert_int_equal(e.nchain, 0);
	assert_int_equal(e.argc, 0);
	sb_proc_enrich_free(&e);
}

static void test_execve_argv_errors(void **state)
{
	struct fx *f = *state;
	char **argv;
	size_t argc;

	bt_write(f->dir, "60/task/60/syscall", "0 0x1 0x2 0x3 0x4 0x5 0x6 0x7ffc 0x4000\n");
	assert_int_equal(sb_proc_execve_argv(f->dir, 60, 60, &argv, &argc), -EINVAL);	/* read(2), not execve */
	bt_write(f->dir, "61/task/61/syscall", "running\n");
	assert_int_equal(sb_proc_execve_argv(f->dir, 61, 61, &argv, &argc), -EINVAL);
	assert_int_equal(sb_proc_execve_argv(f->dir, 62, 62, &argv, &argc), -ENOENT);
}

/* Strings read from a task's memory (here this test's own): one that
 * ends just before an unmapped page is found by the retry to the page
 * end (capped at the buffer: the page-aligned case, a retry of a whole
 * page, needs the memory to change between the reads, not forced here). */
static void test_execve_argv_strings(void **state)
{
	struct fx *f = *state;
	long pg = sysconf(_SC_PAGESIZE);
	unsigned long ptrs[64] = { 0 };
	char *m, *tail, **argv, rel[64];
	size_t argc;
	int pid = (int)getpid();

	m = mmap(NULL, (size_t)pg * 2, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	assert_true(m != MAP_FAILED);
	assert_int_equal(munmap(m + pg, (size_t)pg), 0);
	memset(m, 'a', (size_t)pg);
	tail = m + pg - 6;
	memcpy(tail, "tail!", 6);
	ptrs[0] = (unsigned long)"gitx";
	ptrs[1] = (unsigned long)tail;
	ptrs[2] = (unsigned long)m;	/* page-aligned, no NUL in its page */
	snprintf(rel, sizeof(rel), "%d/task/%d/syscall", pid, pid);
	bt_write(f->dir, rel, "59 0x1000 0x%lx 0x0 0x0 0x0 0x0 0x7ffc 0x4000\n", (unsigned long)ptrs);
	assert_int_equal(sb_proc_execve_argv(f->dir, pid, pid, &argv, &argc), 0);
	assert_int_equal(argc, 3);
	assert_string_equal(argv[0], "gitx");
	assert_string_equal(argv[1], "tail!");
	assert_int_equal(strlen(argv[2]), (size_t)4095);
	sb_proc_argv_free(argv, argc);
	munmap(m, (size_t)pg);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_stat_parse, setup, teardown),
		cmocka_unit_test(test_same_start),
		cmocka_unit_test_setup_teardown(test_task_check, setup, teardown),
		cmocka_unit_test(test_split_cmdline),
		cmocka_unit_test_setup_teardown(test_enrich_chain, setup, teardown),
		cmocka_unit_test_setup_teardown(test_execve_argv_errors, setup, teardown),
		cmocka_unit_test_setup_teardown(test_execve_argv_strings, setup, teardown),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
