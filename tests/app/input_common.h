/* What the parts of test_input share (test_input.c holds main; input_lines.c,
 * input_csv.c and input_output.c the rest): the scratch directory and the
 * files in it, reading a literal as an input file, and checks of the values
 * read; and the test cases main runs. */
#ifndef PSI_TEST_INPUT_COMMON_H
#define PSI_TEST_INPUT_COMMON_H

#include <stddef.h>

#include "app_input.h"

#define BOM "\xEF\xBB\xBF"

/* The scratch directory of this run (main's group setup and teardown). */
#define SCRATCH_LEN 64
extern char scratch[SCRATCH_LEN];

/* Returns: scratch/name in a static buffer (one of four, so a few may be
 * live at once). */
const char *tpath(const char *name);
/* Writes len bytes to scratch/name.  Returns: its path. */
const char *put_file(const char *name, const void *bytes, size_t len);
/* Returns: the number of entries of scratch whose name starts with prefix. */
int count_entries(const char *prefix);
/* Fails the test, showing both, unless needle occurs in hay. */
void assert_contains(const char *hay, const char *needle);
/* Reads len bytes as a file in the given mode (column NULL: --lines); the
 * read must succeed. */
void read_ok(psi_app_input *in, const char *content, size_t len, const char *column);
/* The input as a string read in that mode must fail with code and a
 * message containing each of the NULL-terminated substrings. */
void read_fails(const char *content, const char *column, int code, ...);
/* Value i must be the n bytes `want`. */
void assert_value(const psi_app_input *in, size_t i, const void *want, size_t n);
/* The values must be the NUL-terminated strings of want, n of them. */
void assert_values(const psi_app_input *in, const char *const *want, size_t n);
/* Returns: 1 if value i points into the input's bytes (no copy). */
int value_in_data(const psi_app_input *in, size_t i);
/* Returns: the rows (with the header) written back, malloc'ed. */
char *write_back(const psi_app_input *in);

#define READ_OK(in, lit, col) read_ok(in, lit, sizeof lit - 1, col)
#define VALUES(in, ...) do { \
        static const char *const want_[] = {__VA_ARGS__}; \
        assert_values(in, want_, sizeof want_ / sizeof want_[0]); \
    } while (0)

/* ---------------------------------------------------------- test cases */

/* input_lines.c */
void test_cli_input_lines_lf(void **state);
void test_cli_input_lines_crlf(void **state);
void test_cli_input_lines_final_newline_optional(void **state);
void test_cli_input_lines_empty_lines_are_values(void **state);
void test_cli_input_lines_empty_file(void **state);
void test_cli_input_lines_bom_stripped(void **state);
void test_cli_input_lines_binary_bytes(void **state);
void test_cli_input_lines_many(void **state);
void test_cli_input_guard_header_line(void **state);
void test_cli_input_guard_csv_name(void **state);
void test_cli_input_guard_plain_lines(void **state);
void test_cli_input_guard_excerpt(void **state);

/* input_csv.c */
void test_cli_input_csv_selects_column(void **state);
void test_cli_input_csv_quoted_fields(void **state);
void test_cli_input_csv_escapes_use_extra(void **state);
void test_cli_input_csv_newlines_in_quotes(void **state);
void test_cli_input_csv_crlf_records(void **state);
void test_cli_input_csv_header_only(void **state);
void test_cli_input_csv_one_column_empty_lines(void **state);
void test_cli_input_csv_bom(void **state);
void test_cli_input_csv_errors(void **state);

/* input_output.c */
void test_cli_input_output_commit(void **state);
void test_cli_input_output_keeps_mode(void **state);
void test_cli_input_log_lines(void **state);
void test_cli_input_output_abort(void **state);
void test_cli_input_output_open_errors(void **state);
void test_cli_input_output_rename_fails(void **state);
void test_cli_input_output_stdout(void **state);
void test_cli_input_output_signal_cleanup(void **state);

#endif
