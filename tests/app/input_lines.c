/* test_input, line mode (app/app_input.c): LF and CRLF, the optional
 * final newline, empty lines, the BOM, bytes as they are, many lines; and
 * the CSV guard that refuses, in line mode without --lines, a file that
 * looks like CSV. */
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

/* ---- Line mode --------------------------------------------------------- */

void test_cli_input_lines_lf(void **state)
{
    psi_app_input in;

    (void)state;
    READ_OK(&in, "alice\nbob\ncarol\n", NULL);
    VALUES(&in, "alice", "bob", "carol");
    assert_true(value_in_data(&in, 0) && value_in_data(&in, 2));
    assert_null(in.records);
    assert_null(in.extra);
    assert_int_equal(in.header.len, 0);
    psi_app_input_free(&in);
    assert_null(in.data);
    psi_app_input_free(&in);    // twice is fine
}

void test_cli_input_lines_crlf(void **state)
{
    psi_app_input in;

    (void)state;
    READ_OK(&in, "a\r\nb\r\n", NULL);
    VALUES(&in, "a", "b");
    psi_app_input_free(&in);
    READ_OK(&in, "a\r\nb", NULL);
    VALUES(&in, "a", "b");
    psi_app_input_free(&in);
    // Only a '\r' right before '\n' is a line break's.
    READ_OK(&in, "x\ry\r\n\r\r\nlast\r", NULL);
    VALUES(&in, "x\ry", "\r", "last\r");
    psi_app_input_free(&in);
}

void test_cli_input_lines_final_newline_optional(void **state)
{
    psi_app_input in;

    (void)state;
    READ_OK(&in, "a\nb", NULL);
    VALUES(&in, "a", "b");
    psi_app_input_free(&in);
    READ_OK(&in, "only", NULL);
    VALUES(&in, "only");
    psi_app_input_free(&in);
}

void test_cli_input_lines_empty_lines_are_values(void **state)
{
    psi_app_input in;

    (void)state;
    READ_OK(&in, "a\n\nb\n\n", NULL);
    VALUES(&in, "a", "", "b", "");
    psi_app_input_free(&in);
    READ_OK(&in, "\n", NULL);
    VALUES(&in, "");
    psi_app_input_free(&in);
    READ_OK(&in, "\r\n\r\nx", NULL);
    VALUES(&in, "", "", "x");
    psi_app_input_free(&in);
}

void test_cli_input_lines_empty_file(void **state)
{
    psi_app_input in;

    (void)state;
    READ_OK(&in, "", NULL);
    assert_int_equal(in.n, 0);
    assert_int_equal(in.data_len, 0);
    psi_app_input_free(&in);
}

void test_cli_input_lines_bom_stripped(void **state)
{
    psi_app_input in;

    (void)state;
    READ_OK(&in, BOM "a\nb\n", NULL);
    VALUES(&in, "a", "b");
    assert_int_equal(in.data_len, 7);   // data keeps the bytes as read
    psi_app_input_free(&in);
    READ_OK(&in, BOM, NULL);
    assert_int_equal(in.n, 0);
    psi_app_input_free(&in);
    // Only at the very start: elsewhere it is a value's bytes.
    READ_OK(&in, "a\n" BOM "b\n", NULL);
    VALUES(&in, "a", BOM "b");
    psi_app_input_free(&in);
    READ_OK(&in, "\xEF\xBB\n", NULL);
    VALUES(&in, "\xEF\xBB");
    psi_app_input_free(&in);
}

void test_cli_input_lines_binary_bytes(void **state)
{
    static const char bytes[] = "a\0b\n\xff\xfe\x01\n\0\n";
    psi_app_input in;

    (void)state;
    read_ok(&in, bytes, sizeof bytes - 1, NULL);
    assert_int_equal(in.n, 3);
    assert_value(&in, 0, "a\0b", 3);
    assert_value(&in, 1, "\xff\xfe\x01", 3);
    assert_value(&in, 2, "\0", 1);
    psi_app_input_free(&in);
}

