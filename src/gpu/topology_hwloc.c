/* SPDX-License-Identifier: MIT */
/* Reads NICs and GPUs from hwloc (see topology.h). */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <railwire/error.h>

#include "common/log.h"
#include "gpu/topology.h"

void rw_topo_free(struct rw_topo *t)
{
    if (!t)
        return;
    free(t->nics);
    free(t->gpus);
    free(t->numa_package);
    memset(t, 0, sizeof(*t));
}

#if !RAILWIRE_HAVE_HWLOC

int rw_topo_load(const char *xml, struct rw_topo *out)
{
    (void)xml;
    memset(out, 0, sizeof(*out));
    rw_err("topology: this railwire was built without hwloc (libhwloc-dev was missing), so "
           "it cannot tell which NIC is near which GPU or NUMA node: rails keep the device "
           "order; install libhwloc-dev and rebuild, or list the devices explicitly");
    return RAILWIRE_E_UNSUPPORTED;
}

#else

#include <hwloc.h>

#define NVIDIA_VENDOR 0x10de

static int is_nvidia_gpu(hwloc_obj_t o)
{
    unsigned cls = o->attr->pcidev.class_id;
    return o->attr->pcidev.vendor_id == NVIDIA_VENDOR && (cls == 0x0302 || cls == 0x0300);
}

/* NUMA node and socket of an I/O object, from its first non-I/O ancestor. */
static void locality(hwloc_topology_t topo, hwloc_obj_t o, struct rw_topo_dev *d)
{
    hwloc_obj_t anc = hwloc_get_non_io_ancestor_obj(topo, o);
    d->numa = d->package = -1;
    if (!anc)
        return;
    if (anc->nodeset && hwloc_bitmap_weight(anc->nodeset) == 1)
        d->numa = hwloc_bitmap_first(anc->nodeset);
    hwloc_obj_t pkg = anc->type == HWLOC_OBJ_PACKAGE
                          ? anc
                          : hwloc_get_ancestor_obj_by_type(topo, HWLOC_OBJ_PACKAGE, anc);
    if (pkg)
        d->package = (int)pkg->os_index;
}

static void pci_id(char *out, const struct hwloc_pcidev_attr_s *p)
{
    snprintf(out, RW_TOPO_ID_LEN, "%04x:%02x:%02x.%x", p->domain & 0xffff, p->bus, p->dev,
             p->func);
}

static void pcie_path(hwloc_obj_t o, struct rw_topo_dev *d)
{
    d->depth = 0;
    for (; o && d->depth < RW_TOPO_PATH_MAX; o = o->parent) {
        char *slot = d->path[d->depth];
        if (o->type == HWLOC_OBJ_PCI_DEVICE) {
            pci_id(slot, &o->attr->pcidev);
        } else if (o->type == HWLOC_OBJ_BRIDGE) {
            if (o->attr->bridge.upstream_type == HWLOC_OBJ_BRIDGE_PCI)
                pci_id(slot, &o->attr->bridge.upstream.pci);
            else
                snprintf(slot, RW_TOPO_ID_LEN, "host%04x:%02x",
                         o->attr->bridge.downstream.pci.domain & 0xffff,
                         o->attr->bridge.downstream.pci.secondary_bus);
        } else {
            break;
        }
        d->depth++;
    }
}

/* Fills d from PCI device o: its OS devices name it.  Returns 1 for a NIC,
 * 2 for a GPU, 0 for anything else. */
static int classify(hwloc_topology_t topo, hwloc_obj_t o, struct rw_topo_dev *d)
{
    memset(d, 0, sizeof(*d));
    d->cuda = -1;
    int gpu = is_nvidia_gpu(o), cuda_seen = 0;
    for (hwloc_obj_t c = o->io_first_child; c; c = c->next_sibling) {
        if (c->type != HWLOC_OBJ_OS_DEVICE || !c->name)
            continue;
        switch (c->attr->osdev.type) {
        case HWLOC_OBJ_OSDEV_OPENFABRICS:
            if (!d->rdma[0])
                snprintf(d->rdma, sizeof(d->rdma), "%s", c->name);
            break;
        case HWLOC_OBJ_OSDEV_NETWORK:
            if (!d->netdev[0])
                snprintf(d->netdev, sizeof(d->netdev), "%s", c->name);
            break;
        case HWLOC_OBJ_OSDEV_COPROC:
            if (!strncmp(c->name, "cuda", 4) && c->name[4]) {
                d->cuda = atoi(c->name + 4);
                cuda_seen = 1;
            }
            break;
        default:
            break;
        }
    }
    if (!gpu && !d->rdma[0] && !d->netdev[0])
        return 0;
    pci_id(d->busid, &o->attr->pcidev);
    pcie_path(o, d);
    locality(topo, o, d);
    if (gpu && !cuda_seen)
        d->cuda = -2; /* numbered later, in PCI order */
    return gpu ? 2 : 1;
}

