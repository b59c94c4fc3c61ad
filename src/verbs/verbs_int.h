/* SPDX-License-Identifier: MIT */
/* Private structures of the verbs transport.  Each embeds the generic
 * transport object as its first member (see src/transport/transport.h). */
#ifndef RW_VERBS_VERBS_INT_H
#define RW_VERBS_VERBS_INT_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>

#include <infiniband/verbs.h>

#include "transport/transport.h"
#include "verbs/params.h"

/* One cached registration on a device (shared by every rw_vmr that names
 * the same addr/len/access on that device). */
struct rw_vmr_ent {
    struct rw_vmr_ent *next;
    void *addr;
    size_t len;
    int access;
    struct ibv_mr *mr;
    unsigned refs;
};

/* One opened device, shared process-wide by every domain on it: the
 * context, the one PD and the registration cache live here, so memory is
 * registered once per device and reused across domains, sessions and eps. */
struct rw_vdev {
    struct rw_vdev *next;
    char name[RW_VERBS_DEV_NAME_MAX];
    struct ibv_context *ctx;
    struct ibv_pd *pd;
    struct ibv_device_attr attr;
    unsigned refs;             /* domains + registrations holding it */
    pthread_mutex_t mr_lock;   /* guards mrs and each entry's refs */
    struct rw_vmr_ent *mrs;
    /* Async events (events.c): whoever drains them holds ev_lock; port
     * errors bump port_err_gen[port], QP faults mark the ep (qp_context). */
    pthread_mutex_t ev_lock;
    _Atomic unsigned port_err_gen[RW_VERBS_MAX_PORTS + 1];
};

/* Opens `name` (or takes another reference on it).  Returns 0 and *out, or
 * RAILWIRE_E_NO_DEVICE / RAILWIRE_E_VERBS (logged). */
int rw_vdev_get(const char *name, struct rw_vdev **out);
/* Takes one more reference on an already held device. */
void rw_vdev_ref(struct rw_vdev *d);
/* Drops a reference; the last one closes the device. */
void rw_vdev_put(struct rw_vdev *d);

struct rw_vdom {
    struct rw_domain base;
    struct rw_vdev *dev;
    enum rw_role role;
    uint8_t port;
    uint8_t link_layer;
    int gid_index;
    union ibv_gid gid;
    int mtu_code;              /* IBV_MTU_* used as path MTU */
    uint8_t timeout;           /* local ACK timeout exponent */
    uint8_t retry_cnt;
    uint8_t rnr_retry;
    uint8_t max_rd_atomic;     /* initiator depth */
    uint8_t max_dest_rd_atomic;/* responder resources */
    int post_thread;           /* eps hand their WRs to a poster thread (see poster.c) */
    unsigned post_threads;     /* RAILWIRE_VERBS_POST_THREADS: pool cap, 0 = CPUs */
};

struct rw_vmr {
    struct rw_mr base;
    struct rw_vdev *dev;
    struct rw_vmr_ent *ent;    /* a cached host registration, or NULL ... */
    struct ibv_mr *direct;     /* ... one of device memory or a DMA-BUF, owned
                                  here (mr_mem.c; not cached) */
};

/* One posted work request as the ep remembers it until it is reported. */
struct rw_vslot {
    uint64_t wr_id;
    uint32_t len;
    uint8_t signaled;
    uint8_t opcode;            /* RW_OP_* (a failed CQE's opcode is undefined) */
    uint8_t done;
    int status;
    struct ibv_send_wr wr;     /* poster-thread mode: the prepared WR ... */
    struct ibv_sge sge;        /* ... and its buffer */
};

enum rw_vep_state { RW_VEP_INIT = 0, RW_VEP_RTS = 1, RW_VEP_DEAD = 2 };

struct rw_vposter;

struct rw_vep {
    struct rw_ep base;
    struct rw_vdom *dom;
    struct ibv_comp_channel *ch;
    struct ibv_cq *cq;
    struct ibv_qp *qp;
    enum rw_vep_state state;
    int dead_err;              /* first error that killed the ep */
    unsigned depth;            /* ring size = max WRs posted and not yet reported */
    struct rw_vslot *ring;     /* slot of sequence s is ring[s % depth] */
    uint64_t next_seq;         /* sequence of the next post */
    uint64_t hw_seq;           /* every sequence below this has a known outcome */
    uint64_t head_seq;         /* oldest sequence not yet reported */
    int64_t port_check_ms;     /* last link check while WRs were stuck */
    unsigned port_gen;         /* dev->port_err_gen[port] when the QP reached RTS */
    _Atomic int fatal;         /* a QP-fatal async event arrived for this QP */
    /* Poster-thread mode (dom->post_thread): ep_post prepares WRs in the ring
     * and a thread of the shared poster pool calls ibv_post_send. */
    int poster_on;             /* ep is in the pool (owner thread's view) */
    struct rw_vposter *pt;     /* the poster thread serving this ep */
    struct rw_vep *pnext;      /* guarded by pt's lock: pt's next ep */
    uint64_t queued_seq;       /* guarded by pt's lock: WRs below this may be posted */
    int posting;               /* guarded by pt's lock: the thread is posting ours */
    int leaving;               /* guarded by pt's lock: post nothing more of ours */
    int post_failed;           /* guarded by pt's lock: skip (post_err is set) */
    _Atomic uint64_t sent_seq; /* WRs below this were accepted by ibv_post_send */
    _Atomic int post_err;      /* errno of a failed ibv_post_send in the thread */
};

