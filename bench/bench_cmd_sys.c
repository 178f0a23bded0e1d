/* `shardpsi bench`: the hardware limit S, peak memory, child processes and
 * machine facts; see bench_cmd.h. */
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <signal.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>
#if defined(__GLIBC__)
#include <malloc.h>
#endif

#include <openssl/ec.h>
#include <openssl/err.h>
#include <openssl/evp.h>
#include <openssl/crypto.h>

#include "bench_cmd.h"
#include "app_clock.h"
#include "app_util.h"

extern char **environ;

/* -------------------------------------------------------- the limit S */

/* A fresh P-256 key; `openssl speed` derives between two such keys. */
static EVP_PKEY *bsys_keygen(void)
{
    EVP_PKEY_CTX *kctx = EVP_PKEY_CTX_new_id(EVP_PKEY_EC, NULL);
    EVP_PKEY *key = NULL;

    if (kctx == NULL || EVP_PKEY_keygen_init(kctx) <= 0 ||
        EVP_PKEY_CTX_set_ec_paramgen_curve_nid(kctx, NID_X9_62_prime256v1) <= 0 ||
        EVP_PKEY_keygen(kctx, &key) <= 0) {
        EVP_PKEY_free(key);
        key = NULL;
    }
    EVP_PKEY_CTX_free(kctx);
    return key;
}

int psi_bench_ecdh_rate(double *rate, double seconds)
{
    EVP_PKEY *a = bsys_keygen(), *b = bsys_keygen();
    EVP_PKEY_CTX *ctx = a != NULL ? EVP_PKEY_CTX_new(a, NULL) : NULL;
    unsigned char secret[64];
    size_t len = sizeof secret;
    double t0, dt = 0;
    unsigned long count = 0;
    int rc = -1;

    *rate = 0;
    // One context with a fixed peer: each derive is one scalar
    // multiplication of the peer's point, exactly the loop of
    // `openssl speed ecdhp256`, so S is what OpenSSL reaches on one core.
    if (b == NULL || ctx == NULL || EVP_PKEY_derive_init(ctx) <= 0 ||
        EVP_PKEY_derive_set_peer(ctx, b) <= 0 ||
        EVP_PKEY_derive(ctx, NULL, &len) <= 0 || len > sizeof secret)
        goto done;
    t0 = psi_app_now_ms();
    do {
        size_t out_len = len;
        if (EVP_PKEY_derive(ctx, secret, &out_len) <= 0)
            goto done;
        count++;
        dt = (psi_app_now_ms() - t0) / 1000.0;
    } while (dt < seconds);
    *rate = (double)count / dt;
    rc = 0;
done:
    if (rc != 0)
        psi_app_error("bench: the ECDH measurement failed in OpenSSL");
    ERR_clear_error();
    OPENSSL_cleanse(secret, sizeof secret);
    EVP_PKEY_CTX_free(ctx);
    EVP_PKEY_free(a);
    EVP_PKEY_free(b);
    return rc;
}

const char *psi_bench_openssl_version(void)
{
    return OpenSSL_version(OPENSSL_VERSION);
}

/* Parses "... ecdh (nistp256)   0.0001s  14766.5" from `openssl speed`:
 * the last field of that line is the derivations per second. */
static double bsys_speed_line(const char *line)
{
    const char *p = strstr(line, "(nistp256)"), *last;
    char *end;
    double v;

    if (p == NULL || strstr(line, "ecdh") == NULL)
        return NAN;
    last = strrchr(line, ' ');
    if (last == NULL)
        return NAN;
    v = strtod(last + 1, &end);
    return end != last + 1 && v > 0 ? v : NAN;
}

void psi_bench_openssl_speed(double *rate, char *note, size_t cap)
{
    char path[1024], err[160], *line = NULL;
    char *argv[] = {path, "speed", "-seconds", "2", "ecdhp256", NULL};
    psi_bench_child c;
    size_t line_cap = 0;
    int status;

    *rate = NAN;
    note[0] = '\0';
    if (psi_bench_find_program(path, sizeof path, "openssl") != 0) {
        snprintf(note, cap, "no openssl program on PATH");
        return;
    }
    if (psi_bench_child_start(&c, argv, 1, err, sizeof err) != 0) {
        psi_bench_child_end(&c, 1);
        snprintf(note, cap, "%s", err);
        return;
    }
    fclose(c.to);  // it reads nothing
    c.to = NULL;
    while (getline(&line, &line_cap, c.from) > 0)
        if (isnan(*rate))
            *rate = bsys_speed_line(line);
    free(line);
    status = psi_bench_child_end(&c, 0);
    if (status != 0 || isnan(*rate)) {
        snprintf(note, cap, "%s speed ecdhp256 %s", path,
                 status != 0 ? "failed" : "printed no ecdh (nistp256) line");
        *rate = NAN;
    }
}

/* ------------------------------------------------------- peak memory */

/* Returns: the "VmRSS:" or "VmHWM:" line of /proc/self/status in KiB, or
 * -1. */
static long bsys_status_kib(const char *field)
{
    FILE *f = fopen("/proc/self/status", "r");
    char line[256];
    size_t n = strlen(field);
    long v = -1;

    if (f == NULL)
        return -1;
    while (fgets(line, sizeof line, f) != NULL)
        if (strncmp(line, field, n) == 0) {
            v = strtol(line + n, NULL, 10);
            break;
        }
    fclose(f);
    return v;
}

/* "5" resets VmHWM to the current RSS (Linux 4.0 and later). */
static int bsys_clear_refs(void)
{
    int fd = open("/proc/self/clear_refs", O_WRONLY);
    int ok;

    if (fd < 0)
        return -1;
    ok = write(fd, "5", 1) == 1;
    close(fd);
    return ok ? 0 : -1;
}

