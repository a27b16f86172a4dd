/* Replays a fuzz target's corpus and regression inputs as a unit test, so
 * every input that ever crashed a parser keeps being checked by make test
 * (and under ASan/valgrind), without needing clang or libFuzzer. */
#include <dirent.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static int replay_dir(const char *dir)
{
	struct dirent *de;
	DIR *d = opendir(dir);
	int n = 0;

	if (!d)
		return 0;
	while ((de = readdir(d))) {
		char path[4096];
		FILE *f;
		uint8_t *buf;
		long len;

		if (de->d_name[0] == '.')
			continue;
		snprintf(path, sizeof(path), "%s/%s", dir, de->d_name);
		f = fopen(path, "rb");
		if (!f)
			continue;
		fseek(f, 0, SEEK_END);
		len = ftell(f);
		fseek(f, 0, SEEK_SET);
		buf = malloc(len > 0 ? (size_t)len : 1);
		assert_non_null(buf);
		if (len > 0 && fread(buf, 1, (size_t)len, f) != (size_t)len)
			fail_msg("short read of %s", path);
		fclose(f);
		LLVMFuzzerTestOneInput(buf, (size_t)len);
		free(buf);
		n++;
	}
	closedir(d);
	return n;
}

static void test_replay(void **state)
{
	int n;

	(void)state;
	n = replay_dir("tests/fuzz/corpus/" FUZZ_NAME);
	n += replay_dir("tests/fuzz/regressions/" FUZZ_NAME);
	if (n == 0)
		fail_msg("no corpus or regression inputs for fuzz target " FUZZ_NAME
			 " (add seeds under tests/fuzz/corpus/" FUZZ_NAME "/)");
	print_message("replayed %d inputs through " FUZZ_NAME "\n", n);
}

int main(void)
{
	const struct CMUnitTest tests[] = { cmocka_unit_test(test_replay) };

	return cmocka_run_group_tests_name("fuzz_replay_" FUZZ_NAME, tests, NULL, NULL);
}
