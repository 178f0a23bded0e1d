/* test_input, the output files (app/app_output.c): written to a temporary
 * file and renamed into place on commit, removed on abort and when a
 * signal ends the process, their open and rename errors, and stdout. */
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

void test_cli_input_output_commit(void **state)
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
    // Until commit the file has no name (O_TMPFILE) or only a temporary one.
    assert_int_equal(count_entries("out.txt.tmp."), o.anon ? 0 : 1);
    assert_int_equal(count_entries("out.txt"), o.anon ? 0 : 1);
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

/* A file replaced keeps its permission bits, whatever the umask; a new one
 * and one replacing a symbolic link follow the umask. */
void test_cli_input_output_keeps_mode(void **state)
{
    psi_app_output o;
    char err[256] = "";
    const char *path = tpath("mode.txt"), *link = tpath("mode.lnk");
    mode_t old = umask(022);
    struct stat st;

    (void)state;
    put_file("mode.txt", "secret\n", 7);
    assert_int_equal(chmod(path, 0600), 0);
    assert_int_equal(psi_app_output_open(&o, path, err, sizeof err), 0);
    fputs("again\n", o.f);
    assert_int_equal(psi_app_output_commit(&o, err, sizeof err), 0);
    assert_int_equal(stat(path, &st), 0);
    assert_int_equal(st.st_mode & 07777, 0600);
    // Set-id bits are not carried over.
    assert_int_equal(chmod(path, 04640), 0);
    assert_int_equal(psi_app_output_open(&o, path, err, sizeof err), 0);
    assert_int_equal(psi_app_output_commit(&o, err, sizeof err), 0);
    assert_int_equal(stat(path, &st), 0);
    assert_int_equal(st.st_mode & 07777, 0640);
    // A symbolic link is replaced, not followed: the new file has the
    // umask's mode, and the link's target keeps its own.
    assert_int_equal(symlink(path, link), 0);
    assert_int_equal(psi_app_output_open(&o, link, err, sizeof err), 0);
    assert_int_equal(psi_app_output_commit(&o, err, sizeof err), 0);
    assert_int_equal(lstat(link, &st), 0);
    assert_true(S_ISREG(st.st_mode));
    assert_int_equal(st.st_mode & 07777, 0644);
    assert_int_equal(stat(path, &st), 0);
    assert_int_equal(st.st_mode & 07777, 0640);
    unlink(link);
    unlink(path);
    umask(old);
}

void test_cli_input_output_abort(void **state)
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

void test_cli_input_output_open_errors(void **state)
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

void test_cli_input_output_rename_fails(void **state)
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

void test_cli_input_output_stdout(void **state)
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

void test_cli_input_output_signal_cleanup(void **state)
{
    (void)state;
    expect_signal_cleanup(SIGTERM);
    expect_signal_cleanup(SIGINT);
    expect_signal_cleanup(SIGHUP);
}
