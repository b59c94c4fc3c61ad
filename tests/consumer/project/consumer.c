/* SPDX-License-Identifier: MIT */
/* An outside program using only the installed public API: it starts an RW
 * server on loopback, connects a 2-rail railset over tcp, writes a pattern
 * and reads it back. */
#include <railwire.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define ARENA (4u << 20)

int main(void)
{
    railwire_server_opts so;
    railwire_railset_opts ro;
    railwire_server *srv = NULL;
    railwire_railset *rs = NULL;
    railwire_mr *mr = NULL;
    char port[16];
    int rc = 1, err;
    unsigned char *arena = calloc(1, ARENA), *buf = malloc(2 * ARENA);

    if (!arena || !buf)
        goto out;
    railwire_server_opts_init(&so);
    so.dialect = RAILWIRE_DIALECT_RW;
    so.transport = RAILWIRE_TRANSPORT_TCP;
    so.listen_host = "127.0.0.1";
    so.arena.addr = arena;
    so.arena.len = ARENA;
    if ((err = railwire_server_create(&so, &srv)) < 0) {
        fprintf(stderr, "server: %s\n", railwire_strerror(err));
        goto out;
    }
    snprintf(port, sizeof(port), "%u", railwire_server_port(srv));

    railwire_railset_opts_init(&ro);
    ro.dialect = RAILWIRE_DIALECT_RW;
    ro.transport = RAILWIRE_TRANSPORT_TCP;
    ro.n_rails = 2;
    if ((err = railwire_railset_connect("127.0.0.1", port, &ro, &rs)) < 0) {
        fprintf(stderr, "connect: %s\n", railwire_strerror(err));
        goto out;
    }
    if ((err = railwire_mr_register(rs, buf, 2 * ARENA, &mr)) < 0)
        goto fail;
    for (size_t i = 0; i < ARENA; i++)
        buf[i] = (unsigned char)(i * 7 + 3);
    if ((err = railwire_write(rs, mr, buf, ARENA, 0, 0, 10000)) < 0)
        goto fail;
    if ((err = railwire_read(rs, mr, buf + ARENA, ARENA, 0, 0, 10000)) < 0)
        goto fail;
    if (memcmp(buf, buf + ARENA, ARENA) != 0 || memcmp(buf, arena, ARENA) != 0) {
        fprintf(stderr, "data mismatch\n");
        goto out;
    }
    printf("consumer: wrote and read back %u bytes over %u rails (%s)\n", ARENA,
           railwire_railset_rail_count(rs), railwire_railset_transport(rs));
    rc = 0;
    goto out;
fail:
    fprintf(stderr, "transfer: %s: %s\n", railwire_error_class(err), railwire_strerror(err));
out:
    if (mr)
        railwire_mr_deregister(mr);
    railwire_railset_close(rs);
    railwire_server_destroy(srv);
    free(buf);
    free(arena);
    return rc;
}
