# sandbox-bpf — top-level build.
#
#   make            build build/sandbox-bpf, the BPF objects and skeletons
#   make deps       install the Debian packages the build and tests need
#   make test       unit tests (native), summary "N passed, N failed, N skipped"
#   make asan       unit tests under ASan + UBSan (separate build tree)
#   make valgrind   unit tests under valgrind (leaks are errors)
#   make fuzz       build libFuzzer targets (clang) into build-fuzz/
#   make check      everything: test, asan, valgrind, fuzz replay, VM tests
#   make vmbench    the kernel benchmark in the VM (numbers, not assertions; not in check)
#   make demo       the main job: the real loop on the best backend here

BUILD    ?= build
CC       ?= gcc
CLANG    ?= clang
BPFTOOL  ?= bpftool
SAN      ?=
ARCH     := $(shell uname -m | sed 's/x86_64/x86/;s/aarch64/arm64/')

VERSION  := $(shell cat VERSION 2>/dev/null || echo 0.0.0)
GITREV   := $(shell git rev-parse --short HEAD 2>/dev/null || echo unknown)

WARN_COMMON := -Wall -Wextra -Werror -Wshadow -Wformat=2 -Wno-format-nonliteral
# gcc's truncation warning fires on every bounded message snprintf, where
# truncation is intended; clang does not know the flag.
IS_CLANG := $(shell $(CC) --version 2>/dev/null | grep -c clang)
WARN     := $(WARN_COMMON) $(if $(filter 0,$(IS_CLANG)),-Wno-format-truncation)
CFLAGS   ?= -O2 -g
# override: a CFLAGS given on the command line (make fuzz does that) only
# replaces the optimisation flags, never the warnings and include paths.
override CFLAGS += -std=gnu11 $(WARN) -D_GNU_SOURCE -fno-strict-aliasing \
            -Ipolicy -Iuserspace -Ibpf -I$(BUILD) -I$(BUILD)/bpf \
            -DSB_VERSION='"$(VERSION)"' -DSB_GITREV='"$(GITREV)"'
LDLIBS   += -lbpf -lelf -lz -lcjson -lsqlite3 -lsodium -lpthread

ifeq ($(SAN),1)
override CFLAGS  += -fsanitize=address,undefined -fno-omit-frame-pointer -fno-sanitize-recover=all
override LDFLAGS += -fsanitize=address,undefined
endif

