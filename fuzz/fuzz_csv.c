/* Fuzzes the CSV reader of the commands' --column input (app/app_input_csv.c,
 * RFC 4180): the first byte picks the column name, the rest is the file,
 * read from offset 0 as psi_app_input_read does after its byte order mark.
 * On success every value and record lies inside the input (or a value in
 * the unescaped copies), records are in input order without overlap, a
 * value is never longer than its record and never holds a line break
 * unless its record is quoted, and there are no more records than lines;
 * on failure there is a message. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "app_input.h"
#include "app_input_priv.h"

static void csv_fail(const char *what)
{
    fprintf(stderr, "fuzz_csv: %s\n", what);
    abort();
}

static int inside(const uint8_t *p, size_t len, const uint8_t *base, size_t base_len)
{
    return base != NULL && p >= base && len <= base_len && (size_t)(p - base) <= base_len - len;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static const char *const columns[] = {"a", "b", "id", "x y", "", "\"q\"", "email"};
    if (size < 1)
        return 0;
    char err[512];
    input_ctx c = {"fuzz.csv", err, sizeof err};
    psi_app_input in;
    memset(&in, 0, sizeof in);
    in.data_len = size - 1;
    in.data = malloc(in.data_len + 1);
    if (in.data == NULL)
        return 0;
    memcpy(in.data, data + 1, in.data_len);
    err[0] = '\0';
    int rc = app_input_csv(&c, &in, 0, columns[data[0] % (sizeof columns / sizeof columns[0])]);
    if (rc != PSI_APP_INPUT_OK) {
        if (rc != PSI_APP_INPUT_ECSV && rc != PSI_APP_INPUT_ENOMEM)
            csv_fail("an error code the reader does not document");
        if (err[0] == '\0')
            csv_fail("an error without a message");
        psi_app_input_free(&in);
        return 0;
    }
    if (in.records == NULL)
        csv_fail("CSV mode without records");
    if (in.header.off > in.data_len || in.header.len > in.data_len - in.header.off)
        csv_fail("header outside the input");
    size_t lines = app_input_count_lines(in.data, in.data + in.data_len);
    if (in.n + 1 > lines)
        csv_fail("more records than lines after the header");
    size_t prev_end = in.header.off + in.header.len;
    for (size_t i = 0; i < in.n; i++) {
        psi_app_span r = in.records[i];
        if (r.off > in.data_len || r.len > in.data_len - r.off)
            csv_fail("record outside the input");
        if (r.off < prev_end)
            csv_fail("records overlap or out of order");
        prev_end = r.off + r.len;
        const psi_value *v = &in.values[i];
        if (v->len > 0 && !inside(v->data, v->len, in.data + r.off, r.len) &&
            !inside(v->data, v->len, in.extra, in.extra_len))
            csv_fail("value outside its record and the unescaped copies");
        if (v->len > r.len)
            csv_fail("value longer than its record");
        if (memchr(in.data + r.off, '"', r.len) == NULL && v->len > 0 &&
            (memchr(v->data, '\n', v->len) != NULL || memchr(v->data, '\r', v->len) != NULL))
            csv_fail("a line break in a value of an unquoted record");
    }
    psi_app_input_free(&in);
    return 0;
}
