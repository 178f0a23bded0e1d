/* Output files that appear only when complete; see app_output.h. */
#define _GNU_SOURCE /* O_TMPFILE, AT_EMPTY_PATH */
#include "app_output.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define OUTPUT_TMP_SUFFIX ".tmp.XXXXXX"

/* The temporary files a fatal signal removes: those of the outputs open at
 * the time (a step may write two, such as a setup and its permutation), in
 * OUTPUT_SIG_SLOTS slots.  The handler reads a slot's name only while its
 * flag is set, and the main code clears the flag before changing the name
 * (the signal fences keep the compiler from moving the copy across it). */
#define OUTPUT_SIG_SLOTS 4
static char output_sig_tmp[OUTPUT_SIG_SLOTS][4096];
static volatile sig_atomic_t output_sig_armed[OUTPUT_SIG_SLOTS];

/* Makes tmp a name a signal removes (not if it is too long to keep or every
 * slot is taken). */
static void output_sig_register(const char *tmp)
{
    size_t n = strlen(tmp);

    if (n >= sizeof output_sig_tmp[0])
        return;
    for (int i = 0; i < OUTPUT_SIG_SLOTS; i++) {
        if (output_sig_armed[i])
            continue;
        memcpy(output_sig_tmp[i], tmp, n + 1);
        atomic_signal_fence(memory_order_seq_cst);
        output_sig_armed[i] = 1;
        return;
    }
}

/* Forgets tmp.  Called once the file is gone or renamed, so a signal in
 * between at worst unlinks a missing name. */
static void output_sig_unregister(const char *tmp)
{
    for (int i = 0; i < OUTPUT_SIG_SLOTS; i++) {
        if (output_sig_armed[i] && strcmp(output_sig_tmp[i], tmp) == 0) {
            output_sig_armed[i] = 0;
            atomic_signal_fence(memory_order_seq_cst);
            return;
        }
    }
}

/* Removes the registered temporary files, then dies of the same signal with
 * the default action (so the exit status shows it).  Async-signal-safe:
 * only unlink, signal and raise; the raised signal stays blocked until the
 * handler returns. */
static void output_on_signal(int sig)
{
    int saved = errno;

    for (int i = 0; i < OUTPUT_SIG_SLOTS; i++)
        if (output_sig_armed[i])
            unlink(output_sig_tmp[i]);
    signal(sig, SIG_DFL);
    raise(sig);
    errno = saved;
}

void psi_app_output_cleanup_on_signal(void)
{
    static const int sigs[] = {SIGINT, SIGTERM, SIGHUP};
    size_t i;

    for (i = 0; i < sizeof sigs / sizeof sigs[0]; i++) {
        struct sigaction sa, old;

        // A signal ignored at start (nohup) stays ignored.
        if (sigaction(sigs[i], NULL, &old) == 0 && old.sa_handler == SIG_IGN)
            continue;
        memset(&sa, 0, sizeof sa);
        sa.sa_handler = output_on_signal;
        sigemptyset(&sa.sa_mask);
        sigaction(sigs[i], &sa, NULL);
    }
}

/* Writes "<path>: <what>: <strerror(e)>" into err and returns -1. */
static int output_fail(char *err, size_t err_len, const char *path, const char *what,
                       int e)
{
    if (err != NULL && err_len > 0)
        snprintf(err, err_len, "%s: %s: %s", path, what, strerror(e));
    return -1;
}

/* Frees the names and zeroes *o (the file is already closed or stdout). */
static void output_release(psi_app_output *o)
{
    free(o->path);
    free(o->tmp);
    memset(o, 0, sizeof *o);
}

/* Returns: the mode fopen would give a new file, 0666 minus the umask
 * (which can only be read by setting it, so it is set back at once). */
static mode_t output_mode(void)
{
    mode_t mask = umask(0);

    umask(mask);
    return 0666 & ~mask;
}

/* Opens a file without a name in the target's directory (O_TMPFILE), so
 * that nothing is left even by SIGKILL; commit gives it its name.
 * Returns: 0, or an errno value (then the named temporary file is used). */
static int output_create_anon(psi_app_output *o)
{
#ifdef O_TMPFILE
    const char *slash = strrchr(o->path, '/');
    char *dir = slash == NULL ? strdup(".")
                              : strndup(o->path, slash == o->path ? 1 : (size_t)(slash - o->path));
    int fd, e;

    if (dir == NULL)
        return ENOMEM;
    fd = open(dir, O_TMPFILE | O_WRONLY | O_CLOEXEC, 0666);
    e = errno;
    free(dir);
    if (fd < 0)
        return e;
    // open applied the umask already, as fopen would.
    if ((o->f = fdopen(fd, "w")) != NULL) {
        o->anon = 1;
        return 0;
    }
    e = errno;
    close(fd);
    return e;
#else
    (void)o;
    return EOPNOTSUPP;
#endif
}

/* Links an O_TMPFILE output to o->tmp (a fresh name).  Returns: 0 or an
 * errno value. */
