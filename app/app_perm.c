/* The association permutation file (app_perm.h). */
#include <stdlib.h>
#include <string.h>

#include "app_perm.h"
#include "app_util.h"

void psi_app_perm_parse_init(psi_app_perm_parse *p, uint64_t n)
{
    memset(p, 0, sizeof *p);
    p->n = n;
}

/* The row of the line just ended.  Returns: a status. */
static int perm_parse_row(psi_app_perm_parse *p, psi_app_perm_row_fn row, void *arg)
{
    int st;

    if (p->digits == 0)
        return PSI_APP_PERM_SYNTAX;
    if (p->line >= p->n)
        return PSI_APP_PERM_EXTRA;
    if (p->v >= p->n)
        return PSI_APP_PERM_RANGE;
    if ((st = row(arg, p->line, p->v)) != PSI_APP_PERM_OK)
        return st;
    p->line++;
    p->v = 0;
    p->digits = 0;
    return PSI_APP_PERM_OK;
}

int psi_app_perm_parse_feed(psi_app_perm_parse *p, const uint8_t *buf, size_t len,
                            psi_app_perm_row_fn row, void *arg)
{
    for (size_t i = 0; i < len && p->st == PSI_APP_PERM_OK; i++) {
        uint8_t c = buf[i];
        if (c >= '0' && c <= '9') {
            unsigned d = (unsigned)(c - '0');
            // v * 10 + d must stay below 2^64: "18446744073709551616" once
            // wrapped to row 0.
            if (p->v > (UINT64_MAX - d) / 10)
                p->st = PSI_APP_PERM_SYNTAX;
            p->v = p->v * 10 + d;
            p->digits = 1;
        } else if (c == '\n') {
            p->st = perm_parse_row(p, row, arg);
        } else {
            p->st = PSI_APP_PERM_SYNTAX;
        }
    }
    return p->st;
}

int psi_app_perm_parse_end(psi_app_perm_parse *p, psi_app_perm_row_fn row, void *arg)
{
    // The last row may end the file instead of a line end.
    if (p->st == PSI_APP_PERM_OK && p->digits > 0)
        p->st = perm_parse_row(p, row, arg);
    if (p->st == PSI_APP_PERM_OK && p->line != p->n)
        p->st = PSI_APP_PERM_SHORT;
    return p->st;
}

/* psi_app_perm_decode's rows: each row once, stored at its line. */
typedef struct perm_table {
    size_t *perm;
    uint8_t *seen;
} perm_table;

static int perm_table_row(void *arg, uint64_t line, uint64_t row)
{
    perm_table *t = arg;

    if (t->seen[row])
        return PSI_APP_PERM_TWICE;
    t->seen[row] = 1;
    t->perm[line] = (size_t)row;
    return PSI_APP_PERM_OK;
}

int psi_app_perm_decode(size_t *perm, size_t *line, const uint8_t *buf, size_t len, size_t n)
{
    perm_table t = {perm, psi_app_alloc(n, 1)};
    psi_app_perm_parse p;
    int st;

    *line = 0;
    if (t.seen == NULL)
        return PSI_APP_PERM_NOMEM;
    memset(t.seen, 0, n);
    psi_app_perm_parse_init(&p, n);
    if (len > 0)
        psi_app_perm_parse_feed(&p, buf, len, perm_table_row, &t);
    st = psi_app_perm_parse_end(&p, perm_table_row, &t);
    *line = (size_t)p.line;
    free(t.seen);
    return st;
}

int psi_app_perm_write(void *arg, const size_t *index, size_t n)
{
    psi_app_perm_writer *w = arg;
    for (size_t i = 0; i < n && !w->failed; i++)
        w->failed = fprintf(w->f, "%zu\n", index[i]) < 0;
    return w->failed;
}
