/* SPDX-License-Identifier: MIT */
/* railwire_mr_register_mem on a tcp railset over loopback: host
 * descriptors take the host path (counted per rail), CUDA memory with no
 * driver fails naming what was looked for, and a driver whose calls fail
 * gives the driver's error. */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <railwire.h>

#include "gpu/cuda_driver.h"
#include "gtest.h"

TestSuite(gpu_register_mem, .timeout = 120);

struct world {
    railwire_server *s;
    railwire_railset *rs;
    unsigned char arena[64 * 1024];
};

static void world_up(struct world *w, unsigned rails)
{
    railwire_server_opts so;
    railwire_server_opts_init(&so);
    so.dialect = RAILWIRE_DIALECT_RW;
    so.transport = RAILWIRE_TRANSPORT_TCP;
    so.listen_host = "127.0.0.1";
    so.arena = (railwire_region){w->arena, sizeof(w->arena)};
    cr_assert_eq(railwire_server_create(&so, &w->s), 0);
    char port[16];
    snprintf(port, sizeof(port), "%u", railwire_server_port(w->s));
    railwire_railset_opts o;
    railwire_railset_opts_init(&o);
    o.dialect = RAILWIRE_DIALECT_RW;
    o.transport = RAILWIRE_TRANSPORT_TCP;
    o.n_rails = rails;
    o.connect_timeout_ms = 3000;
    o.io_timeout_ms = 3000;
    cr_assert_eq(railwire_railset_connect("127.0.0.1", port, &o, &w->rs), 0);
}

static void world_down(struct world *w)
{
    railwire_railset_close(w->rs);
    railwire_server_destroy(w->s);
}

Test(gpu_register_mem, host_descriptor_takes_the_host_path)
{
    static struct world w;
    unsigned char buf[4096];
    railwire_mem m;
    railwire_mr *mr;
    world_up(&w, 2);
    railwire_mem_init(&m);
    m.addr = buf;
    m.len = sizeof(buf);
    cr_assert_eq(railwire_mr_register_mem(w.rs, &m, &mr), 0);
    railwire_rail_stats st[2];
    cr_assert_eq(railwire_railset_stats(w.rs, st, 2, sizeof(st[0])), 2);
    for (int i = 0; i < 2; i++) {
        cr_assert_eq(st[i].regs_host, 1);
        cr_assert_eq(st[i].regs_staged + st[i].regs_dmabuf + st[i].regs_peermem, 0);
    }
    memset(buf, 0x3c, sizeof(buf));
    cr_assert_eq(railwire_write(w.rs, mr, buf, sizeof(buf), 0, 100, 3000), 0);
    cr_assert_eq(w.arena[100], 0x3c);
    cr_assert_eq(w.arena[100 + sizeof(buf) - 1], 0x3c);
    cr_assert_eq(rw_cuda_loaded(), 0, "host memory must not load the driver");
    cr_assert_eq(railwire_mr_deregister(mr), 0);
    cr_assert_eq(railwire_mr_register_mem(w.rs, NULL, &mr), RAILWIRE_E_INVALID);
    world_down(&w);
}

Test(gpu_register_mem, cuda_without_a_driver_names_what_was_looked_for)
{
    static struct world w;
    railwire_mem m;
    railwire_mr *mr = NULL;
    setenv("RAILWIRE_CUDA_LIBRARY", "/nonexistent/libcuda-test.so.1", 1);
    world_up(&w, 1);
    railwire_mem_init(&m);
    m.kind = RAILWIRE_MEM_CUDA;
    m.addr = (void *)(uintptr_t)0x7f0000001000ull;
    m.len = 4096;
    gt_log_capture();
    cr_assert_eq(railwire_mr_register_mem(w.rs, &m, &mr), RAILWIRE_E_NO_DEVICE);
    cr_assert_null(mr);
    cr_assert(gt_log_has("/nonexistent/libcuda-test.so.1"), "%s", gt_log_text());
    world_down(&w);
}

Test(gpu_register_mem, a_failing_driver_gives_its_error)
{
    static struct world w;
    const struct rw_cuda *cu;
    CUdeviceptr d;
    railwire_mem m;
    railwire_mr *mr = NULL;
    gt_use_standin();
    cr_assert_eq(rw_cuda_get(&cu), 0);
    cr_assert_eq(rw_cuda_use_device(0), 0);
    cr_assert_eq(cu->MemAlloc(&d, 8192), 0);
    world_up(&w, 1);
    railwire_mem_init(&m);
    m.kind = RAILWIRE_MEM_CUDA;
    m.addr = (void *)(uintptr_t)d;
    m.len = 8192;
    setenv("RAILWIRE_STANDIN_FAIL", "cuPointerGetAttribute", 1);
    gt_log_capture();
    cr_assert_lt(railwire_mr_register_mem(w.rs, &m, &mr), 0);
    cr_assert_null(mr);
    cr_assert(gt_log_has("cuPointerGetAttribute"), "%s", gt_log_text());
    unsetenv("RAILWIRE_STANDIN_FAIL");
    world_down(&w);
    cu->MemFree(d);
}
