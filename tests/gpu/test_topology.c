/* SPDX-License-Identifier: MIT */
/* NIC/GPU topology from hand-written hwloc XML machines (topo/, written by
 * topo/gen_topo.py): an 8-GPU 8-NIC server with 2 sockets and 4 PCIe
 * switches (2 GPUs + 2 NICs each), and a 2-socket host with NICs on both
 * sockets and no GPU.  Checks the paths, the relations, the order `near`
 * gives, and the JSON of `railwire devices --json`. */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <railwire/error.h>

#include "gpu/topology.h"
#include "gtest.h"

#define TOPO_DIR RAILWIRE_SOURCE_DIR "/tests/gpu/topo/"

TestSuite(gpu_topology, .timeout = 60);

static void load(const char *file, struct rw_topo *t)
{
    gt_log_capture();
    int rc = rw_topo_load(file, t);
    cr_assert_eq(rc, 0, "loading %s: %d\n%s", file, rc, gt_log_text());
}

static const char *const nics8[] = {"mlx5_0", "mlx5_1", "mlx5_2", "mlx5_3",
                                    "mlx5_4", "mlx5_5", "mlx5_6", "mlx5_7"};

/* Orders nics8 for `near` and writes the names, space-separated, in out. */
static int order8(const struct rw_topo *t, const char *near, const struct rw_near *first,
                  char *out, size_t len)
{
    struct rw_near n;
    size_t order[8];
    int rc = rw_near_parse(near, &n);
    if (rc == 0)
        rc = rw_topo_order_nics(t, &n, first, nics8, 8, order);
    out[0] = 0;
    for (size_t i = 0; rc == 0 && i < 8; i++)
        snprintf(out + strlen(out), len - strlen(out), "%s%s", i ? " " : "", nics8[order[i]]);
    return rc;
}

Test(gpu_topology, server8_inventory)
{
    struct rw_topo t;
    load(TOPO_DIR "server8.xml", &t);
    cr_assert_eq(t.n_nics, 8);
    cr_assert_eq(t.n_gpus, 8);
    cr_assert_eq(t.n_numa, 2);
    const struct rw_topo_dev *n0 = rw_topo_nic(&t, "mlx5_0");
    cr_assert_not_null(n0);
    cr_assert_str_eq(n0->netdev, "enp21s0np0");
    cr_assert_str_eq(n0->busid, "0000:15:00.0");
    cr_assert_eq(n0->numa, 0);
    cr_assert_eq(n0->package, 0);
    cr_assert_eq(n0->depth, 5, "device, downstream port, switch, root port, host bridge");
    cr_assert_str_eq(n0->path[1], "0000:12:02.0");
    cr_assert_str_eq(n0->path[4], "host0000:10");
    cr_assert_eq(rw_topo_nic(&t, "enp21s0np0"), n0, "a NIC is also found by its netdev");
    const struct rw_topo_dev *g5 = rw_topo_gpu(&t, 5, NULL);
    cr_assert_not_null(g5);
    cr_assert_eq(g5->numa, 1);
    cr_assert_eq(rw_topo_gpu(&t, 0, g5->busid), g5, "the bus id wins over the ordinal");
    cr_assert_str_eq(t.source, "xml:" TOPO_DIR "server8.xml");
    rw_topo_free(&t);
}

Test(gpu_topology, server8_relations)
{
    struct rw_topo t;
    unsigned hops;
    load(TOPO_DIR "server8.xml", &t);
    const struct rw_topo_dev *g0 = rw_topo_gpu(&t, 0, NULL);
    cr_assert_eq(rw_topo_relation(rw_topo_nic(&t, "mlx5_1"), g0, &hops), RW_TOPO_SAME_SWITCH);
    cr_assert_eq(hops, 4, "down port, switch, down port on each side");
    cr_assert_eq(rw_topo_relation(rw_topo_nic(&t, "mlx5_2"), g0, NULL), RW_TOPO_SAME_ROOT);
    cr_assert_eq(rw_topo_relation(rw_topo_nic(&t, "mlx5_6"), g0, NULL), RW_TOPO_CROSS_SOCKET);
    cr_assert_lt(rw_topo_distance(rw_topo_nic(&t, "mlx5_0"), g0),
                 rw_topo_distance(rw_topo_nic(&t, "mlx5_3"), g0));
    rw_topo_free(&t);
}

