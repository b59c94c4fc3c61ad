/* SPDX-License-Identifier: MIT */
/* Writes the seed corpora of the fuzz harnesses from the wire vectors file:
 *   fuzz_seeds OUTDIR [VECTORS]
 * creates OUTDIR/<harness>/ with one file per vector (in the harness's
 * input format: see each harness's header comment). */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "golden/support/vectors.h"

static int write_seed(const char *dir, const char *harness, const char *name, const uint8_t *head,
                      size_t nhead, const uint8_t *body, size_t nbody, const uint8_t *tail,
                      size_t ntail)
{
    char path[4096];
    FILE *f;

    snprintf(path, sizeof(path), "%s/%s", dir, harness);
    if (mkdir(path, 0755) && errno != EEXIST) {
        perror(path);
        return -1;
    }
    snprintf(path, sizeof(path), "%s/%s/%s", dir, harness, name);
    f = fopen(path, "wb");
    if (!f) {
        perror(path);
        return -1;
    }
    if ((nhead && fwrite(head, 1, nhead, f) != nhead) || (nbody && fwrite(body, 1, nbody, f) != nbody) ||
        (ntail && fwrite(tail, 1, ntail, f) != ntail)) {
        fclose(f);
        return -1;
    }
    return fclose(f);
}

int main(int argc, char **argv)
{
    struct tv_vector *v;
    size_t n, count = 0;
    char why[256], name[64];
    int rc = 0;

    if (argc < 2) {
        fprintf(stderr, "usage: fuzz_seeds OUTDIR [VECTORS]\n");
        return 2;
    }
    if (mkdir(argv[1], 0755) && errno != EEXIST) {
        perror(argv[1]);
        return 1;
    }
    if (tv_load(argc > 2 ? argv[2] : tv_path(), &v, &n, why, sizeof(why))) {
        fprintf(stderr, "fuzz_seeds: %s\n", why);
        return 1;
    }
    for (size_t i = 0; i < n && !rc; i++) {
        const struct tv_vector *t = &v[i];
        uint8_t want = (uint8_t)t->want;
        static const uint8_t ok_ack[] = {0}, bad_ack[] = {1};
        snprintf(name, sizeof(name), "line%03d", t->line);
        switch (t->kind) {
        case TV_RO_SERVER:
        case TV_RW_SERVER: {
            uint8_t d = t->kind == TV_RW_SERVER;
            rc |= write_seed(argv[1], d ? "fuzz_rw_reply" : "fuzz_ro_reply", name, &want, 1,
                             t->bytes, t->len, NULL, 0);
            for (uint8_t seed = 0; seed < 8 && !rc; seed += 3) {
                uint8_t head[3] = {d, want, seed};
                char sname[80];
                snprintf(sname, sizeof(sname), "%s-chunk%u", name, seed);
                rc |= write_seed(argv[1], "fuzz_hs_client", sname, head, 3, t->bytes, t->len,
                                 seed == 3 ? bad_ack : ok_ack, t->ok ? 1 : 0);
            }
            break;
        }
        case TV_CLIENT:
            rc |= write_seed(argv[1], "fuzz_client", name, &want, 1, t->bytes, t->len, NULL, 0);
            for (uint8_t flags = 0; flags < 8 && !rc; flags++) {
                uint8_t head[2] = {(uint8_t)(flags | (t->line & 3) << 3), (uint8_t)(flags * 37)};
                char sname[80];
                if (!(flags & 1) && (t->want == 0 || t->want > 8))
                    continue;
                snprintf(sname, sizeof(sname), "%s-flags%u", name, flags);
                rc |= write_seed(argv[1], "fuzz_hs_server", sname, head, 2, t->bytes, t->len, NULL, 0);
            }
            break;
        case TV_ACK:
            rc |= write_seed(argv[1], "fuzz_ack", name, NULL, 0, t->bytes, t->len, NULL, 0);
            break;
        }
        count++;
    }
    tv_free_all(v, n);
    if (rc) {
        fprintf(stderr, "fuzz_seeds: writing under %s failed\n", argv[1]);
        return 1;
    }
    printf("fuzz_seeds: %zu vectors written under %s\n", count, argv[1]);
    return 0;
}
