/* The network commands' input reader and output files (app/app_input.c,
 * app/app_output.c): line and CSV modes, every CSV error with its line
 * number, the CSV guard of line mode, stdin, rows written back, and
 * outputs that appear only on commit (also when a signal ends the
 * process).  This file: main, opening, stdin and rows written back; line
 * mode and its CSV guard are in input_lines.c, CSV mode in input_csv.c,
 * the output files in input_output.c. */
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
        cmocka_unit_test(test_cli_input_output_keeps_mode),
        cmocka_unit_test(test_cli_input_log_lines),
        cmocka_unit_test(test_cli_input_output_abort),
        cmocka_unit_test(test_cli_input_output_open_errors),
        cmocka_unit_test(test_cli_input_output_rename_fails),
        cmocka_unit_test(test_cli_input_output_stdout),
        cmocka_unit_test(test_cli_input_output_signal_cleanup),
    };

    return cmocka_run_group_tests(tests, group_setup, group_teardown);
}
