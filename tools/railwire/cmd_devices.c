/* SPDX-License-Identifier: MIT */
/* `railwire devices`: RDMA devices, ports and GIDs, and for each port the
 * GID index railwire would use and why.
 *
 * Exit status: 0 on success, also when there is no RDMA device at all (the
 * output says so: "no RDMA devices"); 1 when the inventory failed (a bad
 * RAILWIRE_GID_INDEX/RAILWIRE_MTU, out of memory); 2 for a usage error. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "commands.h"
#include "gpu/topology.h"

#if RAILWIRE_HAVE_VERBS
#include <railwire/error.h>

#include "verbs/verbs.h"
#endif

static const char usage[] =
    "usage: railwire devices [--json] [--gid-index N]\n"
    "\n"
    "Lists the RDMA devices and ports libibverbs sees (state, link layer, speed, MTU),\n"
    "every GID with its index, type and address, and for each port the GID index\n"
    "railwire would use and why (RoCE v2 IPv4-mapped first, then RoCE v2 global IPv6,\n"
    "then any other usable entry; empty and link-local entries are skipped).\n"
    "\n"
    "  --json          one JSON object on stdout: {\"devices\": [...], \"topology\": {...}}:\n"
    "                  topology gives each NIC's NUMA node, PCIe path and distance to\n"
    "                  each GPU (hwloc; RAILWIRE_HWLOC_XML reads a saved machine instead)\n"
    "  --gid-index N   show the choice with index N forced (as the gid_index option)\n"
    "\n"
    "Environment: RAILWIRE_GID_INDEX (forces the index), RAILWIRE_MTU (path MTU cap).\n"
    "Exit status: 0 (also when no device exists: the output says \"no RDMA devices\"),\n"
    "1 if the inventory failed, 2 for a usage error.\n";

#if RAILWIRE_HAVE_VERBS
static void json_str(const char *s)
{
    putchar('"');
    for (; *s; s++) {
        unsigned char c = (unsigned char)*s;
        if (c == '"' || c == '\\')
            printf("\\%c", c);
        else if (c < 0x20)
            printf("\\u%04x", c);
        else
            putchar(c);
    }
    putchar('"');
}

static void print_json(const struct rw_vdev_info *devs, size_t n)
{
    char addr[64];

    printf("{\"devices\": [");
    for (size_t i = 0; i < n; i++) {
        const struct rw_vdev_info *d = &devs[i];
        printf("%s{\"name\": ", i ? ", " : "");
        json_str(d->name);
        printf(", \"node_guid\": \"%s\", \"error\": %s, \"ports\": [", d->node_guid,
               d->error ? "true" : "false");
        for (unsigned p = 0; p < d->n_ports; p++) {
            const struct rw_vport_info *pi = &d->ports[p];
            printf("%s{\"port\": %u, \"name\": ", p ? ", " : "", pi->port);
            printf("\"%s:%u\"", d->name, pi->port);
            printf(", \"state\": \"%s\", \"link_layer\": \"%s\", \"gbps\": %.4g, "
                   "\"active_speed\": %u, \"active_width\": %u, \"active_mtu\": %u, "
                   "\"max_mtu\": %u, \"path_mtu\": %u, \"gid_table_len\": %u, \"gids\": [",
                   pi->state ? pi->state : "unknown", pi->link_layer ? pi->link_layer : "unknown",
                   pi->gbps, pi->speed_code, pi->width_code, pi->active_mtu, pi->max_mtu,
                   pi->path_mtu, pi->gid_tbl_len);
            for (size_t g = 0; g < pi->n_gids; g++) {
                const struct rw_vgid_info *gi = &pi->gids[g];
                printf("%s{\"index\": %u, \"type\": \"%s\", \"gid\": \"%s\", \"netdev\": ",
                       g ? ", " : "", gi->e.index, rw_gid_type_name(gi->e.type),
                       rw_gid_format(gi->e.gid, addr, sizeof(addr)));
                json_str(gi->netdev);
                printf(", \"class\": \"%s\"}", rw_gid_class_name(gi->cls));
            }
            printf("], \"gid_index\": %d, \"why\": ", pi->choice_rc ? -1 : pi->choice.index);
            json_str(pi->choice.reason);
            printf("}");
        }
        printf("]}");
    }
    printf("]");
}

static void print_text(const struct rw_vdev_info *devs, size_t n)
{
    char addr[64];

    for (size_t i = 0; i < n; i++) {
        const struct rw_vdev_info *d = &devs[i];
        printf("%s%s  (node GUID %s)%s\n", i ? "\n" : "", d->name, d->node_guid,
               d->error ? "  [could not be opened or queried fully: check permissions]" : "");
        for (unsigned p = 0; p < d->n_ports; p++) {
            const struct rw_vport_info *pi = &d->ports[p];
            if (!pi->state) {
                printf("  port %u: could not be queried\n", pi->port);
                continue;
            }
            printf("  port %u: %s, link layer %s, %.4g Gbit/s (speed code %u, width code %u)\n",
                   pi->port, pi->state, pi->link_layer, pi->gbps, pi->speed_code, pi->width_code);
            printf("          MTU active %u, max %u; railwire's path MTU %u\n", pi->active_mtu,
                   pi->max_mtu, pi->path_mtu);
            printf("          GID table: %zu non-empty of %u entries\n", pi->n_gids,
                   pi->gid_tbl_len);
            for (size_t g = 0; g < pi->n_gids; g++) {
                const struct rw_vgid_info *gi = &pi->gids[g];
                printf("    GID %3u  %-8s %-40s %-12s %s\n", gi->e.index,
                       rw_gid_type_name(gi->e.type), rw_gid_format(gi->e.gid, addr, sizeof(addr)),
                       gi->netdev[0] ? gi->netdev : "-", rw_gid_class_name(gi->cls));
            }
            if (pi->choice_rc)
                printf("    railwire: no GID usable: %s\n", pi->choice.reason);
            else
                printf("    railwire uses GID %s\n", pi->choice.reason);
            if (!pi->active)
                printf("    (port is not ACTIVE: railwire skips it unless RAILWIRE_DEVICES names it)\n");
        }
    }
}
#endif

/* Ends the JSON object with the NIC/GPU topology (null when hwloc cannot
 * read it; the reason went to stderr). */
