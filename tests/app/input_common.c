/* See input_common.h. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmocka.h>

#include "app_input.h"
#include "app_output.h"
#include "input_common.h"

/* The scratch directory of this run (group setup and teardown). */
char scratch[SCRATCH_LEN];

/* Returns: scratch/name in a static buffer (one of four, so a few may be
 * live at once). */
const char *tpath(const char *name)
{
    static char bufs[4][512];
    static unsigned k;
    char *b = bufs[k++ % 4];

    snprintf(b, sizeof bufs[0], "%s/%s", scratch, name);
    return b;
}

/* Writes len bytes to scratch/name.  Returns: its path. */
const char *put_file(const char *name, const void *bytes, size_t len)
{
    const char *path = tpath(name);
    FILE *f = fopen(path, "wb");

    assert_non_null(f);
    if (len > 0)
        assert_int_equal(fwrite(bytes, 1, len, f), len);
    assert_int_equal(fclose(f), 0);
    return path;
}

/* Returns: the number of entries of scratch whose name starts with prefix. */
int count_entries(const char *prefix)
{
    DIR *dir = opendir(scratch);
    struct dirent *e;
    int n = 0;

    assert_non_null(dir);
    while ((e = readdir(dir)) != NULL)
        n += strncmp(e->d_name, prefix, strlen(prefix)) == 0;
    closedir(dir);
    return n;
}

/* Fails the test, showing both, unless needle occurs in hay. */
void assert_contains(const char *hay, const char *needle)
{
    if (strstr(hay, needle) == NULL) {
        print_error("\"%s\" does not contain \"%s\"\n", hay, needle);
        fail();
    }
}

/* Reads len bytes as a file in the given mode (column NULL: --lines); the
 * read must succeed. */
/* Reading in chunks (psi_app_input_stream) must give what the whole read
 * gave: the same values in order, or the same error and message, for
 * chunks of 1, 2, 3 and 1000 values cut from blocks of 64 to 4096 bytes. */
static void stream_matches(const char *path, const char *column, int lines, int whole_rc,
                           const char *whole_err, const psi_app_input *whole)
{
    static const size_t values[] = {1, 2, 3, 1000}, blocks[] = {64, 100, 4096};
    for (size_t vi = 0; vi < sizeof values / sizeof values[0]; vi++) {
        for (size_t bi = 0; bi < sizeof blocks / sizeof blocks[0]; bi++) {
            psi_app_input_stream st;
            char err[256];
            size_t at = 0;
            int rc = psi_app_input_stream_open(&st, path, column, lines, blocks[bi],
                                               values[vi], (size_t)1 << 20, err, sizeof err);
            while (rc == PSI_APP_INPUT_OK &&
                   (rc = psi_app_input_stream_next(&st, err, sizeof err)) == PSI_APP_INPUT_OK &&
                   st.chunk.n > 0) {
                assert_true(st.chunk.n <= values[vi]);
                assert_int_equal(st.values, at);
                // Before an error the chunks hand out the values ahead of it.
                for (size_t i = 0; i < st.chunk.n && whole_rc != PSI_APP_INPUT_OK; i++)
                    at++;
                for (size_t i = 0; i < st.chunk.n && whole_rc == PSI_APP_INPUT_OK; i++, at++) {
                    assert_true(at < whole->n);
                    assert_int_equal(st.chunk.values[i].len, whole->values[at].len);
                    assert_memory_equal(st.chunk.values[i].data, whole->values[at].data,
                                        whole->values[at].len);
                }
            }
            psi_app_input_stream_close(&st);
            if (rc != whole_rc || (rc != PSI_APP_INPUT_OK && strcmp(err, whole_err) != 0)) {
                print_error("in chunks of %zu values, blocks of %zu bytes: %d \"%s\", read "
                            "whole: %d \"%s\"\n", values[vi], blocks[bi], rc, err, whole_rc,
                            whole_err);
                fail();
            }
            if (rc == PSI_APP_INPUT_OK)
                assert_int_equal(at, whole->n);
        }
    }
}

/* Reads [start, end) of path in chunks of 2 values from blocks of 64 bytes
 * (psi_app_input_stream_range), checking its values against whole's from
 * *at on.  Returns: the values read. */
