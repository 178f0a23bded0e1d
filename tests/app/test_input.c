/* The network commands' input reader and output files (app/app_input.c,
 * app/app_output.c): line and CSV modes, every CSV error with its line
 * number, the CSV guard of line mode, stdin, rows written back, and outputs that appear only on commit
 * (also when a signal ends the process). */
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

#define BOM "\xEF\xBB\xBF"

/* The scratch directory of this run (group setup and teardown). */
static char scratch[64];

/* Returns: scratch/name in a static buffer (one of four, so a few may be
 * live at once). */
static const char *tpath(const char *name)
{
    static char bufs[4][512];
    static unsigned k;
    char *b = bufs[k++ % 4];

    snprintf(b, sizeof bufs[0], "%s/%s", scratch, name);
    return b;
}

/* Writes len bytes to scratch/name.  Returns: its path. */
static const char *put_file(const char *name, const void *bytes, size_t len)
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
static int count_entries(const char *prefix)
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
static void assert_contains(const char *hay, const char *needle)
{
    if (strstr(hay, needle) == NULL) {
        print_error("\"%s\" does not contain \"%s\"\n", hay, needle);
        fail();
    }
}

/* Reads len bytes as a file in the given mode (column NULL: --lines); the
 * read must succeed. */
static void read_ok(psi_app_input *in, const char *content, size_t len,
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
}

/* The input as a string read in that mode must fail with code and a
 * message containing each of the NULL-terminated substrings. */
static void read_fails(const char *content, const char *column, int code, ...)
{
    psi_app_input in;
    char err[256];
    const char *sub;
    va_list ap;
    int rc = psi_app_input_read(&in, put_file("bad.csv", content, strlen(content)),
                                column, column == NULL, err, sizeof err);

    assert_int_equal(rc, code);
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
static void assert_value(const psi_app_input *in, size_t i, const void *want, size_t n)
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
static void assert_values(const psi_app_input *in, const char *const *want, size_t n)
{
    size_t i;

    assert_int_equal(in->n, n);
    for (i = 0; i < n; i++)
        assert_value(in, i, want[i], strlen(want[i]));
}

/* Returns: 1 if value i points into the input's bytes (no copy). */
static int value_in_data(const psi_app_input *in, size_t i)
{
    const uint8_t *p = in->values[i].data;

    return p >= in->data && p + in->values[i].len <= in->data + in->data_len;
}

/* Returns: the rows (with the header) written back, malloc'ed. */
static char *write_back(const psi_app_input *in)
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

#define READ_OK(in, lit, col) read_ok(in, lit, sizeof lit - 1, col)
#define VALUES(in, ...) do { \
        static const char *const want_[] = {__VA_ARGS__}; \
        assert_values(in, want_, sizeof want_ / sizeof want_[0]); \
    } while (0)

/* ---- Line mode --------------------------------------------------------- */

static void test_cli_input_lines_lf(void **state)
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

static void test_cli_input_lines_crlf(void **state)
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

static void test_cli_input_lines_final_newline_optional(void **state)
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

static void test_cli_input_lines_empty_lines_are_values(void **state)
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

static void test_cli_input_lines_empty_file(void **state)
{
    psi_app_input in;

    (void)state;
    READ_OK(&in, "", NULL);
    assert_int_equal(in.n, 0);
    assert_int_equal(in.data_len, 0);
    psi_app_input_free(&in);
}

static void test_cli_input_lines_bom_stripped(void **state)
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

static void test_cli_input_lines_binary_bytes(void **state)
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
static void test_cli_input_lines_many(void **state)
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

/* ---- CSV mode ---------------------------------------------------------- */