/* 100,000 generated lines: counts and spot checks (no timing). */
void test_cli_input_lines_many(void **state)
{
    const size_t n = 100000;
    char *text = malloc(n * 12), *p = text, v[16];
    psi_app_input in;
    size_t i;

    (void)state;
    assert_non_null(text);
    for (i = 0; i < n; i++)
        p += sprintf(p, "v%zu%s", i, i % 3 == 0 ? "\r\n" : "\n");
    read_ok(&in, text, (size_t)(p - text), NULL);
    assert_int_equal(in.n, n);
    for (i = 0; i < n; i += 9973) {
        snprintf(v, sizeof v, "v%zu", i);
        assert_value(&in, i, v, strlen(v));
    }
    psi_app_input_free(&in);
    free(text);
}

/* ---- The CSV guard of line mode ---------------------------------------- */

/* The tail every guard message ends with. */
#define GUARD_ADVICE "add --column NAME to read a column, or --lines to read every line " \
                     "as a value"

/* Reads literal `lit` as file `name` in line mode without --lines: it must
 * be refused, with err exactly "<path>: looks like CSV (<why>); <advice>". */
#define GUARD_REFUSES(name, lit, why) guard_refuses(name, lit, sizeof lit - 1, why)
static void guard_refuses(const char *name, const char *content, size_t len,
                          const char *why)
{
    char err[512], want[512];
    psi_app_input in;
    const char *path = put_file(name, content, len);

    assert_int_equal(psi_app_input_read(&in, path, NULL, 0, err, sizeof err),
                     PSI_APP_INPUT_ELOOKS_CSV);
    assert_null(in.data);
    assert_null(in.values);
    assert_int_equal(in.n, 0);
    snprintf(want, sizeof want, "%s: looks like CSV (%s); " GUARD_ADVICE, path, why);
    assert_string_equal(err, want);
    psi_app_input_free(&in);
}

/* Reads literal `lit` as file `name` with lines and column as given; the
 * read must succeed.  Out: *in. */
#define GUARD_READS(in, name, lit, column, lines) \
    guard_reads(in, name, lit, sizeof lit - 1, column, lines)
static void guard_reads(psi_app_input *in, const char *name, const char *content,
                        size_t len, const char *column, int lines)
{
    char err[512];
    int rc = psi_app_input_read(in, put_file(name, content, len), column, lines, err,
                                sizeof err);

    if (rc != PSI_APP_INPUT_OK) {
        print_error("unexpected error %d: %s\n", rc, err);
        fail();
    }
}

void test_cli_input_guard_header_line(void **state)
{
    static const char leads[] = "email,name\na@example.com,Ann\nb@example.com,Bo\n";
    psi_app_input in;

    (void)state;
    // A comma in the first line, whatever the name.
    GUARD_REFUSES("leads.txt", leads, "first line \"email,name\"");
    GUARD_REFUSES("leads", "a,b", "first line \"a,b\"");
    GUARD_REFUSES("q.txt", "\"x\",\"y\"\r\n1,2\r\n", "first line \"\"x\",\"y\"\"");
    GUARD_REFUSES("bom.txt", BOM "id,v\n", "first line \"id,v\"");
    GUARD_REFUSES("one.txt", ",\n", "first line \",\"");
    // --lines reads the same file as lines, header and all.
    GUARD_READS(&in, "leads.txt", leads, NULL, 1);
    VALUES(&in, "email,name", "a@example.com,Ann", "b@example.com,Bo");
    assert_null(in.records);
    psi_app_input_free(&in);
    // --column still reads the column.
    GUARD_READS(&in, "leads.txt", leads, "email", 0);
    VALUES(&in, "a@example.com", "b@example.com");
    psi_app_input_free(&in);
}

