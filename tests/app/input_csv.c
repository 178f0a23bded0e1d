/* test_input, CSV mode (app/app_input_csv.c): the column chosen, quoted
 * fields and their escapes, newlines in quotes, CRLF records, a header
 * alone, the BOM, and every CSV error with its line number. */
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

/* ---- CSV mode ---------------------------------------------------------- */

void test_cli_input_csv_selects_column(void **state)
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

void test_cli_input_csv_quoted_fields(void **state)
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

void test_cli_input_csv_escapes_use_extra(void **state)
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

void test_cli_input_csv_newlines_in_quotes(void **state)
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

void test_cli_input_csv_crlf_records(void **state)
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

void test_cli_input_csv_header_only(void **state)
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

void test_cli_input_csv_one_column_empty_lines(void **state)
{
    psi_app_input in;

    (void)state;
    READ_OK(&in, "h\na\n\nb\r\n\r\n\"\"\n", "h");
    VALUES(&in, "a", "", "b", "", "");
    psi_app_input_free(&in);
}

void test_cli_input_csv_bom(void **state)
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

void test_cli_input_csv_errors(void **state)
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