POLICY_SRCS := $(sort $(wildcard policy/*.c))
USER_SRCS   := $(sort $(filter-out userspace/main.c,$(wildcard userspace/*.c userspace/*/*.c)))
FALLBACK_SRCS := $(sort $(wildcard fallback/linux/*.c))
BPF_SRCS    := $(sort $(wildcard bpf/*.bpf.c))
TEST_SRCS   := $(sort $(wildcard tests/test_*.c))
TEST_HELPER_SRCS := $(sort $(wildcard tests/helpers/*.c))

POLICY_OBJS := $(patsubst %.c,$(BUILD)/%.o,$(POLICY_SRCS)) $(BUILD)/gen/default_policy.o
USER_OBJS   := $(patsubst %.c,$(BUILD)/%.o,$(USER_SRCS) $(FALLBACK_SRCS))
BPF_OBJS    := $(patsubst bpf/%.bpf.c,$(BUILD)/bpf/%.bpf.o,$(BPF_SRCS))
SKELS       := $(patsubst bpf/%.bpf.c,$(BUILD)/bpf/%.skel.h,$(BPF_SRCS))
TEST_BINS   := $(patsubst tests/%.c,$(BUILD)/tests/%,$(TEST_SRCS))
TEST_HELPERS := $(patsubst tests/helpers/%.c,$(BUILD)/tests/helpers/%,$(TEST_HELPER_SRCS))

LIBPOLICY := $(BUILD)/libsbpolicy.a
LIBSB     := $(BUILD)/libsb.a
BIN       := $(BUILD)/sandbox-bpf

.PHONY: all deps test asan valgrind fuzz fuzz-run check demo clean install
all: $(BIN)

# Keep BPF objects and skeletons: as intermediates make would delete them
# and rebuild the binary on every run.
.SECONDARY: $(BPF_OBJS) $(SKELS)

include tests/fuzz/fuzz.mk
include vmtests/vmtests.mk

# --- vmlinux.h: from the running kernel's BTF when present, else the checked-in copy.
VMLINUX_H := $(BUILD)/bpf/vmlinux.h
$(VMLINUX_H):
	@mkdir -p $(@D)
	@if [ -r /sys/kernel/btf/vmlinux ] && command -v $(BPFTOOL) >/dev/null 2>&1; then \
		$(BPFTOOL) btf dump file /sys/kernel/btf/vmlinux format c > $@.tmp && mv $@.tmp $@; \
	else \
		echo "  VMLINUX  using checked-in bpf/vmlinux/$(ARCH)/vmlinux.h"; \
		cp bpf/vmlinux/$(ARCH)/vmlinux.h $@; \
	fi

# --- BPF objects and skeletons (libbpf-bootstrap style)
BPF_CFLAGS := -g -O2 -target bpf -D__TARGET_ARCH_$(ARCH) -Wall -Werror \
              -I$(BUILD)/bpf -Ibpf -Ipolicy
$(BUILD)/bpf/%.bpf.o: bpf/%.bpf.c $(VMLINUX_H) $(wildcard bpf/*.h)
	@mkdir -p $(@D)
	$(CLANG) $(BPF_CFLAGS) -c $< -o $@.tmp.o
	$(BPFTOOL) gen object $@ $@.tmp.o
	@rm -f $@.tmp.o
$(BUILD)/bpf/%.skel.h: $(BUILD)/bpf/%.bpf.o
	$(BPFTOOL) gen skeleton $< > $@.tmp && mv $@.tmp $@

# --- embedded default policy
$(BUILD)/gen/default_policy.c: policy/default-policy.json
	@mkdir -p $(@D)
	@{ echo '/* generated from policy/default-policy.json */'; \
	   echo 'const char sb_default_policy_json[] = {'; \
	   od -An -v -tx1 $< | sed 's/\([0-9a-f][0-9a-f]\)/0x\1,/g'; \
	   echo '0x00};'; } > $@

# --- userspace
$(BUILD)/%.o: %.c | $(SKELS)
	@mkdir -p $(@D)
	$(CC) $(CFLAGS) -MMD -MP -c $< -o $@
$(BUILD)/gen/%.o: $(BUILD)/gen/%.c
	$(CC) $(CFLAGS) -c $< -o $@

$(LIBPOLICY): $(POLICY_OBJS)
	@rm -f $@; ar rcs $@ $^
$(LIBSB): $(USER_OBJS)
	@rm -f $@; ar rcs $@ $^

$(BIN): $(BUILD)/userspace/main.o $(LIBSB) $(LIBPOLICY)
	$(CC) $(LDFLAGS) -o $@ $^ $(LDLIBS)

# --- unit tests (cmocka)
$(BUILD)/tests/%: tests/%.c $(LIBSB) $(LIBPOLICY) $(wildcard tests/*.h)
	@mkdir -p $(@D)
	$(CC) $(CFLAGS) -Itests $(LDFLAGS) -o $@ $< $(LIBSB) $(LIBPOLICY) $(LDLIBS) -lcmocka
$(BUILD)/tests/helpers/%: tests/helpers/%.c $(LIBSB) $(LIBPOLICY)
	@mkdir -p $(@D)
	$(CC) $(CFLAGS) $(LDFLAGS) -o $@ $< $(LIBSB) $(LIBPOLICY) $(LDLIBS)

test: $(BIN) $(TEST_BINS) $(TEST_HELPERS) $(FUZZ_REPLAY_BINS)
	@SB_BIN=$(abspath $(BIN)) SB_BUILD=$(abspath $(BUILD)) sh tests/run-unit.sh $(TEST_BINS) $(FUZZ_REPLAY_BINS)

asan:
	@$(MAKE) --no-print-directory BUILD=build-asan SAN=1 test

valgrind: $(BIN) $(TEST_BINS) $(TEST_HELPERS) $(FUZZ_REPLAY_BINS)
	@SB_BIN=$(abspath $(BIN)) SB_BUILD=$(abspath $(BUILD)) SB_VALGRIND=1 sh tests/run-unit.sh $(TEST_BINS) $(FUZZ_REPLAY_BINS)

check: test asan valgrind fuzz-smoke vmtest

deps:
	@sh .ci/deps.sh

# The main job (README): the escalation loop on the best backend here,
# natively when the host runs BPF-LSM, else in the VM (vmtests/demo.sh).
demo: $(BIN) vmtest-helpers vmtest-fetch
	VMTEST_CACHE='$(VMTEST_CACHE)' SANDBOX_BIN='$(BIN)' VMTEST_OUT='$(VMTEST_OUT)' vmtests/demo.sh

clean:
	rm -rf build build-asan build-fuzz

-include $(shell find $(BUILD) -name '*.d' 2>/dev/null)

# --- benchmarks (programs that print measured numbers; never assertions)
.PHONY: bench-audit
bench-audit: $(BUILD)/tests/bench/bench_audit
	$(BUILD)/tests/bench/bench_audit

# The escalation loop in the VM (docs/performance.md, "Escalation loop"):
# tests/bench/vmbench_escalation and bench_escalation on every kernel, the
# tables printed and kept in $(VMTEST_OUT)/vmbench-escalation/KERNEL.md.
# VMBENCH_ESC_REQUESTS (default 1000), VMBENCH_ARGS (e.g. --only 6.1).
.PHONY: vmbench-escalation
VMBENCH_ESC_REQUESTS ?= 1000
vmbench-escalation: $(BIN) $(BUILD)/tests/bench/bench_escalation vmtest-helpers vmtest-fetch
	@rm -rf $(BUILD)/vmbench-escalation; mkdir -p $(BUILD)/vmbench-escalation/extra $(VMTEST_OUT)/vmbench-escalation
	@cp tests/bench/vmbench_escalation $(BUILD)/tests/bench/bench_escalation $(BUILD)/vmbench-escalation/extra/
	VMTEST_CACHE='$(VMTEST_CACHE)' VMTEST_EXTRA=$(BUILD)/vmbench-escalation/extra SANDBOX_BIN='$(BIN)' \
		VMTEST_OUT='$(VMTEST_OUT)' VMTEST_TEST_TIMEOUT=1500 VMTEST_APPEND='vmbench.requests=$(VMBENCH_ESC_REQUESTS)' \
		vmtests/run.sh --test vmbench_escalation $(VMBENCH_ARGS)
	@for log in $(VMTEST_OUT)/logs/*.console.log; do \
		k=$$(basename $$log .console.log); \
		tr -d '\r' < $$log | sed -n '/^# sandbox-bpf vmbench-escalation/,/^VMBENCH-END/p' | grep -v '^VMBENCH-END' \
			> $(VMTEST_OUT)/vmbench-escalation/$$k.md; \
		[ -s $(VMTEST_OUT)/vmbench-escalation/$$k.md ] || continue; \
		echo; echo "=== $$k ($(VMTEST_OUT)/vmbench-escalation/$$k.md)"; cat $(VMTEST_OUT)/vmbench-escalation/$$k.md; \
	done