static size_t range_values(const char *path, uint64_t start, uint64_t end,
                           const psi_app_input *whole, size_t at)
{
    psi_app_input_stream st;
    char err[256];
    size_t got = 0;
    int rc = psi_app_input_stream_open(&st, path, NULL, 1, 64, 2, (size_t)1 << 20, err,
                                       sizeof err);

    if (rc == PSI_APP_INPUT_OK)
        rc = psi_app_input_stream_range(&st, start, end, err, sizeof err);
    while (rc == PSI_APP_INPUT_OK &&
           (rc = psi_app_input_stream_next(&st, err, sizeof err)) == PSI_APP_INPUT_OK &&
           st.chunk.n > 0) {
        for (size_t i = 0; i < st.chunk.n; i++, got++) {
            assert_true(at + got < whole->n);
            assert_int_equal(st.chunk.values[i].len, whole->values[at + got].len);
            assert_memory_equal(st.chunk.values[i].data, whole->values[at + got].data,
                                st.chunk.values[i].len);
        }
    }
    psi_app_input_stream_close(&st);
    if (rc != PSI_APP_INPUT_OK) {
        print_error("range [%llu, %llu): %s\n", (unsigned long long)start,
                    (unsigned long long)end, err);
        fail();
    }
    return got;
}

/* A file cut into two byte ranges at the start of any line (as shardpsi-mpi
 * cuts it among ranks, PROTOCOL.md §18.1) gives, range after range, the
 * values of the whole read: the byte order mark only in the first. */
static void ranges_match(const char *path, const uint8_t *content, size_t len,
                         const psi_app_input *whole)
{
    size_t lines = 0, step, k = 0;

    for (size_t i = 0; i < len; i++)
        lines += content[i] == '\n';
    step = lines / 40 + 1; // about 40 cuts however long the file
    for (size_t cut = 0; cut <= len; cut++) {
        if (cut > 0 && content[cut - 1] != '\n' && cut != len)
            continue;
        if (k++ % step != 0 && cut != len)
            continue;
        size_t a = range_values(path, 0, cut, whole, 0);
        size_t b = range_values(path, cut, len, whole, a);
        if (a + b != whole->n) {
            print_error("cut at %zu: %zu + %zu values, whole %zu\n", cut, a, b, whole->n);
            fail();
        }
    }
}

void read_ok(psi_app_input *in, const char *content, size_t len,
                    const char *column)
{
    char err[256];
    int rc = psi_app_input_read(in, put_file("in.txt", content, len), column,
                                column == NULL, err, sizeof err);

    if (rc != PSI_APP_INPUT_OK) {
        print_error("unexpected error %d: %s\n", rc, err);
        fail();
    }
    assert_string_equal(err, "");
    stream_matches(tpath("in.txt"), column, column == NULL, rc, err, in);
    if (column == NULL)
        ranges_match(tpath("in.txt"), (const uint8_t *)content, len, in);
}

/* The input as a string read in that mode must fail with code and a
 * message containing each of the NULL-terminated substrings. */
void read_fails(const char *content, const char *column, int code, ...)
{
    psi_app_input in;
    char err[256];
    const char *sub;
    va_list ap;
    int rc = psi_app_input_read(&in, put_file("bad.csv", content, strlen(content)),
                                column, column == NULL, err, sizeof err);

    assert_int_equal(rc, code);
    stream_matches(tpath("bad.csv"), column, column == NULL, rc, err, &in);
    assert_null(in.data);
    assert_null(in.values);
    assert_int_equal(in.n, 0);
    assert_non_null(strchr(err, ':'));
    assert_null(strchr(err, '\n'));
    assert_contains(err, tpath("bad.csv"));
    va_start(ap, code);
    while ((sub = va_arg(ap, const char *)) != NULL)
        assert_contains(err, sub);
    va_end(ap);
    psi_app_input_free(&in);
}

/* Value i must be the n bytes `want`. */
void assert_value(const psi_app_input *in, size_t i, const void *want, size_t n)
{
    assert_true(i < in->n);
    if (in->values[i].len != n || memcmp(in->values[i].data, want, n) != 0) {
        print_error("value %zu: \"%.*s\" (%zu bytes), wanted \"%.*s\" (%zu)\n", i,
                    (int)in->values[i].len, (const char *)in->values[i].data,
                    in->values[i].len, (int)n, (const char *)want, n);
        fail();
    }
}

/* The values must be the NUL-terminated strings of want, n of them. */
void assert_values(const psi_app_input *in, const char *const *want, size_t n)
{
    size_t i;

    assert_int_equal(in->n, n);
    for (i = 0; i < n; i++)
        assert_value(in, i, want[i], strlen(want[i]));
}

/* Returns: 1 if value i points into the input's bytes (no copy). */
int value_in_data(const psi_app_input *in, size_t i)
{
    const uint8_t *p = in->values[i].data;

    return p >= in->data && p + in->values[i].len <= in->data + in->data_len;
}

/* Returns: the rows (with the header) written back, malloc'ed. */
char *write_back(const psi_app_input *in)
{
    char *text = NULL;
    size_t len = 0, i;
    FILE *f = open_memstream(&text, &len);

    assert_non_null(f);
    assert_int_equal(psi_app_input_write_header(f, in), 0);
    for (i = 0; i < in->n; i++)
        assert_int_equal(psi_app_input_write_row(f, in, i), 0);
    assert_int_equal(fclose(f), 0);
    return text;
}
