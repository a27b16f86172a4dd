# vmtests/vmtests.mk: QEMU VM tests (BPF-LSM enforcement on Debian cloud kernels).
# Included by the top-level Makefile; also usable alone:
#   make -f vmtests/vmtests.mk vmtest VMTEST_PREREQS=
#
# Targets:
#   vmtest          build everything, fetch kernels, boot each, run vmtests/tests/*
#   vmtest-fetch    fetch the Debian cloud kernels into $(VMTEST_CACHE)
#   vmtest-helpers  compile vmtests/helpers/*.c and vmtests/bpf/*.bpf.c
#   vmtest-clean    remove $(VMTEST_OUT) (build/vmtests)
# Variables:
#   VMTEST_EXTRA=DIR   also run every executable file in DIR as a test
#   VMTEST_ARGS=...    extra arguments for vmtests/run.sh (--only 6.1, --test NAME)
#   VMTEST_CACHE=DIR   kernel cache (default ~/.cache/sandbox-bpf/kernels)
#
# Helpers: vmtests/helpers/NAME.c -> build/vmtests/helpers/NAME, linked
# --as-needed against libbpf, liburing, libelf, libz; set
# VMTEST_LDFLAGS_NAME / VMTEST_LDLIBS_NAME to change that for one helper.
# BPF: vmtests/bpf/NAME.bpf.c -> build/vmtests/bpf/NAME.bpf.o and a skeleton
# build/vmtests/bpf/NAME.skel.h that every helper can #include.

SANDBOX_BIN ?= $(or $(BIN),build/sandbox-bpf)
VMTEST_PREREQS ?= all
VMTEST_CACHE ?= $(or $(VMTEST_CACHE_DIR),$(HOME)/.cache/sandbox-bpf/kernels)
VMTEST_EXTRA ?=
VMTEST_ARGS ?=

VMTEST_SRC := vmtests
VMTEST_OUT ?= $(or $(BUILD),build)/vmtests
VMTEST_CC ?= gcc
VMTEST_CLANG ?= clang
VMTEST_BPFTOOL ?= bpftool
VMTEST_BTF ?= /sys/kernel/btf/vmlinux
VMTEST_CFLAGS ?= -Wall -Wextra -Werror -O2 -g
VMTEST_LDLIBS_DEFAULT := -Wl,--as-needed -lbpf -luring -lelf -lz

# Harness helpers that run before any shared library could be trusted.
VMTEST_LDFLAGS_qemu_exit := -static
VMTEST_LDFLAGS_runas := -static
VMTEST_LDFLAGS_vmtest_run := -static
VMTEST_LDLIBS_qemu_exit :=
VMTEST_LDLIBS_runas :=
VMTEST_LDLIBS_vmtest_run :=
VMTEST_LDLIBS_demo_git :=
# sbrt runs inside chroots that hold nothing else (redteam_exec).
VMTEST_LDFLAGS_sbrt := -static
VMTEST_LDLIBS_sbrt := -luring

