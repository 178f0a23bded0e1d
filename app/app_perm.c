/* The association permutation file (app_perm.h). */
#include <stdlib.h>
#include <string.h>

#include "app_perm.h"
#include "app_util.h"

int psi_app_perm_decode(size_t *perm, size_t *line, const uint8_t *buf, size_t len, size_t n)
{
    size_t pos = 0, l = 0;
    uint8_t *seen = psi_app_alloc(n, 1);
    int st = PSI_APP_PERM_OK;

    *line = 0;
    if (seen == NULL)
        return PSI_APP_PERM_NOMEM;
    memset(seen, 0, n);
    while (pos < len) {
        uint64_t v = 0;
        size_t start = pos;

        // v * 10 + d must stay below 2^64: "18446744073709551616" once
        // wrapped to row 0.
        while (pos < len && buf[pos] >= '0' && buf[pos] <= '9') {
            unsigned d = (unsigned)(buf[pos] - '0');
            if (v > (UINT64_MAX - d) / 10) {
                st = PSI_APP_PERM_SYNTAX;
                goto done;
            }
            v = v * 10 + d;
            pos++;
        }
        if (pos == start || (pos < len && buf[pos] != '\n')) {
            st = PSI_APP_PERM_SYNTAX;
            goto done;
        }
        if (l >= n) {
            st = PSI_APP_PERM_EXTRA;
            goto done;
        }
        if (v >= n) {
            st = PSI_APP_PERM_RANGE;
            goto done;
        }
        if (seen[v]) {
            st = PSI_APP_PERM_TWICE;
            goto done;
        }
        seen[v] = 1;
        perm[l++] = (size_t)v;
        pos++;  // the newline (or the end)
    }
    if (l != n)
        st = PSI_APP_PERM_SHORT;
done:
    *line = l;
    free(seen);
    return st;
}

int psi_app_perm_write(void *arg, const size_t *index, size_t n)
{
    psi_app_perm_writer *w = arg;
    for (size_t i = 0; i < n && !w->failed; i++)
        w->failed = fprintf(w->f, "%zu\n", index[i]) < 0;
    return w->failed;
}