int psi_bench_mem_usable(void)
{
    return bsys_clear_refs() == 0 && bsys_status_kib("VmHWM:") >= 0;
}

long psi_bench_mem_begin(void)
{
#if defined(__GLIBC__)
    // Memory freed by earlier runs but kept by malloc would hide the
    // call's own growth.
    malloc_trim(0);
#endif
    if (bsys_clear_refs() != 0)
        return -1;
    return bsys_status_kib("VmRSS:");
}

double psi_bench_mem_end(long base)
{
    long hwm = base >= 0 ? bsys_status_kib("VmHWM:") : -1;

    if (hwm < 0)
        return NAN;
    return (double)(hwm > base ? hwm - base : 0) / 1024.0;
}

/* ----------------------------------------------------------- machine */

void psi_bench_cpu_model(char *out, size_t cap)
{
    FILE *f = fopen("/proc/cpuinfo", "r");
    char line[512], *p;

    snprintf(out, cap, "unknown");
    if (f == NULL)
        return;
    while (fgets(line, sizeof line, f) != NULL) {
        if (strncmp(line, "model name", 10) != 0 || (p = strchr(line, ':')) == NULL)
            continue;
        p += strspn(p + 1, " \t") + 1;
        p[strcspn(p, "\n")] = '\0';
        if (*p != '\0')
            snprintf(out, cap, "%s", p);
        break;
    }
    fclose(f);
}

size_t psi_bench_online_cpus(void)
{
    long n = sysconf(_SC_NPROCESSORS_ONLN);

    return n > 0 ? (size_t)n : 1;
}

/* ---------------------------------------------------- child processes */

int psi_bench_find_program(char *out, size_t cap, const char *name)
{
    const char *path = getenv("PATH"), *p;

    if (strchr(name, '/') != NULL) {
        snprintf(out, cap, "%s", name);
        return access(name, X_OK) == 0 ? 0 : -1;
    }
    for (p = path; p != NULL && *p != '\0';) {
        size_t n = strcspn(p, ":");
        int len;
        // An empty entry means the current directory.
        if (n == 0)
            len = snprintf(out, cap, "./%s", name);
        else
            len = snprintf(out, cap, "%.*s/%s", (int)n, p, name);
        if (len > 0 && (size_t)len < cap && access(out, X_OK) == 0)
            return 0;
        p += n + (p[n] == ':');
    }
    return -1;
}

/* A pipe whose ends close on exec: a later child must not inherit an
 * earlier child's pipe, or node would not see the end of its input while
 * that child lives.  Returns: 0, or -1 (the ends made are in fd). */
static int bsys_pipe(int fd[2])
{
    if (pipe(fd) != 0)
        return -1;
    for (int k = 0; k < 2; k++)
        if (fcntl(fd[k], F_SETFD, FD_CLOEXEC) != 0)
            return -1;
    return 0;
}

/* Starts argv[0] reading in_fd and writing out_fd.  Returns: 0 or an
 * errno value. */
static int bsys_spawn(pid_t *pid, char *const argv[], int in_fd, int out_fd, int quiet_err)
{
    posix_spawn_file_actions_t fa;
    int e = posix_spawn_file_actions_init(&fa);

    if (e != 0)
        return e;
    // dup2 clears close-on-exec on the copies: only 0, 1 and 2 stay open.
    e = posix_spawn_file_actions_adddup2(&fa, in_fd, 0);
    if (e == 0)
        e = posix_spawn_file_actions_adddup2(&fa, out_fd, 1);
    if (e == 0 && quiet_err)
        e = posix_spawn_file_actions_addopen(&fa, 2, "/dev/null", O_WRONLY, 0);
    if (e == 0)
        e = posix_spawn(pid, argv[0], &fa, NULL, argv, environ);
    posix_spawn_file_actions_destroy(&fa);
    return e;
}

int psi_bench_child_start(psi_bench_child *c, char *const argv[], int quiet_err,
                        char *err, size_t err_len)
{
    int in[2] = {-1, -1}, out[2] = {-1, -1}, rc = -1, e;

    memset(c, 0, sizeof *c);
    if (bsys_pipe(in) != 0 || bsys_pipe(out) != 0) {
        snprintf(err, err_len, "cannot make a pipe: %s", strerror(errno));
        goto done;
    }
    if ((e = bsys_spawn(&c->pid, argv, in[0], out[1], quiet_err)) != 0) {
        c->pid = 0;
        snprintf(err, err_len, "cannot start %s: %s", argv[0], strerror(e));
        goto done;
    }
    // The FILEs own the parent's ends from here; the child's are closed.
    if ((c->to = fdopen(in[1], "w")) != NULL)
        in[1] = -1;
    if ((c->from = fdopen(out[0], "r")) != NULL)
        out[0] = -1;
    if (c->to == NULL || c->from == NULL)
        snprintf(err, err_len, "out of memory");
    else
        rc = 0;
done:
    for (int k = 0; k < 2; k++) {
        if (in[k] >= 0)
            close(in[k]);
        if (out[k] >= 0)
            close(out[k]);
    }
    return rc;
}

int psi_bench_child_end(psi_bench_child *c, int kill_it)
{
    int status = 0;
    pid_t w;

    if (c->to != NULL)
        fclose(c->to);
    if (kill_it && c->pid > 0)
        kill(c->pid, SIGTERM);
    if (c->from != NULL)
        fclose(c->from);
    c->to = c->from = NULL;
    if (c->pid <= 0)
        return -1;
    do
        w = waitpid(c->pid, &status, 0);
    while (w < 0 && errno == EINTR);
    c->pid = 0;
    if (w < 0)
        return -1;
    return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}