Test(gpu_topology, server8_near_cuda_puts_the_switch_first)
{
    struct rw_topo t;
    char got[128];
    load(TOPO_DIR "server8.xml", &t);
    cr_assert_eq(order8(&t, "cuda:3", NULL, got, sizeof(got)), 0);
    cr_assert_str_eq(got, "mlx5_2 mlx5_3 mlx5_0 mlx5_1 mlx5_4 mlx5_5 mlx5_6 mlx5_7");
    cr_assert_eq(order8(&t, "cuda:6", NULL, got, sizeof(got)), 0);
    cr_assert_str_eq(got, "mlx5_6 mlx5_7 mlx5_4 mlx5_5 mlx5_0 mlx5_1 mlx5_2 mlx5_3");
    for (int g = 0; g < 8; g++) {
        char near[16];
        snprintf(near, sizeof(near), "cuda:%d", g);
        cr_assert_eq(order8(&t, near, NULL, got, sizeof(got)), 0);
        char want[16];
        snprintf(want, sizeof(want), "mlx5_%d ", g / 2 * 2);
        cr_assert(!strncmp(got, want, strlen(want)), "%s: %s", near, got);
    }
    rw_topo_free(&t);
}

Test(gpu_topology, server8_near_numa_and_auto)
{
    struct rw_topo t;
    char got[128];
    load(TOPO_DIR "server8.xml", &t);
    cr_assert_eq(order8(&t, "numa:1", NULL, got, sizeof(got)), 0);
    cr_assert_str_eq(got, "mlx5_4 mlx5_5 mlx5_6 mlx5_7 mlx5_0 mlx5_1 mlx5_2 mlx5_3");
    struct rw_near first = {.kind = RW_NEAR_CUDA, .index = 5};
    cr_assert_eq(order8(&t, "auto", &first, got, sizeof(got)), 0);
    cr_assert_str_eq(got, "mlx5_4 mlx5_5 mlx5_6 mlx5_7 mlx5_0 mlx5_1 mlx5_2 mlx5_3");
    gt_log_capture();
    cr_assert_eq(order8(&t, "auto", NULL, got, sizeof(got)), 0);
    cr_assert_str_eq(got, "mlx5_0 mlx5_1 mlx5_2 mlx5_3 mlx5_4 mlx5_5 mlx5_6 mlx5_7");
    cr_assert(gt_log_has("keep their order"), "%s", gt_log_text());
    gt_log_capture();
    cr_assert_eq(order8(&t, "cuda:8", NULL, got, sizeof(got)), RAILWIRE_E_INVALID);
    cr_assert(gt_log_has("cuda:8 is not in the topology"), "%s", gt_log_text());
    cr_assert(gt_log_has("8 GPUs"), "%s", gt_log_text());
    rw_topo_free(&t);
}

Test(gpu_topology, unknown_candidates_go_last)
{
    struct rw_topo t;
    struct rw_near n;
    size_t order[3];
    const char *const c[] = {"rxe0", "mlx5_0", "enp101s0np0"};
    load(TOPO_DIR "server8.xml", &t);
    cr_assert_eq(rw_near_parse("cuda:4", &n), 0);
    cr_assert_eq(rw_topo_order_nics(&t, &n, NULL, c, 3, order), 0);
    cr_assert_eq(order[0], 2, "mlx5_4's netdev, same switch as cuda:4");
    cr_assert_eq(order[1], 1);
    cr_assert_eq(order[2], 0, "not in the topology: last");
    rw_topo_free(&t);
}

Test(gpu_topology, two_sockets_without_gpu)
{
    struct rw_topo t;
    struct rw_near n;
    size_t order[3];
    const char *const c[] = {"mlx5_0", "mlx5_1", "mlx5_2"};
    load(TOPO_DIR "host2s.xml", &t);
    cr_assert_eq(t.n_gpus, 0);
    cr_assert_eq(t.n_nics, 3);
    cr_assert_eq(rw_topo_nic(&t, "mlx5_2")->numa, 1);
    cr_assert_eq(rw_near_parse("numa:1", &n), 0);
    cr_assert_eq(rw_topo_order_nics(&t, &n, NULL, c, 3, order), 0);
    cr_assert_eq(order[0], 1);
    cr_assert_eq(order[1], 2);
    cr_assert_eq(order[2], 0);
    cr_assert_eq(rw_near_parse("numa:0", &n), 0);
    cr_assert_eq(rw_topo_order_nics(&t, &n, NULL, c, 3, order), 0);
    cr_assert_eq(order[0], 0);
    struct rw_near host_mem = {.kind = RW_NEAR_NUMA, .index = 1};
    cr_assert_eq(rw_near_parse("auto", &n), 0);
    cr_assert_eq(rw_topo_order_nics(&t, &n, &host_mem, c, 3, order), 0);
    cr_assert_eq(order[0], 1);
    gt_log_capture();
    cr_assert_eq(rw_near_parse("cuda:0", &n), 0);
    cr_assert_eq(rw_topo_order_nics(&t, &n, NULL, c, 3, order), RAILWIRE_E_INVALID);
    cr_assert(gt_log_has("0 GPUs"), "%s", gt_log_text());
    cr_assert_eq(rw_near_parse("numa:2", &n), 0);
    cr_assert_eq(rw_topo_order_nics(&t, &n, NULL, c, 3, order), RAILWIRE_E_INVALID);
    rw_topo_free(&t);
}

