/* SPDX-License-Identifier: MIT */
#include "rsetup.h"

#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/time.h"
#include "vtest.h"

void rt_up(struct rt_env *e, enum railwire_dialect dialect, unsigned n_rails, size_t mem_len,
           unsigned n_layers, int op_timeout_ms)
{
    char devs_b[8][64];
    const char *bptr[8];
    railwire_region layers[8];
    railwire_server_opts so;
    railwire_railset_opts ro;
    char port[16];
    int rc;

    memset(e, 0, sizeof(*e));
    size_t nb = vt_devs('B', devs_b, 8);
    size_t na = vt_devs('A', e->devs_a, 8);
    cr_assert(na > 0 && nb > 0);
    e->mem_len = mem_len;
    e->mem = aligned_alloc(4096, mem_len);
    cr_assert(e->mem);
    vt_pattern(e->mem, mem_len, 1234);

    railwire_server_opts_init(&so);
    so.dialect = dialect;
    so.transport = RAILWIRE_TRANSPORT_VERBS;
    so.listen_host = "127.0.0.1";
    so.listen_port = "0";
    for (size_t i = 0; i < nb; i++)
        bptr[i] = devs_b[i];
    so.devices = bptr;
    so.n_devices = (unsigned)nb;
    so.gid_index = vt_gid_index();
    if (dialect == RAILWIRE_DIALECT_RO) {
        cr_assert(n_layers >= 1 && n_layers <= 8 && mem_len % n_layers == 0);
        for (unsigned l = 0; l < n_layers; l++)
            layers[l] = (railwire_region){e->mem + l * (mem_len / n_layers), mem_len / n_layers};
        so.layers = layers;
        so.n_layers = n_layers;
        e->n_layers = n_layers;
    } else {
        so.arena = (railwire_region){e->mem, mem_len};
        e->n_layers = 1;
    }
    rc = railwire_server_create(&so, &e->srv);
    cr_assert_eq(rc, 0, "server_create: %s", railwire_strerror(rc));
    snprintf(port, sizeof(port), "%u", railwire_server_port(e->srv));

    railwire_railset_opts_init(&ro);
    ro.dialect = dialect;
    ro.transport = RAILWIRE_TRANSPORT_VERBS;
    ro.n_rails = n_rails;
    for (unsigned i = 0; i < n_rails; i++)
        e->dev_ptrs[i] = e->devs_a[i % na];
    ro.devices = e->dev_ptrs;
    ro.n_devices = n_rails;
    ro.gid_index = vt_gid_index();
    if (op_timeout_ms)
        ro.op_timeout_ms = op_timeout_ms;
    rc = railwire_railset_connect("127.0.0.1", port, &ro, &e->rs);
    cr_assert_eq(rc, 0, "railset_connect(%u rails): %s", n_rails, railwire_strerror(rc));
    cr_assert_eq(railwire_railset_rail_count(e->rs), n_rails);
    cr_assert_str_eq(railwire_railset_transport(e->rs), "verbs");
}

void rt_down(struct rt_env *e)
{
    railwire_railset_close(e->rs);
    railwire_server_destroy(e->srv);
    free(e->mem);
    memset(e, 0, sizeof(*e));
}

void rt_wait_all(struct rt_env *e, const railwire_handle *hs, int *st, size_t n, int timeout_ms)
{
    int64_t deadline = rw_now_ms() + timeout_ms;
    size_t done = 0;
    char *seen = calloc(n, 1);
    railwire_completion c[16];

    cr_assert(seen);
    while (done < n) {
        int left = rw_ms_left(deadline);
        cr_assert(left > 0, "only %zu of %zu transfers completed in %d ms", done, n, timeout_ms);
        int k = railwire_wait(e->rs, c, 16, left < 1000 ? left : 1000);
        if (k == RAILWIRE_E_TIMEOUT)
            continue;
        cr_assert(k >= 0, "railwire_wait: %s", railwire_strerror(k));
        for (int j = 0; j < k; j++) {
            size_t idx = n;
            for (size_t q = 0; q < n; q++)
                if (hs[q] == c[j].handle)
                    idx = q;
            cr_assert(idx < n, "completion for an unknown handle");
            cr_assert(!seen[idx], "transfer %zu completed twice", idx);
            seen[idx] = 1;
            st[idx] = c[j].status;
            done++;
        }
    }
    free(seen);
}
