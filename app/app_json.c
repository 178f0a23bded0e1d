/* JSON files for the CLI; see app_json.h for why strings are measured. */
#include "app_json.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "app_util.h"

/* One string literal of the raw text, in document order. */
typedef struct app_json_lit {
    size_t len;   /* decoded length in bytes */
    int has_nul;  /* holds a \u0000 escape */
} app_json_lit;

static int app_json_read(const char *path, char **out, size_t *out_len,
                         char *err, size_t err_len)
{
    FILE *f = fopen(path, "rb");
    size_t cap = 1 << 16, n = 0;
    char *buf = NULL, *grown;

    if (f == NULL) {
        snprintf(err, err_len, "cannot open: %s", strerror(errno));
        return -1;
    }
    for (;;) {
        if (buf == NULL || n + 1 >= cap) {
            cap = buf == NULL ? cap : cap * 2;
            if ((grown = realloc(buf, cap)) == NULL)
                break;
            buf = grown;
        }
        size_t got = fread(buf + n, 1, cap - n - 1, f);
        n += got;
        if (got == 0)
            break;
    }
    if (buf == NULL || ferror(f) || n + 1 >= cap) {
        snprintf(err, err_len, "cannot read: %s",
                 ferror(f) ? strerror(errno) : "out of memory");
        fclose(f);
        free(buf);
        return -1;
    }
    fclose(f);
    buf[n] = '\0';
    *out = buf;
    *out_len = n;
    return 0;
}

/* Returns: the value of 4 hex digits at s[i], or -1. */
static long app_json_hex4(const char *s, size_t n, size_t i)
{
    long v = 0;

    if (i + 4 > n)
        return -1;
    for (size_t k = i; k < i + 4; k++) {
        char c = s[k];
        int d = c >= '0' && c <= '9' ? c - '0'
              : c >= 'a' && c <= 'f' ? c - 'a' + 10
              : c >= 'A' && c <= 'F' ? c - 'A' + 10 : -1;
        if (d < 0)
            return -1;
        v = v * 16 + d;
    }
    return v;
}

/* Measures the \u escape at s[i] as cJSON decodes it (UTF-8, surrogate
 * pairs joined).  Returns: the number of characters it takes. */
static size_t app_json_measure_u(const char *s, size_t n, size_t i, app_json_lit *lit)
{
    long cp = app_json_hex4(s, n, i + 2), lo = -1;

    if (cp < 0)
        return 2;  // cJSON rejects it, so the length does not matter
    if (cp >= 0xD800 && cp <= 0xDBFF) {
        if (i + 8 < n && s[i + 6] == '\\' && s[i + 7] == 'u')
            lo = app_json_hex4(s, n, i + 8);
        if (lo >= 0xDC00 && lo <= 0xDFFF) {
            lit->len += 4;
            return 12;
        }
    }
    lit->len += cp < 0x80 ? 1 : cp < 0x800 ? 2 : 3;
    if (cp == 0)
        lit->has_nul = 1;
    return 6;
}

/* Measures the literal whose opening quote is s[*pos]; moves *pos past its
 * closing quote.  A quote outside a literal always opens one in JSON. */
static void app_json_measure(const char *s, size_t n, size_t *pos, app_json_lit *lit)
{
    size_t i = *pos + 1;

    lit->len = 0;
    lit->has_nul = 0;
    while (i < n && s[i] != '"') {
        if (s[i] != '\\') {
            lit->len++;
            i++;
        } else if (i + 1 < n && s[i + 1] == 'u') {
            i += app_json_measure_u(s, n, i, lit);
        } else {
            lit->len++;
            i += 2;
        }
    }
    *pos = i + 1;
}

static int app_json_scan(app_json_lit **out, size_t *count, const char *s, size_t n)
{
    app_json_lit *lits = NULL, *grown;
    size_t cap = 0, k = 0;

    for (size_t i = 0; i < n;) {
        if (s[i] != '"') {
            i++;
            continue;
        }
        if (k == cap) {
            cap = cap ? cap * 2 : 256;
            if ((grown = realloc(lits, cap * sizeof *lits)) == NULL) {
                free(lits);
                return -1;
            }
            lits = grown;
        }
        app_json_measure(s, n, &i, &lits[k++]);
    }
    *out = lits;
    *count = k;
    return 0;
}