void test_cli_input_guard_csv_name(void **state)
{
    psi_app_input in;

    (void)state;
    // A name ending in .csv, in any case, is refused even without a comma.
    GUARD_REFUSES("one.csv", "email\na@example.com\n", "its name ends in .csv");
    GUARD_REFUSES("ONE.CSV", "email\n", "its name ends in .csv");
    GUARD_REFUSES("e.Csv", "", "its name ends in .csv");
    // A comma still shows the first line.
    GUARD_REFUSES("two.csv", "a,b\n", "first line \"a,b\"");
    GUARD_READS(&in, "one.csv", "email\na@example.com\n", NULL, 1);
    VALUES(&in, "email", "a@example.com");
    psi_app_input_free(&in);
    GUARD_READS(&in, "one.csv", "email\na@example.com\n", "email", 0);
    VALUES(&in, "a@example.com");
    psi_app_input_free(&in);
    // Only the end of the name counts.
    GUARD_READS(&in, "one.csv.txt", "a\nb\n", NULL, 0);
    VALUES(&in, "a", "b");
    psi_app_input_free(&in);
    GUARD_READS(&in, "onecsv", "a\n", NULL, 0);
    VALUES(&in, "a");
    psi_app_input_free(&in);
}

void test_cli_input_guard_plain_lines(void **state)
{
    psi_app_input in;

    (void)state;
    // No comma in the first line: lines, without any flag.
    GUARD_READS(&in, "plain.txt", "alice\nbob\ncarol\n", NULL, 0);
    VALUES(&in, "alice", "bob", "carol");
    psi_app_input_free(&in);
    GUARD_READS(&in, "tabs.txt", "a\tb;c\n", NULL, 0);
    VALUES(&in, "a\tb;c");
    psi_app_input_free(&in);
    // Only the first line is looked at.
    GUARD_READS(&in, "late.txt", "alice\nbob,x\n", NULL, 0);
    VALUES(&in, "alice", "bob,x");
    psi_app_input_free(&in);
    GUARD_READS(&in, "empty.txt", "", NULL, 0);
    assert_int_equal(in.n, 0);
    psi_app_input_free(&in);
}

void test_cli_input_guard_excerpt(void **state)
{
    char line[200], want[200], err[512];
    psi_app_input in;

    (void)state;
    // Control characters become '?'; a '\r' before the '\n' is not shown.
    GUARD_REFUSES("ctl.txt", "\x1b[31ma,b\tc\x7f\r\n", "first line \"?[31ma,b?c?\"");
    GUARD_REFUSES("cr.txt", "a,b\rc\n", "first line \"a,b?c\"");
    // A long first line is cut to PSI_APP_INPUT_EXCERPT bytes with "...".
    memset(line, 'x', 100);
    line[0] = ',';
    line[100] = '\0';
    snprintf(want, sizeof want, "first line \"%.*s...\"", PSI_APP_INPUT_EXCERPT - 3, line);
    guard_refuses("long.txt", line, 100, want);
    // ... never inside a UTF-8 sequence ("é" is 2 bytes).
    memset(line, 'x', 56);
    memcpy(line + 56, "\xC3\xA9,yyyy", 7);
    snprintf(want, sizeof want, "first line \"%.56s...\"", line);
    guard_refuses("utf8.txt", line, 63, want);
    // The guard alone, on the first line only (shardpsi-mpi).
    assert_int_equal(psi_app_input_guard("x.txt", (const uint8_t *)"a,b", 3, err,
                                         sizeof err), PSI_APP_INPUT_ELOOKS_CSV);
    assert_string_equal(err, "x.txt: looks like CSV (first line \"a,b\"); " GUARD_ADVICE);
    assert_int_equal(psi_app_input_guard("-", (const uint8_t *)"ab\n", 3, err, sizeof err),
                     PSI_APP_INPUT_OK);
    assert_string_equal(err, "");
    assert_int_equal(psi_app_input_guard("-", (const uint8_t *)BOM "a,b", 6, err,
                                         sizeof err), PSI_APP_INPUT_ELOOKS_CSV);
    assert_string_equal(err, "stdin: looks like CSV (first line \"a,b\"); " GUARD_ADVICE);
    assert_int_equal(psi_app_input_guard("y.csv", (const uint8_t *)"", 0, NULL, 0),
                     PSI_APP_INPUT_ELOOKS_CSV);
    // A message longer than err is cut, still terminated.
    assert_int_equal(psi_app_input_read(&in, put_file("cut.txt", "a,b\n", 4), NULL, 0,
                                        err, 8), PSI_APP_INPUT_ELOOKS_CSV);
    assert_int_equal(strlen(err), 7);
}