static int grow(struct rw_topo_dev **arr, size_t n)
{
    struct rw_topo_dev *p = realloc(*arr, (n + 1) * sizeof(**arr));
    if (!p)
        return RAILWIRE_E_NOMEM;
    *arr = p;
    return 0;
}

static int collect(hwloc_topology_t topo, struct rw_topo *t)
{
    struct rw_topo_dev d;
    int next_cuda = 0;
    for (hwloc_obj_t o = NULL; (o = hwloc_get_next_pcidev(topo, o));) {
        int kind = classify(topo, o, &d);
        if (!kind)
            continue;
        struct rw_topo_dev **arr = kind == 2 ? &t->gpus : &t->nics;
        size_t *n = kind == 2 ? &t->n_gpus : &t->n_nics;
        if (grow(arr, *n))
            return RAILWIRE_E_NOMEM;
        (*arr)[(*n)++] = d;
    }
    /* GPUs without a CUDA OS device (no CUDA in hwloc's build, or an XML
     * without them) take ordinals in PCI order, as CUDA_DEVICE_ORDER=
     * PCI_BUS_ID numbers them. */
    for (size_t i = 0; i < t->n_gpus; i++)
        if (t->gpus[i].cuda >= next_cuda)
            next_cuda = t->gpus[i].cuda + 1;
    for (size_t i = 0; i < t->n_gpus; i++)
        if (t->gpus[i].cuda == -2)
            t->gpus[i].cuda = next_cuda++;
    int n_numa = hwloc_get_nbobjs_by_type(topo, HWLOC_OBJ_NUMANODE);
    int max_os = 0;
    for (int i = 0; i < n_numa; i++) {
        hwloc_obj_t nn = hwloc_get_obj_by_type(topo, HWLOC_OBJ_NUMANODE, (unsigned)i);
        if ((int)nn->os_index + 1 > max_os)
            max_os = (int)nn->os_index + 1;
    }
    t->n_numa = (size_t)max_os;
    t->numa_package = malloc((t->n_numa ? t->n_numa : 1) * sizeof(int));
    if (!t->numa_package)
        return RAILWIRE_E_NOMEM;
    for (size_t i = 0; i < t->n_numa; i++)
        t->numa_package[i] = -1;
    for (int i = 0; i < n_numa; i++) {
        hwloc_obj_t nn = hwloc_get_obj_by_type(topo, HWLOC_OBJ_NUMANODE, (unsigned)i);
        hwloc_obj_t pkg = hwloc_get_ancestor_obj_by_type(topo, HWLOC_OBJ_PACKAGE, nn);
        t->numa_package[nn->os_index] = pkg ? (int)pkg->os_index : -1;
    }
    return 0;
}

int rw_topo_load(const char *xml, struct rw_topo *out)
{
    hwloc_topology_t topo;
    int rc = 0;

    memset(out, 0, sizeof(*out));
    if (!xml || !*xml)
        xml = getenv("RAILWIRE_HWLOC_XML"); /* RW_TOPO_XML_ENV */
    if (xml && !*xml)
        xml = NULL;
    if (hwloc_topology_init(&topo)) {
        rw_err("topology: hwloc_topology_init failed (errno %d)", errno);
        return RAILWIRE_E_NOMEM;
    }
    hwloc_topology_set_io_types_filter(topo, HWLOC_TYPE_FILTER_KEEP_ALL);
    if (xml && hwloc_topology_set_xml(topo, xml)) {
        rw_err("topology: cannot read the hwloc XML file %s (errno %d)%s", xml, errno,
               getenv(RW_TOPO_XML_ENV) ? ": check " RW_TOPO_XML_ENV : "");
        rc = RAILWIRE_E_INVALID;
        goto out;
    }
    if (hwloc_topology_load(topo)) {
        rw_err("topology: hwloc could not load %s (errno %d)%s", xml ? xml : "this machine",
               errno, xml ? ": is it an hwloc XML file (lstopo --of xml)?" : "");
        rc = xml ? RAILWIRE_E_INVALID : RAILWIRE_E_SYSTEM;
        goto out;
    }
    snprintf(out->source, sizeof(out->source), "%s%s", xml ? "xml:" : "live", xml ? xml : "");
    rc = collect(topo, out);
    if (rc) {
        rw_err("topology: out of memory");
        rw_topo_free(out);
    } else {
        rw_debug("topology (%s): %zu NICs, %zu GPUs, %zu NUMA nodes", out->source, out->n_nics,
                 out->n_gpus, out->n_numa);
    }
out:
    hwloc_topology_destroy(topo);
    return rc;
}

#endif
