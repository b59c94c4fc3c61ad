/* SPDX-License-Identifier: MIT */
/* The `near` option (railwire_railset_opts.near, docs/gpu.md) against the
 * hwloc XML machines of topo/: verbs rails placed on a fake device list
 * ordered by distance (no RDMA device needed: the placement is a pure
 * function of the topology and the candidates), explicit lists winning,
 * bad strings refused, near=auto from the current CUDA context (stand-in
 * driver) or the CPU's NUMA node, and tcp connects over loopback with near
 * set, where the topology names `lo` as the interface of a NIC. */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <railwire.h>

#include "gpu/cuda_driver.h"
#include "gpu/near_mem.h"
#include "gpu/topology.h"
#include "gtest.h"
#include "rail/client/railset_testing.h"

#define TOPO_DIR RAILWIRE_SOURCE_DIR "/tests/gpu/topo/"
/* server8.xml's GPUs in CUDA order, as the stand-in's PCI buses. */
#define SERVER8_BUSES "13,14,1b,1c,63,64,6b,6c"

TestSuite(gpu_near, .timeout = 120);

static void load(const char *file, struct rw_topo *t)
{
    gt_log_capture();
    cr_assert_eq(rw_topo_load(file, t), 0, "%s", gt_log_text());
}

/* A fake RDMA device list, not in NIC order, with ports. */
static const char *const devs8[] = {"mlx5_7:1", "mlx5_0:1", "mlx5_5:1", "mlx5_3:1",
                                    "mlx5_1:1", "mlx5_6:1", "mlx5_2:1", "mlx5_4:1"};

static int place(const struct rw_topo *t, const char *near, const char *const *cands, size_t n,
                 unsigned rails, const char **out)
{
    struct rw_near nr;
    cr_assert_eq(rw_near_parse(near, &nr), 0);
    return rw_near_place_names(t, &nr, cands, n, rails, out);
}

Test(gpu_near, cuda3_puts_rails_on_the_nics_of_its_switch)
{
    struct rw_topo t;
    const char *out[4];
    load(TOPO_DIR "server8.xml", &t);
    /* mlx5_2 and mlx5_3 are equally near GPU 3 (its switch); ties keep the
     * device list's order, where mlx5_3 comes first. */
    cr_assert_eq(place(&t, "cuda:3", devs8, 8, 4, out), 2, "two NICs share GPU 3's switch");
    cr_assert_str_eq(out[0], "mlx5_3:1");
    cr_assert_str_eq(out[1], "mlx5_2:1");
    cr_assert_str_eq(out[2], "mlx5_3:1", "rails spread over the equally near NICs only");
    cr_assert_str_eq(out[3], "mlx5_2:1");
    cr_assert_eq(place(&t, "cuda:6", devs8, 8, 2, out), 2);
    cr_assert_str_eq(out[0], "mlx5_7:1"); /* first of mlx5_6/7 in the list */
    cr_assert_str_eq(out[1], "mlx5_6:1");
    rw_topo_free(&t);
}

Test(gpu_near, numa1_uses_the_socket1_nics)
{
    struct rw_topo t;
    const char *out[3];
    static const char *const devs3[] = {"mlx5_0", "mlx5_1:1", "mlx5_2"};
    load(TOPO_DIR "host2s.xml", &t);
    cr_assert_eq(place(&t, "numa:1", devs3, 3, 3, out), 2);
    cr_assert_str_eq(out[0], "mlx5_1:1");
    cr_assert_str_eq(out[1], "mlx5_2");
    cr_assert_str_eq(out[2], "mlx5_1:1");
    cr_assert_eq(place(&t, "numa:0", devs3, 3, 2, out), 1);
    cr_assert_str_eq(out[0], "mlx5_0");
    cr_assert_str_eq(out[1], "mlx5_0");
    rw_topo_free(&t);
    load(TOPO_DIR "server8.xml", &t);
    const char *o8[4];
    cr_assert_eq(place(&t, "numa:1", devs8, 8, 4, o8), 4);
    for (int i = 0; i < 4; i++)
        cr_assert(!strcmp(o8[i], "mlx5_4:1") || !strcmp(o8[i], "mlx5_5:1") ||
                      !strcmp(o8[i], "mlx5_6:1") || !strcmp(o8[i], "mlx5_7:1"),
                  "rail %d on %s, not socket 1", i, o8[i]);
    rw_topo_free(&t);
}