static void end_json_with_topology(void)
{
    struct rw_topo t;
    char *j = NULL;
    if (rw_topo_load(NULL, &t) == 0) {
        j = rw_topo_json(&t);
        rw_topo_free(&t);
    }
    printf(", \"topology\": %s}\n", j ? j : "null");
    free(j);
}

int cmd_devices(int argc, char **argv)
{
    int json = 0, gid_index = -1;

    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--json")) {
            json = 1;
        } else if (!strcmp(argv[i], "--gid-index") && i + 1 < argc) {
            char *end;
            long v = strtol(argv[++i], &end, 10);
            if (*end || end == argv[i] || v < 0 || v > 0xffff) {
                fprintf(stderr, "railwire devices: --gid-index wants a number 0..65535\n");
                return 2;
            }
            gid_index = (int)v;
        } else if (!strcmp(argv[i], "--help") || !strcmp(argv[i], "-h")) {
            fputs(usage, stdout);
            return 0;
        } else {
            fprintf(stderr, "railwire devices: unknown option '%s'\n\n%s", argv[i], usage);
            return 2;
        }
    }
#if RAILWIRE_HAVE_VERBS
    struct rw_vdev_info *devs = NULL;
    size_t n = 0;
    int rc = rw_verbs_inventory(gid_index, &devs, &n);
    if (rc == RAILWIRE_E_NO_DEVICE || (rc == 0 && n == 0)) {
        if (json) {
            printf("{\"devices\": []");
            end_json_with_topology();
        } else
            printf("no RDMA devices: libibverbs sees none%s.\n"
                   "railwire will use the tcp transport. To use verbs, load the NIC's driver, or\n"
                   "create a soft-RoCE device: `rdma link add rxe0 type rxe netdev eth0`.\n",
                   rc == RAILWIRE_E_NO_DEVICE ? " (the RDMA stack is not loaded)" : "");
        return 0;
    }
    if (rc) {
        fprintf(stderr, "railwire devices: %s: %s\n", railwire_error_class(rc),
                railwire_strerror(rc));
        return 1;
    }
    if (json) {
        print_json(devs, n);
        end_json_with_topology();
    } else
        print_text(devs, n);
    rw_verbs_inventory_free(devs, n);
    return 0;
#else
    (void)gid_index;
    if (json) {
        printf("{\"devices\": [], \"verbs\": false");
        end_json_with_topology();
    } else
        printf("no RDMA devices: this railwire was built without verbs support "
               "(libibverbs-dev was missing); it uses the tcp transport.\n");
    return 0;
#endif
}
