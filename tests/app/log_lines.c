/* test_input, the log lines (app/app_progress.c, app_util.c): processes
 * sharing stderr, as the server's rounds do, write whole lines that never
 * interleave. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmocka.h>

#include "app_progress.h"
#include "app_util.h"
#include "input_common.h"

#define LOG_WRITERS 8
#define LOG_LINES 400

/* A child: LOG_LINES notes and errors on stderr (the pipe), then exit. */
static void log_child(int id, int wfd)
{
    psi_app_progress p;
    char tail[200];

    dup2(wfd, STDERR_FILENO);
    memset(tail, 'a' + id, sizeof tail - 1);
    tail[sizeof tail - 1] = '\0';
    psi_app_progress_init(&p, "shardpsi server", 1);
    for (int i = 0; i < LOG_LINES; i++) {
        if (i % 2 == 0)
            psi_app_progress_note(&p, "writer %d line %d %s", id, i, tail);
        else
            psi_app_error("writer %d line %d %s", id, i, tail);
    }
    _exit(0);
}

/* Checks one line read back: "<who>: writer ID line I <200 letters of ID>". */
static void log_check(const char *line, int counts[LOG_WRITERS])
{
    int id = -1, i = -1, off = 0;
    const char *rest = line;

    if (strncmp(line, "shardpsi server: ", 17) == 0)
        rest = line + 17;
    else if (strncmp(line, "shardpsi: ", 10) == 0)
        rest = line + 10;
    else
        fail_msg("a garbled line: %.80s", line);
    if (sscanf(rest, "writer %d line %d %n", &id, &i, &off) != 2 || id < 0 ||
        id >= LOG_WRITERS)
        fail_msg("a garbled line: %.80s", line);
    assert_int_equal(strlen(rest + off), 199);
    for (const char *c = rest + off; *c; c++)
        if (*c != 'a' + id)
            fail_msg("writer %d's line %d holds another's bytes: %.80s", id, i, line);
    counts[id]++;
}

void test_cli_input_log_lines(void **state)
{
    int fd[2], counts[LOG_WRITERS] = {0};
    pid_t pids[LOG_WRITERS];
    FILE *in;
    char *line = NULL;
    size_t cap = 0;

    (void)state;
    assert_int_equal(pipe(fd), 0);
    for (int id = 0; id < LOG_WRITERS; id++) {
        pids[id] = fork();
        assert_true(pids[id] >= 0);
        if (pids[id] == 0) {
            close(fd[0]);
            log_child(id, fd[1]);
        }
    }
    close(fd[1]);
    assert_non_null(in = fdopen(fd[0], "r"));
    while (getline(&line, &cap, in) > 0) {
        line[strcspn(line, "\n")] = '\0';
        log_check(line, counts);
    }
    free(line);
    fclose(in);
    for (int id = 0; id < LOG_WRITERS; id++) {
        int st;
        assert_int_equal(waitpid(pids[id], &st, 0), pids[id]);
        assert_true(WIFEXITED(st) && WEXITSTATUS(st) == 0);
        assert_int_equal(counts[id], LOG_LINES);
    }
}