VMTEST_HELPER_SRCS := $(sort $(wildcard $(VMTEST_SRC)/helpers/*.c))
VMTEST_HELPERS := $(patsubst $(VMTEST_SRC)/helpers/%.c,$(VMTEST_OUT)/helpers/%,$(VMTEST_HELPER_SRCS))
VMTEST_BPF_SRCS := $(sort $(wildcard $(VMTEST_SRC)/bpf/*.bpf.c))
VMTEST_BPF_OBJS := $(patsubst $(VMTEST_SRC)/bpf/%.bpf.c,$(VMTEST_OUT)/bpf/%.bpf.o,$(VMTEST_BPF_SRCS))
VMTEST_SKELS := $(VMTEST_BPF_OBJS:.bpf.o=.skel.h)
VMTEST_VMLINUX_H := $(VMTEST_OUT)/vmlinux.h

.PHONY: vmtest vmtest-fetch vmtest-helpers vmtest-clean vmbench
.SECONDARY: $(VMTEST_SKELS) $(VMTEST_VMLINUX_H)

vmtest: $(VMTEST_PREREQS) vmtest-helpers vmtest-fetch
	VMTEST_CACHE='$(VMTEST_CACHE)' VMTEST_EXTRA='$(VMTEST_EXTRA)' SANDBOX_BIN='$(SANDBOX_BIN)' \
		VMTEST_OUT='$(VMTEST_OUT)' $(VMTEST_SRC)/run.sh $(VMTEST_ARGS)

# The kernel benchmark (numbers, no assertions; not part of `make check`):
# vmtests/bench/vmbench on every kernel, its tables printed and kept in
# $(VMTEST_OUT)/vmbench/KERNEL.md. VMBENCH_ARGS (e.g. --only 6.1),
# VMBENCH_ROUNDS (default 7).
VMBENCH_ARGS ?=
VMBENCH_ROUNDS ?= 7
vmbench: $(VMTEST_PREREQS) vmtest-helpers vmtest-fetch
	@rm -rf $(VMTEST_OUT)/vmbench; mkdir -p $(VMTEST_OUT)/vmbench
	VMTEST_CACHE='$(VMTEST_CACHE)' VMTEST_EXTRA=$(VMTEST_SRC)/bench SANDBOX_BIN='$(SANDBOX_BIN)' \
		VMTEST_OUT='$(VMTEST_OUT)' VMTEST_TEST_TIMEOUT=900 VMTEST_APPEND='vmbench.rounds=$(VMBENCH_ROUNDS)' \
		$(VMTEST_SRC)/run.sh --test vmbench $(VMBENCH_ARGS)
	@for log in $(VMTEST_OUT)/logs/*.console.log; do \
		k=$$(basename $$log .console.log); \
		tr -d '\r' < $$log | sed -n '/^# sandbox-bpf vmbench/,/^VMBENCH-END/p' | grep -v '^VMBENCH-END' \
			> $(VMTEST_OUT)/vmbench/$$k.md; \
		[ -s $(VMTEST_OUT)/vmbench/$$k.md ] || continue; \
		echo; echo "=== $$k ($(VMTEST_OUT)/vmbench/$$k.md)"; cat $(VMTEST_OUT)/vmbench/$$k.md; \
	done
	@echo; echo "Whole-syscall timings under TCG vary by 10-25 % between runs (BRIEF 2b): compare ratios within a run."

vmtest-fetch:
	$(VMTEST_SRC)/fetch-kernels.sh '$(VMTEST_CACHE)'

vmtest-helpers: $(VMTEST_HELPERS) $(VMTEST_BPF_OBJS)

vmtest-clean:
	rm -rf $(VMTEST_OUT)

$(VMTEST_VMLINUX_H):
	@mkdir -p $(@D)
	@test -r $(VMTEST_BTF) || { echo "vmtests: no BTF at $(VMTEST_BTF); set VMTEST_BTF=FILE (a vmlinux with BTF)" >&2; exit 1; }
	$(VMTEST_BPFTOOL) btf dump file $(VMTEST_BTF) format c > $@.tmp
	mv $@.tmp $@

$(VMTEST_OUT)/bpf/%.bpf.o: $(VMTEST_SRC)/bpf/%.bpf.c $(VMTEST_VMLINUX_H)
	@mkdir -p $(@D)
	$(VMTEST_CLANG) -g -O2 -Wall -Werror -target bpf -D__TARGET_ARCH_x86 \
		-I$(VMTEST_OUT) -c $< -o $@

$(VMTEST_OUT)/bpf/%.skel.h: $(VMTEST_OUT)/bpf/%.bpf.o
	$(VMTEST_BPFTOOL) gen skeleton $< > $@.tmp
	mv $@.tmp $@

$(VMTEST_OUT)/helpers/%: $(VMTEST_SRC)/helpers/%.c $(VMTEST_SKELS)
	@mkdir -p $(@D)
	$(VMTEST_CC) $(VMTEST_CFLAGS) -I$(VMTEST_OUT)/bpf $< -o $@ \
		$(VMTEST_LDFLAGS_$*) $(if $(filter undefined,$(origin VMTEST_LDLIBS_$*)),$(VMTEST_LDLIBS_DEFAULT),$(VMTEST_LDLIBS_$*))