static void test_cli_input_csv_selects_column(void **state)
{
    static const char csv[] = "id,name,email\n1,Ann,ann@x\n2,Bob,bob@y\n";
    psi_app_input in;

    (void)state;
    READ_OK(&in, csv, "id");
    VALUES(&in, "1", "2");
    psi_app_input_free(&in);
    READ_OK(&in, csv, "name");
    VALUES(&in, "Ann", "Bob");
    assert_true(value_in_data(&in, 0) && value_in_data(&in, 1));
    assert_null(in.extra);
    assert_int_equal(in.header.off, 0);
    assert_int_equal(in.header.len, 13);
    assert_non_null(in.records);
    assert_int_equal(in.records[0].off, 14);
    assert_int_equal(in.records[0].len, 11);
    assert_int_equal(in.records[1].off, 26);
    assert_int_equal(in.records[1].len, 11);
    psi_app_input_free(&in);
    READ_OK(&in, csv, "email");
    VALUES(&in, "ann@x", "bob@y");
    psi_app_input_free(&in);
    // Header names are matched exactly: case and spaces count.
    read_fails(csv, "Name", PSI_APP_INPUT_ECSV, "no column \"Name\"", NULL);
    read_fails(csv, " name", PSI_APP_INPUT_ECSV, "no column \" name\"", NULL);
}

static void test_cli_input_csv_quoted_fields(void **state)
{
    psi_app_input in;

    (void)state;
    READ_OK(&in, "\"id\",\"a,b\"\n\"x,y\",1\n\"\",2\nz,3", "id");
    VALUES(&in, "x,y", "", "z");
    // Quotes are stripped by offset: no copy.
    assert_true(value_in_data(&in, 0) && value_in_data(&in, 1));
    assert_null(in.extra);
    psi_app_input_free(&in);
    READ_OK(&in, "\"id\",\"a,b\"\n\"x,y\",1\n", "a,b");
    VALUES(&in, "1");
    psi_app_input_free(&in);
}

static void test_cli_input_csv_escapes_use_extra(void **state)
{
    psi_app_input in;

    (void)state;
    READ_OK(&in, "n,\"say \"\"x\"\"\"\n"
                 "\"a \"\"b\"\"\",1\n"
                 "plain,2\n"
                 "\"\"\"\",3\n"
                 "\"q\",4\n", "n");
    VALUES(&in, "a \"b\"", "plain", "\"", "q");
    assert_non_null(in.extra);
    assert_int_equal(in.extra_len, 6);
    assert_ptr_equal(in.values[0].data, in.extra);
    assert_ptr_equal(in.values[2].data, in.extra + 5);
    assert_true(value_in_data(&in, 1) && value_in_data(&in, 3));
    psi_app_input_free(&in);
    // A column name with escapes matches its unescaped form.
    READ_OK(&in, "n,\"say \"\"x\"\"\"\nv,w\n", "say \"x\"");
    VALUES(&in, "w");
    psi_app_input_free(&in);
}

static void test_cli_input_csv_newlines_in_quotes(void **state)
{
    static const char csv[] = "id,note\n\"multi\nline\",1\n"
                              "\"crlf\r\nkept\",\"a\n\nb\"\nlast,9\n";
    psi_app_input in;
    char *text;

    (void)state;
    READ_OK(&in, csv, "id");
    VALUES(&in, "multi\nline", "crlf\r\nkept", "last");
    assert_int_equal(in.records[0].len, strlen("\"multi\nline\",1"));
    assert_int_equal(in.records[1].len, strlen("\"crlf\r\nkept\",\"a\n\nb\""));
    psi_app_input_free(&in);
    READ_OK(&in, csv, "note");
    VALUES(&in, "1", "a\n\nb", "9");
    text = write_back(&in);
    assert_string_equal(text, csv);
    free(text);
    psi_app_input_free(&in);
    // Line numbers of later errors count the line breaks inside quotes.
    read_fails("a,b\n\"x\ny\",1\n\"p\r\nq\r\nr\",2\n1,2,3\n", "a", PSI_APP_INPUT_ECSV,
               "line 7: 3 fields, the header has 2", NULL);
}