Test(gpu_near, unknown_devices_and_targets)
{
    struct rw_topo t;
    const char *out[2] = {"x", "y"};
    static const char *const other[] = {"rxe0", "eth9"};
    load(TOPO_DIR "server8.xml", &t);
    cr_assert_eq(place(&t, "cuda:3", other, 2, 2, out), 0, "nothing known: keep the usual");
    cr_assert_str_eq(out[0], "x");
    gt_log_capture();
    cr_assert_eq(place(&t, "cuda:9", devs8, 8, 2, out), RAILWIRE_E_INVALID);
    cr_assert(gt_log_has("cuda:9"), "%s", gt_log_text());
    cr_assert_eq(place(&t, "numa:7", devs8, 8, 2, out), RAILWIRE_E_INVALID);
    rw_topo_free(&t);
}

/* A verbs-like transport whose default places are devs8. */
static int fake_places(struct rw_domain_place *out, unsigned max)
{
    unsigned n = 8 < max ? 8 : max;
    for (unsigned i = 0; i < n; i++)
        snprintf(out[i].device, sizeof(out[i].device), "%s", devs8[i]);
    return (int)n;
}

static const struct rw_transport_ops fake_verbs = {
    .name = "fake", .places_by_device = 1, .default_places = fake_places};

static void opts(railwire_railset_opts *o, unsigned rails, const char *near)
{
    railwire_railset_opts_init(o);
    o->n_rails = rails;
    o->near = near;
}

Test(gpu_near, plan_places_verbs_rails_and_explicit_devices_win)
{
    railwire_railset_opts o;
    struct rw_near_plan plan;
    setenv("RAILWIRE_HWLOC_XML", TOPO_DIR "server8.xml", 1);
    gt_log_capture();
    opts(&o, 3, "cuda:3");
    cr_assert_eq(rw_near_plan_make("127.0.0.1", &fake_verbs, &o, &plan), 0, "%s", gt_log_text());
    cr_assert_eq(o.n_devices, 3);
    cr_assert_str_eq(o.devices[0], "mlx5_3:1");
    cr_assert_str_eq(o.devices[1], "mlx5_2:1");
    cr_assert_str_eq(o.devices[2], "mlx5_3:1");
    cr_assert(gt_log_has("rail 0 on mlx5_3:1 (nearest of 2)"), "%s", gt_log_text());
    rw_near_plan_free(&plan);

    static const char *const mine[] = {"mlx5_7:1"};
    opts(&o, 2, "cuda:3");
    o.devices = mine;
    o.n_devices = 1;
    gt_log_capture();
    cr_assert_eq(rw_near_plan_make("127.0.0.1", &fake_verbs, &o, &plan), 0);
    cr_assert_eq(o.devices, mine, "the explicit list was replaced");
    cr_assert_eq(o.n_devices, 1);
    cr_assert(gt_log_has("near=cuda:3 ignored: the explicit devices list wins"), "%s",
              gt_log_text());
    rw_near_plan_free(&plan);

    opts(&o, 2, "cuda:9");
    gt_log_capture();
    cr_assert_eq(rw_near_plan_make("127.0.0.1", &fake_verbs, &o, &plan), RAILWIRE_E_INVALID);
    cr_assert(gt_log_has("is not in the topology"), "%s", gt_log_text());
    unsetenv("RAILWIRE_HWLOC_XML");
}