static int app_json_add_nul(psi_app_json *j, const cJSON *item, size_t len)
{
    psi_app_json_nul *grown = realloc(j->nul, (j->n_nul + 1) * sizeof *grown);

    if (grown == NULL)
        return -3;
    j->nul = grown;
    j->nul[j->n_nul].item = item;
    j->nul[j->n_nul].len = len;
    j->n_nul++;
    return 0;
}

/* Pairs the literals with the cJSON strings in document order (an object
 * member's key comes before its value).  Returns: 0; -1 if they disagree,
 * -2 for a key holding U+0000, -3 out of memory. */
static int app_json_walk(psi_app_json *j, const cJSON *item, int member,
                         const app_json_lit *lits, size_t n, size_t *idx)
{
    if (member) {
        if (*idx >= n)
            return -1;
        if (lits[*idx].has_nul)
            return -2;
        if (strlen(item->string) != lits[(*idx)++].len)
            return -1;
    }
    if (cJSON_IsString(item)) {
        if (*idx >= n)
            return -1;
        const app_json_lit *lit = &lits[(*idx)++];
        if (!lit->has_nul)
            return strlen(item->valuestring) == lit->len ? 0 : -1;
        if (item->valuestring[lit->len] != '\0')
            return -1;
        return app_json_add_nul(j, item, lit->len);
    }
    for (const cJSON *c = item->child; c != NULL; c = c->next) {
        int rc = app_json_walk(j, c, cJSON_IsObject(item), lits, n, idx);
        if (rc != 0)
            return rc;
    }
    return 0;
}

static void app_json_where(char *err, size_t err_len, const char *what,
                           const char *buf, size_t len, const char *at)
{
    size_t line = 1, col = 1;

    if (at == NULL || at < buf || at > buf + len)
        at = buf;
    for (const char *p = buf; p < at; p++) {
        col = *p == '\n' ? 1 : col + 1;
        line += *p == '\n';
    }
    snprintf(err, err_len, "%s at line %zu, column %zu", what, line, col);
}

static int app_json_parse(psi_app_json *j, const char *buf, size_t len,
                          char *err, size_t err_len)
{
    const char *end = NULL;

    j->root = cJSON_ParseWithLengthOpts(buf, len, &end, 0);
    if (j->root == NULL) {
        app_json_where(err, err_len, "not valid JSON: syntax error", buf, len,
                       cJSON_GetErrorPtr());
        return -1;
    }
    while (end < buf + len && (*end == ' ' || *end == '\t' || *end == '\n' ||
                               *end == '\r'))
        end++;
    if (end != buf + len) {
        app_json_where(err, err_len, "not valid JSON: text after the value",
                       buf, len, end);
        return -1;
    }
    return 0;
}

static int app_json_measure_all(psi_app_json *j, const char *buf, size_t len,
                                char *err, size_t err_len)
{
    app_json_lit *lits = NULL;
    size_t n = 0, idx = 0;
    int rc;

    if (app_json_scan(&lits, &n, buf, len) != 0) {
        snprintf(err, err_len, "out of memory");
        return -1;
    }
    rc = app_json_walk(j, j->root, 0, lits, n, &idx);
    if (rc == 0 && idx != n)
        rc = -1;
    free(lits);
    if (rc != 0)
        snprintf(err, err_len, "%s", rc == -2 ? "an object key holds U+0000"
                 : rc == -3 ? "out of memory"
                 : "internal error: string literals do not match the parse");
    return rc == 0 ? 0 : -1;
}

int psi_app_json_load(psi_app_json *j, const char *path, char *err, size_t err_len)
{
    char *buf = NULL;
    size_t len = 0;
    int rc;

    memset(j, 0, sizeof *j);
    if (app_json_read(path, &buf, &len, err, err_len) != 0)
        return -1;
    rc = app_json_parse(j, buf, len, err, err_len);
    if (rc == 0)
        rc = app_json_measure_all(j, buf, len, err, err_len);
    free(buf);
    return rc;
}

void psi_app_json_free(psi_app_json *j)
{
    cJSON_Delete(j->root);
    free(j->nul);
    memset(j, 0, sizeof *j);
}

void psi_app_json_bytes(const psi_app_json *j, const cJSON *item,
                        const char **data, size_t *len)
{
    *data = item->valuestring;
    for (size_t i = 0; i < j->n_nul; i++) {
        if (j->nul[i].item == item) {
            *len = j->nul[i].len;
            return;
        }
    }
    *len = strlen(item->valuestring);
}
