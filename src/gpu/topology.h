/* SPDX-License-Identifier: MIT */
/* Where NICs and GPUs sit: each one's NUMA node, socket and PCIe path, the
 * distance between a NIC and a GPU, and NICs ordered nearest first for the
 * `near` option ("cuda:N", "numa:N", "auto").
 *
 * The machine is read with hwloc (libhwloc-dev, optional at build time),
 * from the live system or from an hwloc XML file (RAILWIRE_HWLOC_XML or an
 * argument), so tests can describe machines that are not this one.  Built
 * without hwloc, rw_topo_load fails with RAILWIRE_E_UNSUPPORTED and says so;
 * the ordering functions work on any rw_topo. */
#ifndef RW_GPU_TOPOLOGY_H
#define RW_GPU_TOPOLOGY_H

#include <stddef.h>

#define RW_TOPO_XML_ENV "RAILWIRE_HWLOC_XML"
#define RW_TOPO_PATH_MAX 12   /* PCIe levels kept per device */
#define RW_TOPO_ID_LEN 20     /* "0000:1a:00.0", "host0000:17" */

/* One PCI device: a NIC (rdma and/or netdev set) or a GPU (cuda >= 0). */
struct rw_topo_dev {
    char rdma[64];            /* RDMA device ("mlx5_0"), "" if none */
    char netdev[32];          /* its network interface ("enp26s0np0"), "" if none */
    int cuda;                 /* GPU: CUDA ordinal; NIC: -1 */
    char busid[RW_TOPO_ID_LEN];
    int numa;                 /* NUMA node (os index), -1 unknown */
    int package;              /* socket (os index), -1 unknown */
    size_t depth;             /* entries in path */
    /* path[0] is the device itself, then each bridge up to the host bridge
     * ("host" + its domain:bus), nearest first. */
    char path[RW_TOPO_PATH_MAX][RW_TOPO_ID_LEN];
};

struct rw_topo {
    char source[300];         /* "live" or "xml:<file>" */
    size_t n_nics, n_gpus;
    struct rw_topo_dev *nics, *gpus;
    size_t n_numa;
    int *numa_package;        /* numa_package[node] = socket, -1 unknown */
};

/* How near a NIC is to a GPU, nearest first. */
enum rw_topo_rel {
    RW_TOPO_SAME_SWITCH = 1,  /* below one PCIe switch or root port */
    RW_TOPO_SAME_ROOT = 2,    /* below one host bridge (root complex) */
    RW_TOPO_SAME_NUMA = 3,    /* different root complexes, one NUMA node */
    RW_TOPO_SAME_SOCKET = 4,  /* different NUMA nodes of one socket */
    RW_TOPO_CROSS_SOCKET = 5, /* across the inter-socket link, or unknown */
};

/* "same-switch", "same-root", "same-numa", "same-socket", "cross-socket". */
const char *rw_topo_rel_name(enum rw_topo_rel rel);

/* Reads the machine: from `xml` if not NULL, else from the file named by
 * RAILWIRE_HWLOC_XML if set, else the live system.  *out is filled (free it
 * with rw_topo_free).  Returns 0, RAILWIRE_E_UNSUPPORTED (built without
 * hwloc), RAILWIRE_E_INVALID (the XML cannot be read) or RAILWIRE_E_NOMEM;
 * failures are logged with what to check. */
int rw_topo_load(const char *xml, struct rw_topo *out);
void rw_topo_free(struct rw_topo *t);

/* Relation of a and b and the PCIe hops between them (*hops, may be NULL:
 * bridges crossed up and down; 2 levels past the host bridges when they
 * share none). */
enum rw_topo_rel rw_topo_relation(const struct rw_topo_dev *a, const struct rw_topo_dev *b,
                                  unsigned *hops);
/* One number, lower is nearer: 100 * relation + hops. */
unsigned rw_topo_distance(const struct rw_topo_dev *a, const struct rw_topo_dev *b);

/* What rails should be near. */
enum rw_near_kind { RW_NEAR_NONE = 0, RW_NEAR_CUDA = 1, RW_NEAR_NUMA = 2, RW_NEAR_AUTO = 3 };
struct rw_near {
    enum rw_near_kind kind;
    int index;                   /* CUDA ordinal or NUMA node */
    char busid[RW_TOPO_ID_LEN];  /* CUDA: the GPU's PCI bus id when known (from the
                                    driver); wins over index for finding the GPU */
};

/* Parses "cuda:N", "numa:N", "auto" (NULL or "" = RW_NEAR_NONE).  Returns 0
 * or RAILWIRE_E_INVALID (logged, with the accepted forms). */
int rw_near_parse(const char *s, struct rw_near *out);

/* Orders n candidate NICs, named by RDMA device or netdev, nearest to `near`
 * first; ties and candidates the topology does not know keep their given
 * order (unknown ones last).  order[i] receives the index into cands of the
 * i-th nearest.  near AUTO is resolved from `first_mem` (what the first
 * registered memory is near: RW_NEAR_CUDA or RW_NEAR_NUMA; NULL or NONE =
 * keep the order, logged at info).  Returns 0, or RAILWIRE_E_INVALID when
 * the GPU or NUMA node is not in the topology (logged, naming what it has). */
int rw_topo_order_nics(const struct rw_topo *t, const struct rw_near *near,
                       const struct rw_near *first_mem, const char *const *cands, size_t n,
                       size_t *order);

/* rw_topo_order_nics, also giving each candidate's key in keys[i] (keys
 * of the order: lower is nearer; UINT32_MAX for a candidate the topology
 * does not know).  keys may be NULL. */
int rw_topo_rank_nics(const struct rw_topo *t, const struct rw_near *near,
                      const struct rw_near *first_mem, const char *const *cands, size_t n,
                      size_t *order, unsigned *keys);

/* Places n_rails rails for `near` (CUDA or NUMA, resolved) on n candidate
 * NICs named as for rw_topo_order_nics: rail i goes to rail_cand[i], an
 * index into cands, taken round-robin over the nearest tier (every
 * candidate exactly as near as the nearest one), so rails spread over the
 * equally near NICs and never go to a farther one.  Returns the size of
 * that tier (rail_cand filled), 0 when the topology knows none of the
 * candidates (rail_cand untouched: keep the default placement), or
 * RAILWIRE_E_INVALID (target not in the topology, logged) /
 * RAILWIRE_E_NOMEM. */
int rw_topo_place_rails(const struct rw_topo *t, const struct rw_near *near,
                        const char *const *cands, size_t n, unsigned n_rails, size_t *rail_cand);

/* The GPU with CUDA ordinal `cuda`, or with PCI bus id `busid` when it is
 * not NULL/"" (which wins); NULL if none. */
const struct rw_topo_dev *rw_topo_gpu(const struct rw_topo *t, int cuda, const char *busid);
/* The NIC whose RDMA device or netdev is `name`; NULL if none. */
const struct rw_topo_dev *rw_topo_nic(const struct rw_topo *t, const char *name);

/* The NUMA node holding the page at addr in this process, or -1 (unknown,
 * or not faulted in yet). */
int rw_topo_host_numa(const void *addr);

/* The topology as JSON for `railwire devices --json`:
 *   {"source": "...", "nics": [{"rdma", "netdev", "pci", "numa", "socket",
 *    "pcie_path": [...], "gpus": [{"cuda", "pci", "relation", "hops",
 *    "distance"}]}], "gpus": [{"cuda", "pci", "numa", "socket", "pcie_path"}]}
 * Returns a malloc'ed string (the caller frees it) or NULL (out of memory). */
char *rw_topo_json(const struct rw_topo *t);

#endif