/* Domain, MR and ep operations (ops.c puts them in the table). */
int rw_vdom_open(const struct rw_domain_cfg *cfg, struct rw_domain **out);
void rw_vdom_close(struct rw_domain *dom);
int rw_vmr_reg(struct rw_domain *dom, void *addr, size_t len, int access, struct rw_mr **out);
void rw_vmr_dereg(struct rw_mr *mr);
int rw_vmr_reg_multi(struct rw_domain *const *doms, size_t n, void *addr, size_t len, int access,
                     struct rw_mr **out);
/* Memory descriptors (mr_mem.c): see rw_transport_ops.mr_reg_mem. */
int rw_vmr_reg_mem(struct rw_domain *dom, const struct rw_mem *mem, int access,
                   struct rw_mr **out);
/* IBV_ACCESS_* flags for RW_ACCESS_* bits (mr.c). */
int rw_vmr_access(int access);
/* The iova to register a region at: random for remotely accessible regions
 * (keeping the offset within a 2 MiB page), else addr (mr.c). */
uint64_t rw_vmr_pick_iova(void *addr, int access);
/* ibv_reg_mr of host memory or a device pointer at rw_vmr_pick_iova()'s
 * iova (*iova); when the device refuses an iova, logs it and registers at
 * the virtual address (*iova = addr).  Returns the MR or NULL (errno). */
struct ibv_mr *rw_vmr_reg_at_iova(struct rw_vdev *d, void *addr, size_t len, int access,
                                  uint64_t *iova);
int rw_vep_create(struct rw_domain *dom, const struct rw_ep_cfg *cfg, struct rw_ep **out);
int rw_vep_connect(struct rw_ep *ep, const struct rw_qp_id *remote, int timeout_ms);
int rw_vep_post(struct rw_ep *ep, const struct rw_wr *wrs, size_t n);
int rw_vep_poll(struct rw_ep *ep, struct rw_wc *wcs, int max);
int rw_vep_wait_fd(struct rw_ep *ep);
int rw_vep_arm(struct rw_ep *ep);
void rw_vep_kill(struct rw_ep *ep);
void rw_vep_destroy(struct rw_ep *ep);

/* Async events (events.c).  Drains the device's pending async events
 * without blocking and records them (port errors, fatal QP events). */
void rw_vdev_drain_events(struct rw_vdev *d);
int rw_vep_check(struct rw_ep *ep);

/* Poster threads (poster.c), a pool shared by the process's client eps.
 * start: puts ve on a thread (starting one below the cap); 0 or
 * RAILWIRE_E_SYSTEM (logged).  kick: makes WRs below `queued` postable.
 * stop: takes ve off its thread once the chain being posted is in (the last
 * ep of a thread joins it); idempotent; WRs not yet posted stay unposted,
 * see sent_seq. */
int rw_vposter_start(struct rw_vep *ve);
void rw_vposter_kick(struct rw_vep *ve, uint64_t queued);
void rw_vposter_stop(struct rw_vep *ve);
/* 1 if this post must go through the thread (see poster.c), 0 to post inline. */
int rw_vposter_wanted(const struct rw_vep *ve);
/* After an inline post in poster mode: records that everything below
 * next_seq was posted. */
void rw_vposter_posted_inline(struct rw_vep *ve);
/* Poster threads running in this process (tests, diagnostics). */
unsigned rw_vposter_threads(void);

/* Reads the valid (non-empty) GID entries of one port into a malloc'ed
 * array (*out, freed by the caller; NULL when *n is 0).  Returns 0 or
 * RAILWIRE_E_VERBS / RAILWIRE_E_NOMEM (logged). */
struct rw_gid_entry;
int rw_vport_gids(struct ibv_context *ctx, uint8_t port, struct rw_gid_entry **out, size_t *n);

#endif