Test(gpu_near, plan_numa1_on_the_two_socket_host)
{
    railwire_railset_opts o;
    struct rw_near_plan plan;
    setenv("RAILWIRE_HWLOC_XML", TOPO_DIR "host2s.xml", 1);
    opts(&o, 2, "numa:1");
    gt_log_capture();
    cr_assert_eq(rw_near_plan_make("127.0.0.1", &fake_verbs, &o, &plan), 0, "%s", gt_log_text());
    cr_assert_eq(o.n_devices, 2);
    cr_assert_str_eq(o.devices[0], "mlx5_1:1");
    cr_assert_str_eq(o.devices[1], "mlx5_2:1");
    rw_near_plan_free(&plan);
    unsetenv("RAILWIRE_HWLOC_XML");
}

/* fake_places for host2s's NICs. */
static int fake_places2(struct rw_domain_place *out, unsigned max)
{
    static const char *const d[] = {"mlx5_0", "mlx5_1:1", "mlx5_2"};
    unsigned n = 3 < max ? 3 : max;
    for (unsigned i = 0; i < n; i++)
        snprintf(out[i].device, sizeof(out[i].device), "%s", d[i]);
    return (int)n;
}

Test(gpu_near, auto_without_cuda_takes_the_cpu_numa_node)
{
    static const struct rw_transport_ops fake2 = {
        .name = "fake", .places_by_device = 1, .default_places = fake_places2};
    railwire_railset_opts o;
    struct rw_near_plan plan;
    struct rw_near n;
    const char *why;
    rw_near_auto_now(&n, &why);
    cr_assert_eq(n.kind, RW_NEAR_NUMA, "%s", why);
    cr_assert_eq(rw_cuda_loaded(), 0, "near=auto loaded the CUDA driver");
    if (n.index != 0)
        cr_skip_test("this CPU is on NUMA node %d; host2s's node 0 NIC test needs node 0", n.index);
    setenv("RAILWIRE_HWLOC_XML", TOPO_DIR "host2s.xml", 1);
    opts(&o, 2, "auto");
    gt_log_capture();
    cr_assert_eq(rw_near_plan_make("127.0.0.1", &fake2, &o, &plan), 0, "%s", gt_log_text());
    cr_assert(gt_log_has("near=auto is numa:0"), "%s", gt_log_text());
    cr_assert_str_eq(o.devices[0], "mlx5_0");
    cr_assert_str_eq(o.devices[1], "mlx5_0");
    rw_near_plan_free(&plan);
    cr_assert_eq(rw_cuda_loaded(), 0);
    unsetenv("RAILWIRE_HWLOC_XML");
}

/* The stand-in as server8's 8 GPUs, device `dev` current on this thread. */
static void standin_server8(int dev)
{
    setenv("RAILWIRE_STANDIN_DEVICES", "8", 1);
    setenv("RAILWIRE_STANDIN_PCI_BUS", SERVER8_BUSES, 1);
    gt_use_standin();
    const struct rw_cuda *cu;
    cr_assert_eq(rw_cuda_get(&cu), 0);
    cr_assert_eq(rw_cuda_use_device(dev), 0);
}

Test(gpu_near, auto_takes_the_current_cuda_device)
{
    railwire_railset_opts o;
    struct rw_near_plan plan;
    standin_server8(3);
    setenv("RAILWIRE_HWLOC_XML", TOPO_DIR "server8.xml", 1);
    opts(&o, 2, "auto");
    gt_log_capture();
    cr_assert_eq(rw_near_plan_make("127.0.0.1", &fake_verbs, &o, &plan), 0, "%s", gt_log_text());
    cr_assert(gt_log_has("near=auto is cuda:3, from the CUDA context current"), "%s",
              gt_log_text());
    cr_assert_eq(plan.target.kind, RW_NEAR_CUDA);
    cr_assert_str_eq(plan.target.busid, "0000:1c:00.0");
    cr_assert_str_eq(o.devices[0], "mlx5_3:1");
    cr_assert_str_eq(o.devices[1], "mlx5_2:1");
    rw_near_plan_free(&plan);
    unsetenv("RAILWIRE_HWLOC_XML");
}