static void test_cli_input_csv_crlf_records(void **state)
{
    psi_app_input in;
    char *text;

    (void)state;
    READ_OK(&in, "k,v\r\n1,a\r\n\"2\",\"b\"\r\n", "v");
    VALUES(&in, "a", "b");
    assert_int_equal(in.header.len, 3);
    assert_int_equal(in.records[0].len, 3);
    assert_int_equal(in.records[1].len, 7);
    // Rows come back with "\n" line breaks.
    text = write_back(&in);
    assert_string_equal(text, "k,v\n1,a\n\"2\",\"b\"\n");
    free(text);
    psi_app_input_free(&in);
}

static void test_cli_input_csv_header_only(void **state)
{
    psi_app_input in;
    char *text;

    (void)state;
    READ_OK(&in, "a,b\n", "b");
    assert_int_equal(in.n, 0);
    assert_non_null(in.records);
    text = write_back(&in);
    assert_string_equal(text, "a,b\n");
    free(text);
    psi_app_input_free(&in);
    READ_OK(&in, "a,b", "a");
    assert_int_equal(in.n, 0);
    psi_app_input_free(&in);
}

static void test_cli_input_csv_one_column_empty_lines(void **state)
{
    psi_app_input in;

    (void)state;
    READ_OK(&in, "h\na\n\nb\r\n\r\n\"\"\n", "h");
    VALUES(&in, "a", "", "b", "", "");
    psi_app_input_free(&in);
}

static void test_cli_input_csv_bom(void **state)
{
    psi_app_input in;
    char *text;

    (void)state;
    READ_OK(&in, BOM "id,x\n7,8\n", "id");
    VALUES(&in, "7");
    assert_int_equal(in.header.off, 3);
    text = write_back(&in);
    assert_string_equal(text, "id,x\n7,8\n");
    free(text);
    psi_app_input_free(&in);
    READ_OK(&in, BOM "\"id\"\n7\n", "id");
    VALUES(&in, "7");
    psi_app_input_free(&in);
}

