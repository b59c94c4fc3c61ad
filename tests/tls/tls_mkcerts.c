/* SPDX-License-Identifier: MIT */
/* Makes the test certificates of tls_certs.h in a fresh temporary
 * directory and prints its path, for the Python end-to-end tests (Debian
 * 12's `openssl` cannot make a certificate valid only from tomorrow).
 * The caller removes the directory.  Exit status 0, or 1 on failure. */
#include <stdio.h>

#include "tls_certs.h"

int main(void)
{
    char dir[256];
    if (tls_certs_make(dir, sizeof(dir)) < 0) {
        fprintf(stderr, "tls_mkcerts: cannot make the test certificates\n");
        return 1;
    }
    printf("%s\n", dir);
    return 0;
}
