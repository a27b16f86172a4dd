#include "broker_kops.h"

#include <bpf/bpf.h>
#include <errno.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "broker_proc.h"

#ifndef SYS_pidfd_open
#define SYS_pidfd_open 434
#endif
#ifndef SYS_pidfd_send_signal
#define SYS_pidfd_send_signal 424
#endif

static int k_list(void *arg, uint32_t sandbox, struct sb_khold **out, size_t *n)
{
	return sb_kernel_holds(arg, sandbox, out, n);
}

static int k_get(void *arg, const struct sb_hold_key *key, struct sb_khold *out)
{
	struct sb_kernel *k = arg;
	struct sb_verdict_key vk;

	memset(out, 0, sizeof(*out));
	if (bpf_map_lookup_elem(k->fd[SB_KM_HOLD], key, &out->h))
		return -ENOENT;
	out->key = *key;
	memset(&vk, 0, sizeof(vk));
	vk.tid = key->tid;
	vk.seq = out->h.ev.seq;
	out->has_verdict = bpf_map_lookup_elem(k->fd[SB_KM_VERDICT], &vk, &out->v) == 0;
	return 0;
}

static uint64_t k_mono(void *arg)
{
	struct timespec ts;

	(void)arg;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ULL + (uint64_t)ts.tv_nsec;
}

static int k_set_verdict(void *arg, uint32_t tid, uint64_t seq, uint8_t verdict)
{
	struct sb_kernel *k = arg;
	struct sb_verdict_key vk;
	struct sb_verdict v;

	memset(&vk, 0, sizeof(vk));
	memset(&v, 0, sizeof(v));
	vk.tid = tid;
	vk.seq = seq;
	v.verdict = verdict;
	v.set_ns = k_mono(NULL);
	return bpf_map_update_elem(k->fd[SB_KM_VERDICT], &vk, &v, BPF_ANY) ? -errno : 0;
}

static int k_forget(void *arg, const struct sb_hold_key *key, uint64_t seq)
{
	struct sb_kernel *k = arg;
	struct sb_verdict_key vk;
	struct sb_hold h;
	struct sb_held hd;
	uint32_t tid = key->tid;

	/* Only while the entry is still that request: the same thread may
	 * have asked again (a new seq) since. */
	if (bpf_map_lookup_elem(k->fd[SB_KM_HOLD], key, &h) == 0 && h.ev.seq == seq)
		bpf_map_delete_elem(k->fd[SB_KM_HOLD], key);
	memset(&vk, 0, sizeof(vk));
	vk.tid = tid;
	vk.seq = seq;
	bpf_map_delete_elem(k->fd[SB_KM_VERDICT], &vk);
	if (bpf_map_lookup_elem(k->fd[SB_KM_HELD], &tid, &hd) == 0 && hd.seq == seq)
		bpf_map_delete_elem(k->fd[SB_KM_HELD], &tid);
	return 0;
}

static int k_task(void *arg, uint32_t tgid, uint32_t tid, uint64_t start_ns, bool *stopped)
{
	(void)arg;
	return sb_proc_task_check("/proc", (int)tgid, (int)tid, start_ns, sysconf(_SC_CLK_TCK), stopped);
}

/* The pidfd pins the process: checked after opening it, the task cannot
 * be replaced by a recycled pid before the signal. */
static int k_signal(void *arg, uint32_t tgid, uint32_t tid, uint64_t start_ns, int sig)
{
	int fd = (int)syscall(SYS_pidfd_open, (pid_t)tgid, 0), rc = 0;

	if (fd < 0)
		return errno == ESRCH ? -ESRCH : -errno;
	rc = k_task(arg, tgid, tid, start_ns, NULL);
	if (rc) {
		close(fd);
		return rc;	/* -ESRCH only when gone: other errors are retried */
	}
	if (syscall(SYS_pidfd_send_signal, fd, sig, NULL, 0))
		rc = -errno;
	close(fd);
	return rc;
}

static int k_counters(void *arg, uint32_t sandbox, struct sb_counters *out)
{
	return sb_kernel_counters(arg, sandbox, out);
}

void sb_broker_kops_init(struct sb_broker_kops *ops, struct sb_kernel *k)
{
	memset(ops, 0, sizeof(*ops));
	ops->list = k_list;
	ops->get = k_get;
	ops->set_verdict = k_set_verdict;
	ops->forget = k_forget;
	ops->task = k_task;
	ops->signal = k_signal;
	ops->counters = k_counters;
	ops->mono_ns = k_mono;
	ops->arg = k;
}
