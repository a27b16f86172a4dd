#include "holds.h"

#include <bpf/bpf.h>
#include <errno.h>
#include <signal.h>
#include <sys/syscall.h>
#include <unistd.h>
#include <stdlib.h>
#include <string.h>

#include "broker/broker_proc.h"
#include "loader.h"

int sb_kernel_holds(struct sb_kernel *k, uint32_t sandbox, struct sb_khold **out, size_t *n)
{
	struct sb_hold_key key, next, *pkey = NULL;
	struct sb_khold *l = NULL;
	size_t cnt = 0, cap = 0;
	int fd = k->fd[SB_KM_HOLD];

	*out = NULL;
	*n = 0;
	while (bpf_map_get_next_key(fd, pkey, &next) == 0) {
		struct sb_khold e;
		struct sb_verdict_key vk;

		key = next;
		pkey = &key;
		memset(&e, 0, sizeof(e));
		if (bpf_map_lookup_elem(fd, &key, &e.h))
			continue;	/* deleted meanwhile */
		if (sandbox && e.h.ev.sandbox != sandbox)
			continue;
		e.key = key;
		memset(&vk, 0, sizeof(vk));
		vk.tid = key.tid;
		vk.seq = e.h.ev.seq;
		e.has_verdict = bpf_map_lookup_elem(k->fd[SB_KM_VERDICT], &vk, &e.v) == 0;
		if (cnt == cap) {
			size_t ncap = cap ? cap * 2 : 16;
			struct sb_khold *nl = realloc(l, ncap * sizeof(*nl));

			if (!nl) {
				free(l);
				return -ENOMEM;
			}
			l = nl;
			cap = ncap;
		}
		l[cnt++] = e;
	}
	*out = l;
	*n = cnt;
	return 0;
}


int sb_kernel_holds_release(struct sb_kernel *k, uint32_t sandbox, bool cont)
{
	struct sb_khold *l = NULL;
	size_t n = 0, i;
	int continued = 0;

	if (sb_kernel_holds(k, sandbox, &l, &n))
		return 0;
	for (i = 0; i < n; i++) {
		struct sb_verdict_key vk = { .tid = l[i].key.tid, .seq = l[i].h.ev.seq };
		uint32_t tid = l[i].key.tid;

		bpf_map_delete_elem(k->fd[SB_KM_HOLD], &l[i].key);
		bpf_map_delete_elem(k->fd[SB_KM_VERDICT], &vk);
		bpf_map_delete_elem(k->fd[SB_KM_HELD], &tid);
		if (!cont || l[i].h.used)
			continue;
		/* Only the task that was held, not a recycled pid; the pidfd pins
		 * the process from the check to the signal. */
		{
			int fd = (int)syscall(SYS_pidfd_open, (pid_t)l[i].h.ev.tgid, 0);

			if (fd < 0)
				continue;
			if (sb_proc_task_check("/proc", (int)l[i].h.ev.tgid, (int)tid, l[i].h.ev.start_ns,
					       sysconf(_SC_CLK_TCK), NULL) == 0 &&
			    syscall(SYS_pidfd_send_signal, fd, SIGCONT, NULL, 0) == 0)
				continued++;
			close(fd);
		}
	}
	free(l);
	return continued;
}