static int output_link_anon(psi_app_output *o)
{
    char proc[64];
    int fd = fileno(o->f), tfd = mkstemp(o->tmp);

    if (tfd < 0)
        return errno;
    // The name was free a moment ago: take it for the file (its name is
    // registered for signals only from here to the rename).
    close(tfd);
    unlink(o->tmp);
    output_sig_register(o->tmp);
    snprintf(proc, sizeof proc, "/proc/self/fd/%d", fd);
    if (linkat(AT_FDCWD, proc, AT_FDCWD, o->tmp, AT_SYMLINK_FOLLOW) == 0)
        return 0;
#ifdef AT_EMPTY_PATH
    if (linkat(fd, "", AT_FDCWD, o->tmp, AT_EMPTY_PATH) == 0)
        return 0;
#endif
    return errno;
}

/* Creates o->tmp with mkstemp and opens it as o->f.  Returns: 0 or an errno
 * value, with nothing left on disk. */
static int output_create_tmp(psi_app_output *o)
{
    if (output_create_anon(o) == 0)
        return 0;
    int fd = mkstemp(o->tmp), e;

    if (fd < 0)
        return errno;
    if (fchmod(fd, output_mode()) == 0 && (o->f = fdopen(fd, "w")) != NULL)
        return 0;
    e = errno;
    close(fd);
    unlink(o->tmp);
    return e;
}

/* Gives the new file the permission bits of the regular file it will
 * replace (so that replacing a 0600 result never leaves a 0644 one); a new
 * target, or a symbolic link (replaced, not followed), keeps the umask's
 * mode.  Set-id and sticky bits are not carried over.  Returns: 0 or an
 * errno value. */
static int output_keep_mode(psi_app_output *o)
{
    struct stat st;

    if (lstat(o->path, &st) != 0 || !S_ISREG(st.st_mode))
        return 0;
    return fchmod(fileno(o->f), st.st_mode & 0777) == 0 ? 0 : errno;
}

int psi_app_output_open(psi_app_output *o, const char *path, char *err, size_t err_len)
{
    struct stat st;
    int e;

    memset(o, 0, sizeof *o);
    if (strcmp(path, "-") == 0) {
        o->f = stdout;
        return 0;
    }
    // rename() would refuse too, but only after all the work.
    if (stat(path, &st) == 0 && S_ISDIR(st.st_mode))
        return output_fail(err, err_len, path, "cannot write", EISDIR);
    o->path = strdup(path);
    o->tmp = malloc(strlen(path) + sizeof OUTPUT_TMP_SUFFIX);
    if (o->path == NULL || o->tmp == NULL) {
        output_release(o);
        return output_fail(err, err_len, path, "cannot write", ENOMEM);
    }
    memcpy(o->tmp, path, strlen(path));
    memcpy(o->tmp + strlen(path), OUTPUT_TMP_SUFFIX, sizeof OUTPUT_TMP_SUFFIX);
    e = output_create_tmp(o);
    if (e != 0) {
        output_release(o);
        return output_fail(err, err_len, path, "cannot create a temporary file "
                           "beside it", e);
    }
    if ((e = output_keep_mode(o)) != 0) {
        psi_app_output_abort(o);
        return output_fail(err, err_len, path, "cannot give the new file the mode of the "
                           "one it replaces", e);
    }
    if (!o->anon)
        output_sig_register(o->tmp);
    return 0;
}

/* Flushes, syncs and closes o->f (an O_TMPFILE one linked to o->tmp
 * first).  Returns: 0 or the errno value of the first failure (EIO for an
 * earlier write error whose errno is lost). */
static int output_close(psi_app_output *o)
{
    int e = 0;

    if (fflush(o->f) != 0)
        e = errno;
    else if (ferror(o->f))
        e = EIO;
    else if (fsync(fileno(o->f)) != 0 && errno != EINVAL)
        e = errno;  // EINVAL: a file system without fsync; nothing to do
    if (e == 0 && o->anon)
        e = output_link_anon(o);
    if (fclose(o->f) != 0 && e == 0)
        e = errno;
    o->f = NULL;
    return e;
}

/* Commit for stdout: everything written must have reached it. */
static int output_commit_stdout(psi_app_output *o, char *err, size_t err_len)
{
    int e = 0;

    if (fflush(o->f) != 0)
        e = errno;
    else if (ferror(o->f))
        e = EIO;
    output_release(o);
    return e == 0 ? 0 : output_fail(err, err_len, "stdout", "cannot write", e);
}

int psi_app_output_commit(psi_app_output *o, char *err, size_t err_len)
{
    const char *what = "cannot write";
    int e;

    if (o->f == NULL)
        return output_fail(err, err_len, "output", "not open", EBADF);
    if (o->tmp == NULL)
        return output_commit_stdout(o, err, err_len);
    e = output_close(o);
    if (e == 0 && rename(o->tmp, o->path) != 0) {
        e = errno;
        what = "cannot rename the temporary file to it";
    }
    if (e != 0)
        unlink(o->tmp);
    output_sig_unregister(o->tmp);
    if (e != 0)
        output_fail(err, err_len, o->path, what, e);
    output_release(o);
    return e == 0 ? 0 : -1;
}

int psi_app_output_sink(void *arg, const uint8_t *bytes, size_t len)
{
    return fwrite(bytes, 1, len, arg) == len ? 0 : 1;
}

void psi_app_output_abort(psi_app_output *o)
{
    if (o == NULL)
        return;
    if (o->tmp != NULL) {
        if (o->f != NULL)
            fclose(o->f);
        if (!o->anon)
            unlink(o->tmp);
        output_sig_unregister(o->tmp);
    }
    output_release(o);
}
