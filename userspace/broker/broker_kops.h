/* The broker's kernel interface over the pinned maps (sb_hold,
 * sb_verdict, sb_held) and pidfd signals. */
#ifndef SB_BROKER_KOPS_H
#define SB_BROKER_KOPS_H

#include "broker.h"
#include "kernel/loader.h"

/* ops->arg is k; k must outlive the broker. */
void sb_broker_kops_init(struct sb_broker_kops *ops, struct sb_kernel *k);

#endif
