# Fuzz targets: tests/fuzz/fuzz_NAME.c defines LLVMFuzzerTestOneInput.
#  - make fuzz        builds libFuzzer binaries (clang, ASan+UBSan) in build-fuzz/
#  - make fuzz-smoke  runs each for FUZZ_SECONDS on its corpus (part of make check)
#  - make test        replays tests/fuzz/corpus/NAME and tests/fuzz/regressions/NAME
#                     through each target with a plain cmocka driver, so every
#                     crash ever found stays a regression test.
FUZZ_SRCS    := $(sort $(wildcard tests/fuzz/fuzz_*.c))
FUZZ_NAMES   := $(patsubst tests/fuzz/fuzz_%.c,%,$(FUZZ_SRCS))
FUZZ_BINS    := $(patsubst %,build-fuzz/fuzz_%,$(FUZZ_NAMES))
FUZZ_REPLAY_BINS := $(patsubst %,$(BUILD)/tests/fuzz_replay_%,$(FUZZ_NAMES))
FUZZ_SECONDS ?= 20
FUZZ_CFLAGS  := -g -O1 -std=gnu11 -D_GNU_SOURCE $(WARN_COMMON) -Ipolicy -Iuserspace -Ibpf -Ibuild-fuzz -Ibuild-fuzz/bpf \
                -DSB_VERSION='"$(VERSION)"' -DSB_GITREV='"$(GITREV)"' \
                -fsanitize=fuzzer-no-link,address,undefined -fno-sanitize-recover=all -fno-omit-frame-pointer

$(BUILD)/tests/fuzz_replay_%: tests/fuzz/fuzz_%.c tests/fuzz/replay_main.c $(LIBSB) $(LIBPOLICY)
	@mkdir -p $(@D)
	$(CC) $(CFLAGS) -DFUZZ_NAME='"$*"' $(LDFLAGS) -o $@ tests/fuzz/replay_main.c $< \
		$(LIBSB) $(LIBPOLICY) $(LDLIBS) -lcmocka

fuzz:
	@$(MAKE) --no-print-directory BUILD=build-fuzz CC=$(CLANG) \
		CFLAGS='-g -O1 -fsanitize=fuzzer-no-link,address,undefined -fno-sanitize-recover=all -fno-omit-frame-pointer' \
		LDFLAGS='-fsanitize=address,undefined' build-fuzz/libsb.a build-fuzz/libsbpolicy.a
	@for n in $(FUZZ_NAMES); do \
		echo "  FUZZ     build-fuzz/fuzz_$$n"; \
		$(CLANG) $(FUZZ_CFLAGS) -fsanitize=fuzzer,address,undefined -o build-fuzz/fuzz_$$n \
			tests/fuzz/fuzz_$$n.c build-fuzz/libsb.a build-fuzz/libsbpolicy.a $(LDLIBS) || exit 1; \
	done

fuzz-smoke: fuzz
	@for n in $(FUZZ_NAMES); do \
		mkdir -p build-fuzz/corpus/$$n; \
		echo "  FUZZ     $$n for $(FUZZ_SECONDS)s"; \
		build-fuzz/fuzz_$$n -max_total_time=$(FUZZ_SECONDS) -timeout=10 -rss_limit_mb=2048 \
			-artifact_prefix=build-fuzz/crash-$$n- build-fuzz/corpus/$$n tests/fuzz/corpus/$$n \
			>build-fuzz/fuzz-$$n.log 2>&1 \
		|| { tail -n 40 build-fuzz/fuzz-$$n.log; echo "fuzz target $$n found a crash: see build-fuzz/crash-$$n-*"; exit 1; }; \
		grep -E '^#[0-9]+[[:space:]]+DONE' build-fuzz/fuzz-$$n.log | tail -n 1; \
	done