Test(gpu_near, bad_strings_are_refused)
{
    static const char *const bad[] = {"gpu:1", "cuda:", "cuda:-1", "numa:x", "autox", "Auto",
                                      "cuda:3 ", "numa"};
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        railwire_railset_opts o;
        railwire_railset *rs = NULL;
        opts(&o, 1, bad[i]);
        o.transport = RAILWIRE_TRANSPORT_TCP;
        gt_log_capture();
        /* Refused before anything is dialled: port 1 is never reached. */
        cr_assert_eq(railwire_railset_connect("127.0.0.1", "1", &o, &rs), RAILWIRE_E_INVALID,
                     "near '%s' accepted", bad[i]);
        cr_assert_null(rs);
        cr_assert(gt_log_has("\"cuda:N\" (a GPU), \"numa:N\" (a NUMA node), \"auto\""), "%s",
                  gt_log_text());
    }
}

/* --- tcp end to end ------------------------------------------------------ */

#define ARENA (1u << 20)

struct world {
    railwire_server *s;
    unsigned char *arena;
    char port[16];
    char xml[64];
};

/* server8.xml with mlx5_2's interface renamed `lo`, so that the loopback
 * address is the one nearest GPU 3. */
static void xml_with_lo(struct world *w)
{
    FILE *f = fopen(TOPO_DIR "server8.xml", "r");
    cr_assert_not_null(f);
    static char buf[1 << 16];
    size_t n = fread(buf, 1, sizeof(buf) - 1, f);
    fclose(f);
    buf[n] = '\0';
    char *at = strstr(buf, "name=\"enp29s0np0\"");
    cr_assert_not_null(at);
    snprintf(w->xml, sizeof(w->xml), "/tmp/rw_near_%d.xml", (int)getpid());
    f = fopen(w->xml, "w");
    cr_assert_not_null(f);
    fwrite(buf, 1, (size_t)(at - buf), f);
    fputs("name=\"lo\"", f);
    fputs(at + strlen("name=\"enp29s0np0\""), f);
    fclose(f);
}

static void world_up(struct world *w)
{
    w->arena = malloc(ARENA);
    cr_assert_not_null(w->arena);
    for (size_t i = 0; i < ARENA; i++)
        w->arena[i] = (unsigned char)(i * 13 + 1);
    railwire_server_opts so;
    railwire_server_opts_init(&so);
    so.dialect = RAILWIRE_DIALECT_RW;
    so.transport = RAILWIRE_TRANSPORT_TCP;
    so.listen_host = "127.0.0.1";
    so.arena = (railwire_region){w->arena, ARENA};
    cr_assert_eq(railwire_server_create(&so, &w->s), 0);
    snprintf(w->port, sizeof(w->port), "%u", railwire_server_port(w->s));
    xml_with_lo(w);
}

static void world_down(struct world *w)
{
    railwire_server_destroy(w->s);
    free(w->arena);
    unlink(w->xml);
}

static railwire_railset *connect_near(struct world *w, const char *near, unsigned rails,
                                      const char *const *local)
{
    railwire_railset_opts o;
    railwire_railset *rs = NULL;
    opts(&o, rails, near);
    o.dialect = RAILWIRE_DIALECT_RW;
    o.transport = RAILWIRE_TRANSPORT_TCP;
    o.connect_timeout_ms = 3000;
    if (local) {
        o.local_addrs = local;
        o.n_local_addrs = 1;
    }
    int rc = railwire_railset_connect("127.0.0.1", w->port, &o, &rs);
    cr_assert_eq(rc, 0, "connect near=%s: %s\n%s", near, railwire_strerror(rc), gt_log_text());
    return rs;
}

static void read_check(struct world *w, railwire_railset *rs)
{
    unsigned char *buf = malloc(ARENA / 2);
    railwire_mr *mr;
    cr_assert_not_null(buf);
    cr_assert_eq(railwire_mr_register(rs, buf, ARENA / 2, &mr), 0);
    cr_assert_eq(railwire_read(rs, mr, buf, ARENA / 2, 0, 100, 10000), 0);
    cr_assert(memcmp(buf, w->arena + 100, ARENA / 2) == 0);
    cr_assert_eq(railwire_mr_deregister(mr), 0);
    free(buf);
}