static void test_cli_input_csv_errors(void **state)
{
    const int e = PSI_APP_INPUT_ECSV;

    (void)state;
    read_fails("", "a", e, "no header row", NULL);
    read_fails(BOM, "a", e, "no header row", NULL);
    read_fails("a,b\n1,2\n3,\"x\n4,5\n", "a", e, "line 3: field 2: quoted field not "
               "closed", NULL);
    read_fails("a,b\n1,\"x\n\n\"\"y\n", "a", e, "line 2: field 2: quoted", NULL);
    read_fails("a,b\n1,2\n\"x\ny\",\"z\n", "a", e, "line 4: field 2: quoted", NULL);
    read_fails("a,b\n1,x\"y\n", "a", e, "line 2: field 2: '\"' in an unquoted field",
               NULL);
    read_fails("a,b\n1,2\nx\",2\n", "a", e, "line 3: field 1: '\"' in an unquoted",
               NULL);
    read_fails("a,b\n\"x\"y,2\n", "a", e, "line 2: field 1: 'y' after the closing "
               "quote", NULL);
    read_fails("a,b\n1,\"x\" \n", "a", e, "line 2: field 2: ' ' after the closing",
               NULL);
    read_fails("a,b\n1,2\r3\n", "a", e, "line 2: field 2: bare carriage return", NULL);
    read_fails("a,b\n1,2\r", "a", e, "line 2: field 2: bare carriage return", NULL);
    read_fails("a,b\n1,\"2\"\r,\n", "a", e, "line 2: field 2: bare carriage", NULL);
    read_fails("a,b\r1,2\n", "a", e, "line 1: field 2: bare carriage", NULL);
    read_fails("a,b,c,d\n1,2,3,4\n1,2,3\n", "a", e, "line 3: 3 fields, the header has 4",
               NULL);
    read_fails("a,b\n1,2,3\n", "b", e, "line 2: 3 fields, the header has 2", NULL);
    read_fails("a,b\n1\n", "a", e, "line 2: 1 field, the header has 2", NULL);
    read_fails("a,b\n1,2\n\n3,4\n", "a", e, "line 3: empty line, the header has 2",
               NULL);
    read_fails("id,name,email,phone,zip\n1,2,3,4,5\n", "x", e, "line 1: no column \"x\"",
               "\"id\", \"name\", \"email\", \"phone\", ... (5 in all)", NULL);
    read_fails("id,\"n\"\"m\"\n", "x", e, "columns: \"id\", \"n\"m\" (2 in all)", NULL);
    read_fails("id,x,id\n1,2,3\n", "id", e, "line 1: field 3: column \"id\" is named "
               "twice in the header (fields 1 and 3)", NULL);
    read_fails("\"id\",x,id\n", "id", e, "fields 1 and 3", NULL);
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

static void test_cli_input_guard_header_line(void **state)
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

static void test_cli_input_guard_csv_name(void **state)
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

static void test_cli_input_guard_plain_lines(void **state)
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

static void test_cli_input_guard_excerpt(void **state)
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

/* ---- Opening, stdin, rows --------------------------------------------- */

static void test_cli_input_open_errors(void **state)
{
    psi_app_input in;
    char err[256];

    (void)state;
    assert_int_equal(psi_app_input_read(&in, tpath("missing.txt"), NULL, 1, err,
                                        sizeof err),
                     PSI_APP_INPUT_EOPEN);
    assert_contains(err, "missing.txt: cannot open: No such file or directory");
    assert_null(in.data);
    psi_app_input_free(&in);
    assert_int_equal(psi_app_input_read(&in, scratch, "x", 0, err, sizeof err),
                     PSI_APP_INPUT_EOPEN);
    assert_contains(err, scratch);
    assert_contains(err, "cannot open: Is a directory");
    psi_app_input_free(&in);
    // No room for a message is fine.
    assert_int_equal(psi_app_input_read(&in, tpath("missing.txt"), NULL, 1, NULL, 0),
                     PSI_APP_INPUT_EOPEN);
    // A message longer than err is cut, still terminated.
    assert_int_equal(psi_app_input_read(&in, tpath("missing.txt"), NULL, 1, err, 8),
                     PSI_APP_INPUT_EOPEN);
    assert_true(strlen(err) == 7);
}

/* Reads "-" with fd 0 replaced by a pipe fed by a child with len bytes
 * (more than the first buffer, so it grows). */
static int read_stdin(psi_app_input *in, const char *column, const char *bytes,
                      size_t len, char *err, size_t err_len)
{
    int fds[2], saved = dup(0), rc, status;
    pid_t pid;

    assert_true(saved >= 0);
    assert_int_equal(pipe(fds), 0);
    pid = fork();
    assert_true(pid >= 0);
    if (pid == 0) {
        size_t off = 0;

        close(fds[0]);
        while (off < len) {
            ssize_t w = write(fds[1], bytes + off, len - off);
            if (w <= 0)
                _exit(1);
            off += (size_t)w;
        }
        _exit(0);
    }
    close(fds[1]);
    assert_int_equal(dup2(fds[0], 0), 0);
    close(fds[0]);
    // Line mode without --lines: stdin follows the header rule only.
    rc = psi_app_input_read(in, "-", column, 0, err, err_len);
    assert_int_equal(dup2(saved, 0), 0);
    close(saved);
    assert_int_equal(waitpid(pid, &status, 0), pid);
    assert_true(WIFEXITED(status) && WEXITSTATUS(status) == 0);
    return rc;
}

static void test_cli_input_stdin(void **state)
{
    const size_t n = 50000;     // about 300 kB: several doublings
    char *text = malloc(n * 8 + 16), *p = text, err[256];
    psi_app_input in;
    size_t i;

    (void)state;
    assert_non_null(text);
    p += sprintf(p, "c\n");
    for (i = 0; i < n; i++)
        p += sprintf(p, "%06zu\n", i);
    assert_int_equal(read_stdin(&in, "c", text, (size_t)(p - text), err, sizeof err), 0);
    assert_int_equal(in.n, n);
    assert_value(&in, 0, "000000", 6);
    assert_value(&in, n - 1, "049999", 6);
    psi_app_input_free(&in);
    assert_int_equal(read_stdin(&in, NULL, text, (size_t)(p - text), err, sizeof err), 0);
    assert_int_equal(in.n, n + 1);
    psi_app_input_free(&in);
    assert_int_equal(read_stdin(&in, "c", "c\n1,2\n", 6, err, sizeof err),
                     PSI_APP_INPUT_ECSV);
    assert_string_equal(err, "stdin: line 2: 2 fields, the header has 1");
    assert_int_equal(read_stdin(&in, NULL, "", 0, err, sizeof err), 0);
    assert_int_equal(in.n, 0);
    psi_app_input_free(&in);
    // The CSV guard: a header-looking first line is refused on stdin too.
    assert_int_equal(read_stdin(&in, NULL, "c,d\n1,2\n", 8, err, sizeof err),
                     PSI_APP_INPUT_ELOOKS_CSV);
    assert_string_equal(err, "stdin: looks like CSV (first line \"c,d\"); add --column "
                        "NAME to read a column, or --lines to read every line as a value");
    assert_null(in.data);
    free(text);
}

static void test_cli_input_write_rows(void **state)
{
    static const char lines[] = "a\r\n\nb\0c\nlast";
    psi_app_input in;
    char *text = NULL;
    size_t len = 0;
    FILE *f;

    (void)state;
    read_ok(&in, lines, sizeof lines - 1, NULL);
    f = open_memstream(&text, &len);
    assert_non_null(f);
    assert_int_equal(psi_app_input_write_header(f, &in), 0);
    for (size_t i = 0; i < in.n; i++)
        assert_int_equal(psi_app_input_write_row(f, &in, i), 0);
    assert_int_equal(psi_app_input_write_row(f, &in, in.n), -1);
    assert_int_equal(fclose(f), 0);
    assert_int_equal(len, 12);
    assert_memory_equal(text, "a\n\nb\0c\nlast\n", 12);
    free(text);
    psi_app_input_free(&in);
    // CSV rows come back raw, quotes and all.
    READ_OK(&in, "x,\"y\"\n\"1\",\"a \"\"q\"\"\"\n2,b", "y");
    VALUES(&in, "a \"q\"", "b");
    text = write_back(&in);
    assert_string_equal(text, "x,\"y\"\n\"1\",\"a \"\"q\"\"\"\n2,b\n");
    free(text);
    psi_app_input_free(&in);
}

/* ---- Output files ------------------------------------------------------ */

/* Returns: the contents of path (malloc'ed, NUL-terminated), or NULL. */
static char *slurp(const char *path)
{
    FILE *f = fopen(path, "rb");
    char *buf = calloc(1, 4096);
    size_t n;

    assert_non_null(buf);
    if (f == NULL) {
        free(buf);
        return NULL;
    }
    n = fread(buf, 1, 4095, f);
    buf[n] = '\0';
    fclose(f);
    return buf;
}

static void test_cli_input_output_commit(void **state)
{
    psi_app_output o;
    char err[256] = "";
    const char *path = tpath("out.txt");
    mode_t old = umask(027);
    struct stat st;
    char *got;

    (void)state;
    assert_int_equal(psi_app_output_open(&o, path, err, sizeof err), 0);
    assert_non_null(o.f);
    assert_int_equal(count_entries("out.txt.tmp."), 1);
    assert_int_equal(count_entries("out.txt"), 1);      // only the temporary
    fputs("hello\n", o.f);
    assert_int_equal(psi_app_output_commit(&o, err, sizeof err), 0);
    assert_null(o.f);
    assert_null(o.tmp);
    got = slurp(path);
    assert_string_equal(got, "hello\n");
    free(got);
    assert_int_equal(count_entries("out.txt.tmp."), 0);
    assert_int_equal(stat(path, &st), 0);
    assert_int_equal(st.st_mode & 0777, 0640);
    psi_app_output_abort(&o);   // after commit: nothing to do
    // A second run replaces the file.
    assert_int_equal(psi_app_output_open(&o, path, err, sizeof err), 0);
    fputs("again\n", o.f);
    assert_int_equal(psi_app_output_commit(&o, err, sizeof err), 0);
    got = slurp(path);
    assert_string_equal(got, "again\n");
    free(got);
    unlink(path);
    umask(old);
}

static void test_cli_input_output_abort(void **state)
{
    psi_app_output o, zero;
    char err[256];
    const char *path = tpath("keep.txt");
    char *got;

    (void)state;
    put_file("keep.txt", "old\n", 4);
    assert_int_equal(psi_app_output_open(&o, path, err, sizeof err), 0);
    fputs("new\n", o.f);
    psi_app_output_abort(&o);
    psi_app_output_abort(&o);   // twice is fine
    got = slurp(path);
    assert_string_equal(got, "old\n");
    free(got);
    assert_int_equal(count_entries("keep.txt"), 1);
    unlink(path);
    // A new target does not appear.
    assert_int_equal(psi_app_output_open(&o, tpath("new.txt"), err, sizeof err), 0);
    fputs("x", o.f);
    psi_app_output_abort(&o);
    assert_int_equal(count_entries("new.txt"), 0);
    memset(&zero, 0, sizeof zero);
    psi_app_output_abort(&zero);
    psi_app_output_abort(NULL);
}

static void test_cli_input_output_open_errors(void **state)
{
    psi_app_output o;
    char err[256];

    (void)state;
    assert_int_equal(psi_app_output_open(&o, tpath("nodir/out.txt"), err, sizeof err),
                     -1);
    assert_contains(err, "nodir/out.txt: ");
    assert_contains(err, "No such file or directory");
    assert_null(o.f);
    assert_null(o.path);
    assert_null(o.tmp);
    assert_int_equal(psi_app_output_open(&o, scratch, err, sizeof err), -1);
    assert_contains(err, scratch);
    assert_contains(err, "Is a directory");
    assert_null(o.f);
    psi_app_output_abort(&o);
}

static void test_cli_input_output_rename_fails(void **state)
{
    psi_app_output o;
    char err[256];
    const char *path = tpath("late");

    (void)state;
    assert_int_equal(psi_app_output_open(&o, path, err, sizeof err), 0);
    fputs("x", o.f);
    // The target becomes a directory after open: rename must fail.
    assert_int_equal(mkdir(path, 0700), 0);
    assert_int_equal(psi_app_output_commit(&o, err, sizeof err), -1);
    assert_contains(err, "late: cannot rename");
    assert_int_equal(count_entries("late.tmp."), 0);
    assert_null(o.f);
    assert_int_equal(rmdir(path), 0);
    assert_int_equal(psi_app_output_commit(&o, err, sizeof err), -1);
}

static void test_cli_input_output_stdout(void **state)
{
    psi_app_output o;
    char err[256];

    (void)state;
    assert_int_equal(psi_app_output_open(&o, "-", err, sizeof err), 0);
    assert_ptr_equal(o.f, stdout);
    assert_null(o.tmp);
    assert_int_equal(psi_app_output_commit(&o, err, sizeof err), 0);
    assert_null(o.f);
    assert_int_equal(psi_app_output_open(&o, "-", err, sizeof err), 0);
    psi_app_output_abort(&o);
    assert_null(o.f);
    assert_int_equal(fputs("", stdout) >= 0, 1);    // stdout still open
}

/* A child opens two outputs (as shardpsi setup --permutation does), then is
 * killed by sig: it must die of that signal and leave neither temporary
 * file nor either target. */
static void expect_signal_cleanup(int sig)
{
    int status;
    pid_t pid = fork();

    assert_true(pid >= 0);
    if (pid == 0) {
        psi_app_output o, o2;
        char err[256];

        signal(sig, SIG_DFL);   // as if not started under nohup
        psi_app_output_cleanup_on_signal();
        if (psi_app_output_open(&o, tpath("sig.txt"), err, sizeof err) != 0 ||
            psi_app_output_open(&o2, tpath("sig2.txt"), err, sizeof err) != 0)
            _exit(3);
        fputs("partial", o.f);
        fflush(o.f);
        fputs("partial", o2.f);
        fflush(o2.f);
        raise(sig);
        _exit(4);
    }
    assert_int_equal(waitpid(pid, &status, 0), pid);
    assert_true(WIFSIGNALED(status));
    assert_int_equal(WTERMSIG(status), sig);
    assert_int_equal(count_entries("sig.txt"), 0);
    assert_int_equal(count_entries("sig2.txt"), 0);
}

static void test_cli_input_output_signal_cleanup(void **state)
{
    (void)state;
    expect_signal_cleanup(SIGTERM);
    expect_signal_cleanup(SIGINT);
    expect_signal_cleanup(SIGHUP);
}

/* ---- Runner ------------------------------------------------------------ */

static int group_setup(void **state)
{
    (void)state;
    snprintf(scratch, sizeof scratch, "/tmp/psi_app_input_XXXXXX");
    return mkdtemp(scratch) == NULL ? -1 : 0;
}

/* Removes the scratch directory and what the tests left in it. */
static int group_teardown(void **state)
{
    DIR *dir = opendir(scratch);
    struct dirent *e;

    (void)state;
    if (dir == NULL)
        return -1;
    while ((e = readdir(dir)) != NULL)
        if (strcmp(e->d_name, ".") != 0 && strcmp(e->d_name, "..") != 0)
            unlink(tpath(e->d_name));
    closedir(dir);
    return rmdir(scratch);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_cli_input_lines_lf),
        cmocka_unit_test(test_cli_input_lines_crlf),
        cmocka_unit_test(test_cli_input_lines_final_newline_optional),
        cmocka_unit_test(test_cli_input_lines_empty_lines_are_values),
        cmocka_unit_test(test_cli_input_lines_empty_file),
        cmocka_unit_test(test_cli_input_lines_bom_stripped),
        cmocka_unit_test(test_cli_input_lines_binary_bytes),
        cmocka_unit_test(test_cli_input_lines_many),
        cmocka_unit_test(test_cli_input_csv_selects_column),
        cmocka_unit_test(test_cli_input_csv_quoted_fields),
        cmocka_unit_test(test_cli_input_csv_escapes_use_extra),
        cmocka_unit_test(test_cli_input_csv_newlines_in_quotes),
        cmocka_unit_test(test_cli_input_csv_crlf_records),
        cmocka_unit_test(test_cli_input_csv_header_only),
        cmocka_unit_test(test_cli_input_csv_one_column_empty_lines),
        cmocka_unit_test(test_cli_input_csv_bom),
        cmocka_unit_test(test_cli_input_csv_errors),
        cmocka_unit_test(test_cli_input_guard_header_line),
        cmocka_unit_test(test_cli_input_guard_csv_name),
        cmocka_unit_test(test_cli_input_guard_plain_lines),
        cmocka_unit_test(test_cli_input_guard_excerpt),
        cmocka_unit_test(test_cli_input_open_errors),
        cmocka_unit_test(test_cli_input_stdin),
        cmocka_unit_test(test_cli_input_write_rows),
        cmocka_unit_test(test_cli_input_output_commit),
        cmocka_unit_test(test_cli_input_output_abort),
        cmocka_unit_test(test_cli_input_output_open_errors),
        cmocka_unit_test(test_cli_input_output_rename_fails),
        cmocka_unit_test(test_cli_input_output_stdout),
        cmocka_unit_test(test_cli_input_output_signal_cleanup),
    };

    return cmocka_run_group_tests(tests, group_setup, group_teardown);
}