Test(gpu_topology, near_parse)
{
    struct rw_near n;
    cr_assert_eq(rw_near_parse(NULL, &n), 0);
    cr_assert_eq(n.kind, RW_NEAR_NONE);
    cr_assert_eq(rw_near_parse("cuda:12", &n), 0);
    cr_assert_eq(n.kind, RW_NEAR_CUDA);
    cr_assert_eq(n.index, 12);
    static const char *const bad[] = {"cuda:", "cuda:-1", "numa:x", "gpu:0", "cuda:1 ", "Auto"};
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        gt_log_capture();
        cr_assert_eq(rw_near_parse(bad[i], &n), RAILWIRE_E_INVALID, "%s", bad[i]);
        cr_assert(gt_log_has("\"cuda:N\", \"numa:N\" or \"auto\""), "%s", gt_log_text());
    }
}

Test(gpu_topology, xml_from_the_environment_and_bad_files)
{
    struct rw_topo t;
    setenv("RAILWIRE_HWLOC_XML", TOPO_DIR "host2s.xml", 1);
    load(NULL, &t);
    cr_assert_eq(t.n_nics, 3);
    rw_topo_free(&t);
    gt_log_capture();
    cr_assert_eq(rw_topo_load(TOPO_DIR "missing.xml", &t), RAILWIRE_E_INVALID);
    cr_assert(gt_log_has("missing.xml"), "%s", gt_log_text());
    unsetenv("RAILWIRE_HWLOC_XML");
}

Test(gpu_topology, live_machine_loads)
{
    struct rw_topo t;
    load(NULL, &t);
    cr_assert_str_eq(t.source, "live");
    cr_assert_geq(t.n_numa, 1);
    rw_topo_free(&t);
}

Test(gpu_topology, json_of_the_server)
{
    struct rw_topo t;
    load(TOPO_DIR "server8.xml", &t);
    char *j = rw_topo_json(&t);
    cr_assert_not_null(j);
    cr_assert(strstr(j, "{\"rdma\": \"mlx5_0\", \"netdev\": \"enp21s0np0\", \"pci\": "
                        "\"0000:15:00.0\", \"numa\": 0, \"socket\": 0, \"pcie_path\": "
                        "[\"0000:15:00.0\", \"0000:12:02.0\", \"0000:11:00.0\", "
                        "\"0000:10:01.0\", \"host0000:10\"]"), "%s", j);
    cr_assert(strstr(j, "{\"cuda\": 0, \"pci\": \"0000:13:00.0\", \"relation\": "
                        "\"same-switch\", \"hops\": 4, \"distance\": 104}"), "%s", j);
    /* Write it where a person can look (the figures of issue 17). */
    FILE *f = fopen(RAILWIRE_BINARY_DIR "/tests/gpu/server8.json", "w");
    if (f) {
        fputs(j, f);
        fclose(f);
    }
    free(j);
    rw_topo_free(&t);
}

Test(gpu_topology, host_numa_of_a_touched_page)
{
    static char page[8192];
    page[0] = 1;
    int n = rw_topo_host_numa(page);
    cr_assert_geq(n, -1);
    if (n >= 0)
        cr_assert_lt(n, 4096);
}

/* `railwire devices --json` carries the topology (RAILWIRE_HWLOC_XML names
 * the machine).  Skips when the command was not built. */
Test(gpu_topology, devices_json_has_the_topology)
{
    static char out[1 << 17];
    const char *bin = RAILWIRE_BINARY_DIR "/tools/railwire/railwire";
    char cmd[1024];
    if (access(bin, X_OK))
        cr_skip("the railwire command was not built");
    snprintf(cmd, sizeof(cmd), "RAILWIRE_HWLOC_XML='%s' '%s' devices --json 2>/dev/null",
             TOPO_DIR "server8.xml", bin);
    FILE *p = popen(cmd, "r");
    cr_assert_not_null(p);
    size_t n = fread(out, 1, sizeof(out) - 1, p);
    out[n] = 0;
    cr_assert_eq(pclose(p), 0, "%s", out);
    cr_assert(!strncmp(out, "{\"devices\": [", 13), "%s", out);
    cr_assert(strstr(out, "\"topology\": {\"source\": \"xml:"), "%s", out);
    cr_assert(strstr(out, "\"rdma\": \"mlx5_7\""), "%s", out);
    cr_assert(strstr(out, "\"relation\": \"same-switch\""), "%s", out);
    cr_assert_eq(out[n - 1], '\n');
    cr_assert_eq(out[n - 2], '}');
}