Test(gpu_near, tcp_rails_leave_by_the_nearest_interface)
{
    static struct world w;
    world_up(&w);
    setenv("RAILWIRE_HWLOC_XML", w.xml, 1);
    gt_log_capture();
    railwire_railset *rs = connect_near(&w, "cuda:3", 2, NULL);
    cr_assert(gt_log_has("near=cuda:3: tcp rail 0 leaves by 127.0.0.1 (lo, nearest of 1)"), "%s",
              gt_log_text());
    cr_assert(gt_log_has("tcp rail 1 leaves by 127.0.0.1"), "%s", gt_log_text());
    read_check(&w, rs);
    railwire_railset_close(rs);

    /* An explicit local address wins. */
    static const char *const local[] = {"127.0.0.1"};
    gt_log_capture();
    rs = connect_near(&w, "cuda:3", 1, local);
    cr_assert(gt_log_has("near=cuda:3 ignored: the explicit local_addrs list wins"), "%s",
              gt_log_text());
    cr_assert(!gt_log_has("leaves by"), "%s", gt_log_text());
    read_check(&w, rs);
    railwire_railset_close(rs);
    world_down(&w);
    unsetenv("RAILWIRE_HWLOC_XML");
}

Test(gpu_near, tcp_unknown_interfaces_keep_the_usual_address)
{
    static struct world w;
    world_up(&w);
    setenv("RAILWIRE_HWLOC_XML", TOPO_DIR "host2s.xml", 1);
    gt_log_capture();
    railwire_railset *rs = connect_near(&w, "numa:1", 2, NULL);
    cr_assert(gt_log_has("knows none of this host's"), "%s", gt_log_text());
    read_check(&w, rs);
    railwire_railset_close(rs);
    world_down(&w);
    unsetenv("RAILWIRE_HWLOC_XML");
}

/* near=auto: rails placed near the current CUDA device at connect; the
 * first registration says whether its memory is there. */
Test(gpu_near, auto_first_registration_logs_a_mismatch)
{
    static struct world w;
    world_up(&w);
    standin_server8(3);
    setenv("RAILWIRE_HWLOC_XML", w.xml, 1);
    gt_log_capture();
    railwire_railset *rs = connect_near(&w, "auto", 1, NULL);
    cr_assert(gt_log_has("near=auto: tcp rail 0 leaves by 127.0.0.1 (lo"), "%s", gt_log_text());
    const struct rw_cuda *cu;
    cr_assert_eq(rw_cuda_get(&cu), 0);
    cr_assert_eq(rw_cuda_use_device(5), 0);
    CUdeviceptr d;
    cr_assert_eq(cu->MemAlloc(&d, 1 << 16), 0);
    railwire_mem m;
    railwire_mem_init(&m);
    m.kind = RAILWIRE_MEM_CUDA;
    m.addr = (void *)(uintptr_t)d;
    m.len = 1 << 16;
    railwire_mr *mr, *mr2;
    gt_log_capture();
    cr_assert_eq(railwire_mr_register_mem(rs, &m, &mr), 0, "%s", gt_log_text());
    cr_assert(gt_log_has("near=auto placed the rails near cuda:3 at connect, but the first "
                         "registered memory is on cuda:5"), "%s", gt_log_text());
    gt_log_capture();
    cr_assert_eq(railwire_mr_register_mem(rs, &m, &mr2), 0);
    cr_assert(!gt_log_has("near=auto"), "only the first registration is checked");
    cr_assert_eq(railwire_mr_deregister(mr2), 0);
    cr_assert_eq(railwire_mr_deregister(mr), 0);
    railwire_railset_close(rs);
    cu->MemFree(d);
    world_down(&w);
    unsetenv("RAILWIRE_HWLOC_XML");
}
