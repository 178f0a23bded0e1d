/* net/net_frame.c over loopback TCP: framing, keepalives, timeouts, the
 * peer's errors and closes (and net_progress.c's watch for a peer gone).  Pairs are made in one process (listen on
 * 127.0.0.1:0, connect, accept); where both ends must run at once, the peer
 * end runs in a forked child, which reports by its exit status. */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>

#include "app_clock.h"
#include "app_progress.h"
#include "net.h"
#include "net_progress.h"

#define TN_MIB ((size_t)1 << 20)
#define TN_BIG ((size_t)64 << 20) // more than loopback socket buffers hold

static void tn_sleep_ms(int ms)
{
    struct timespec ts = { ms / 1000, (long)(ms % 1000) * 1000000L };

    while (nanosleep(&ts, &ts) != 0 && errno == EINTR) {
    }
}

/* Bytes [off, off + len) of the test pattern `seed` into buf: each 8-byte
 * word is a hash of its index. */
static void tn_pattern(uint8_t *buf, size_t off, size_t len, uint64_t seed)
{
    uint64_t x = 0;

    for (size_t i = off; i < off + len; i++) {
        if (i == off || i % 8 == 0) {
            x = (uint64_t)(i / 8) * 0x9e3779b97f4a7c15u + seed + 1;
            x ^= x >> 31;
            x *= 0xbf58476d1ce4e5b9u;
            x ^= x >> 29;
        }
        buf[i - off] = (uint8_t)(x >> (8 * (i % 8)));
    }
}

static void tn_fill(uint8_t *buf, size_t len, uint64_t seed)
{
    tn_pattern(buf, 0, len, seed);
}

/* Returns: whether buf holds the pattern `seed`. */
static int tn_matches(const uint8_t *buf, size_t len, uint64_t seed)
{
    uint8_t want[4096];

    for (size_t off = 0; off < len; off += sizeof want) {
        size_t n = len - off < sizeof want ? len - off : sizeof want;

        tn_pattern(want, off, n, seed);
        if (memcmp(buf + off, want, n) != 0)
            return 0;
    }
    return 1;
}

/* A connected pair over 127.0.0.1: *srv accepted, *cli connected. */
static void tn_pair(psi_net_conn *srv, psi_net_conn *cli, int timeout_ms)
{
    char bound[64], err[256];
    int lfd;

    assert_int_equal(psi_net_listen(&lfd, bound, sizeof bound, "127.0.0.1:0", err,
                                        sizeof err), 0);
    assert_int_equal(psi_net_connect(cli, bound, timeout_ms), 0);
    assert_int_equal(psi_net_accept(srv, lfd, timeout_ms), 0);
    close(lfd);
    assert_string_equal(cli->peer, bound);
    assert_int_equal(strncmp(srv->peer, "127.0.0.1:", 10), 0);
}

static void tn_close_pair(psi_net_conn *a, psi_net_conn *b)
{
    psi_net_close(b);
    psi_net_close(a);
    psi_net_close(a); // twice is fine
}

/* Writes all bytes to fd, bypassing the framing (a hand-made peer). */
static int tn_raw_write(int fd, const void *buf, size_t len)
{
    const uint8_t *p = buf;

    while (len > 0) {
        struct pollfd pfd = { .fd = fd, .events = POLLOUT };
        ssize_t n = send(fd, p, len, MSG_NOSIGNAL);

        if (n > 0) {
            p += n;
            len -= (size_t)n;
        } else if (n < 0 && errno != EAGAIN && errno != EINTR) {
            return -1;
        } else if (n < 0 && errno == EAGAIN && poll(&pfd, 1, 5000) <= 0) {
            return -1;
        }
    }
    return 0;
}

/* Appends a frame header to buf at *at. */
static void tn_header(uint8_t *buf, size_t *at, int type, uint64_t len)
{
    buf[(*at)++] = (uint8_t)type;
    for (int i = 7; i >= 0; i--)
        buf[(*at)++] = (uint8_t)(len >> (8 * i));
}

/* Asserts that err contains needle, printing both when it does not. */
static void tn_err_has(const char *err, const char *needle)
{
    if (strstr(err, needle) == NULL)
        fail_msg("message \"%s\" lacks \"%s\"", err, needle);
}

/* The peer of a forked test: runs on its end, returns an exit status. */
typedef int (*tn_peer_fn)(psi_net_conn *c, void *arg);

#define TN_PEER_CHECK(c, cond)                                                          \
    do {                                                                               \
        if (!(cond)) {                                                                 \
            fprintf(stderr, "peer, line %d: %s failed (%s)\n", __LINE__, #cond,        \
                    (c)->err);                                                         \
            return 1;                                                                  \
        }                                                                              \
    } while (0)

/* Runs fn on `theirs` in a child process; the parent keeps `mine`. */
static pid_t tn_spawn(psi_net_conn *mine, psi_net_conn *theirs, tn_peer_fn fn, void *arg)
{
    pid_t pid;

    fflush(stdout);
    fflush(stderr);
    pid = fork();
    assert_true(pid >= 0);
    if (pid == 0) {
        int rc;

        close(mine->fd);
        rc = fn(theirs, arg);
        psi_net_close(theirs);
        _exit(rc);
    }
    close(theirs->fd);
    theirs->fd = -1;
    return pid;
}

static void tn_reap(pid_t pid)
{
    int st = 0;

    assert_int_equal(waitpid(pid, &st, 0), pid);
    assert_true(WIFEXITED(st));
    assert_int_equal(WEXITSTATUS(st), 0);
}

/* What progress calls looked like. */
typedef struct tn_progress {
    size_t calls;
    uint64_t done, total;
    int backwards;
} tn_progress;

static void tn_on_progress(void *arg, uint64_t done, uint64_t total)
{
    tn_progress *p = arg;

    p->backwards |= p->calls > 0 && done < p->done;
    p->calls++;
    p->done = done;
    p->total = total;
}

static void tn_progress_ok(const tn_progress *p, size_t len)
{
    assert_false(p->backwards);
    assert_true(p->calls >= 1 && p->calls <= len / TN_MIB + 2);
    assert_true(p->done == len && p->total == len);
}

static void test_cli_net_parse_addr(void **state)
{
    static const char *const good[][3] = {
        { "127.0.0.1:5000", "127.0.0.1", "5000" }, { "[::1]:0", "::1", "0" },
        { "localhost:65535", "localhost", "65535" }, { "[fe80::1%lo]:7", "fe80::1%lo", "7" },
        { "0.0.0.0:00080", "0.0.0.0", "00080" },
    };
    static const char *const bad[][2] = {
        { "localhost", "missing the port" }, { "", "missing the port" },
        { ":80", "missing the host" }, { "[]:80", "missing the host" },
        { "h:", "the port must be" }, { "h:65536", "the port must be" },
        { "h:-1", "the port must be" }, { "h:1x", "the port must be" },
        { "h:123456", "the port must be" }, { "h: 80", "the port must be" },
        { "::1:80", "in brackets" }, { "[::1]80", "expected ':'" },
        { "[::1", "missing the ']'" }, { "[::1]", "missing the port" },
    };
    char host[64], port[8], err[256];

    (void)state;
    for (size_t i = 0; i < sizeof good / sizeof good[0]; i++) {
        assert_int_equal(psi_net_parse_addr(host, sizeof host, port, sizeof port,
                                                good[i][0], err, sizeof err), 0);
        assert_string_equal(host, good[i][1]);
        assert_string_equal(port, good[i][2]);
    }
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        assert_int_equal(psi_net_parse_addr(host, sizeof host, port, sizeof port,
                                                bad[i][0], err, sizeof err),
                         PSI_NET_EADDR);
        tn_err_has(err, bad[i][1]);
        assert_string_equal(host, "");
    }
    assert_int_equal(psi_net_parse_addr(host, sizeof host, port, sizeof port, "localhost",
                                            err, sizeof err), PSI_NET_EADDR);
    assert_string_equal(err, "'localhost' is not HOST:PORT (missing the port)");
    assert_int_equal(psi_net_parse_addr(host, 4, port, sizeof port, "host:1", err,
                                            sizeof err), PSI_NET_EADDR);
    tn_err_has(err, "too long");
}

static void test_cli_net_frame_names(void **state)
{
    (void)state;
    assert_string_equal(psi_net_frame_name(PSI_NET_FRAME_SETUP), "setup");
    assert_string_equal(psi_net_frame_name(PSI_NET_FRAME_REQUEST), "request");
    assert_string_equal(psi_net_frame_name(PSI_NET_FRAME_RESPONSE), "response");
    assert_string_equal(psi_net_frame_name(PSI_NET_FRAME_ERROR), "error");
    assert_string_equal(psi_net_frame_name(PSI_NET_FRAME_KEEPALIVE), "keepalive");
    assert_string_equal(psi_net_frame_name(0), "unknown");
    assert_string_equal(psi_net_frame_name(77), "unknown");
}

static void test_cli_net_listen_and_connect_errors(void **state)
{
    char bound[64], err[256], want[160];
    psi_net_conn c;
    int lfd, lfd2;

    (void)state;
    assert_int_equal(psi_net_listen(&lfd, bound, sizeof bound, "127.0.0.1:0", err,
                                        sizeof err), 0);
    assert_int_equal(strncmp(bound, "127.0.0.1:", 10), 0);
    assert_true(atoi(bound + 10) > 0);
    // the port is taken by a listener: SO_REUSEADDR does not share it
    assert_int_equal(psi_net_listen(&lfd2, err, sizeof err, bound, err, sizeof err),
                     PSI_NET_ELISTEN);
    assert_int_equal(lfd2, -1);
    snprintf(want, sizeof want, "%s: cannot bind: %s", bound, strerror(EADDRINUSE));
    assert_string_equal(err, want);
    close(lfd);
    // nobody listens there any more
    assert_int_equal(psi_net_connect(&c, bound, 2000), PSI_NET_ECONNECT);
    assert_int_equal(c.fd, -1);
    snprintf(want, sizeof want, "cannot connect to %s: %s", bound, strerror(ECONNREFUSED));
    assert_string_equal(c.err, want);
    psi_net_close(&c);
    assert_int_equal(psi_net_connect(&c, "127.0.0.1", 2000), PSI_NET_EADDR);
    assert_string_equal(c.err, "'127.0.0.1' is not HOST:PORT (missing the port)");
    assert_int_equal(psi_net_listen(&lfd, bound, sizeof bound, "127.0.0.1:99999", err,
                                        sizeof err), PSI_NET_EADDR);
    assert_int_equal(lfd, -1);
}

/* The echo peer of the round trip: returns each request as a response. */
static int tn_echo_peer(psi_net_conn *c, void *arg)
{
    const size_t *sizes = arg;
    uint8_t *buf;
    size_t len;

    for (size_t i = 0; sizes[i] != SIZE_MAX; i++) {
        tn_progress p = { 0 };

        TN_PEER_CHECK(c, psi_net_recv(c, PSI_NET_FRAME_REQUEST, TN_BIG, &buf, &len,
                                          tn_on_progress, &p) == 0);
        TN_PEER_CHECK(c, len == sizes[i] && tn_matches(buf, len, i));
        TN_PEER_CHECK(c, p.done == len && !p.backwards);
        TN_PEER_CHECK(c, psi_net_send(c, PSI_NET_FRAME_RESPONSE, buf, len, NULL,
                                          NULL) == 0);
        free(buf);
    }
    TN_PEER_CHECK(c, psi_net_recv(c, PSI_NET_FRAME_DONE, 0, &buf, &len, NULL, NULL) == 0);
    free(buf);
    return 0;
}

static void test_cli_net_round_trips(void **state)
{
    static const size_t sizes[] = { 0, 1, 9, TN_MIB + 3, TN_BIG, SIZE_MAX };
    uint8_t *out = malloc(TN_BIG), *in;
    psi_net_conn a, b;
    size_t len;
    pid_t pid;

    (void)state;
    assert_non_null(out);
    tn_pair(&a, &b, 10000);
    pid = tn_spawn(&a, &b, tn_echo_peer, (void *)sizes);
    for (size_t i = 0; sizes[i] != SIZE_MAX; i++) {
        tn_progress ps = { 0 }, pr = { 0 };

        tn_fill(out, sizes[i], i);
        assert_int_equal(psi_net_send(&a, PSI_NET_FRAME_REQUEST, out, sizes[i],
                                          tn_on_progress, &ps), 0);
        tn_progress_ok(&ps, sizes[i]);
        assert_int_equal(psi_net_recv(&a, PSI_NET_FRAME_RESPONSE, TN_BIG, &in, &len,
                                          tn_on_progress, &pr), 0);
        tn_progress_ok(&pr, sizes[i]);
        assert_non_null(in);
        assert_int_equal(len, sizes[i]);
        if (len > 0)
            assert_memory_equal(in, out, len);
        free(in);
    }
    assert_int_equal(psi_net_send(&a, PSI_NET_FRAME_DONE, NULL, 0, NULL, NULL), 0);
    tn_reap(pid);
    psi_net_close(&a);
    free(out);
}

/* A nameless temporary file holding len bytes of buf. */
static int tn_file_with(const uint8_t *buf, size_t len)
{
    FILE *f = tmpfile();
    int fd;

    assert_non_null(f);
    fd = dup(fileno(f));
    fclose(f);
    assert_true(fd >= 0);
    for (size_t at = 0; at < len;) {
        ssize_t w = write(fd, buf + at, len - at);
        assert_true(w > 0);
        at += (size_t)w;
    }
    return fd;
}

/* Frames sent from and received into files: the same bytes as in memory,
 * through the memory path's echo peer, whatever the offset of fd. */
static void test_cli_net_round_trips_through_files(void **state)
{
    static const size_t sizes[] = { 0, 1, 9, TN_MIB + 3, TN_BIG, SIZE_MAX };
    uint8_t *out = malloc(TN_BIG), *in = malloc(TN_BIG);
    psi_net_conn a, b;
    pid_t pid;

    (void)state;
    assert_non_null(out);
    assert_non_null(in);
    tn_pair(&a, &b, 10000);
    pid = tn_spawn(&a, &b, tn_echo_peer, (void *)sizes);
    for (size_t i = 0; sizes[i] != SIZE_MAX; i++) {
        tn_progress ps = { 0 }, pr = { 0 };
        uint64_t len = 7;
        int src, dst = tn_file_with(NULL, 0);

        tn_fill(out, sizes[i], i);
        src = tn_file_with(out, sizes[i]); // its offset at the end: pread ignores it
        assert_int_equal(psi_net_send_fd(&a, PSI_NET_FRAME_REQUEST, src, sizes[i],
                                         tn_on_progress, &ps), 0);
        tn_progress_ok(&ps, sizes[i]);
        assert_int_equal(psi_net_recv_fd(&a, PSI_NET_FRAME_RESPONSE, TN_BIG, dst, &len,
                                         tn_on_progress, &pr), 0);
        tn_progress_ok(&pr, sizes[i]);
        assert_int_equal(len, sizes[i]);
        assert_int_equal(pread(dst, in, TN_BIG, 0), (ssize_t)sizes[i]);
        if (len > 0)
            assert_memory_equal(in, out, len);
        close(src);
        close(dst);
    }
    assert_int_equal(psi_net_send(&a, PSI_NET_FRAME_DONE, NULL, 0, NULL, NULL), 0);
    tn_reap(pid);
    psi_net_close(&a);
    free(out);
    free(in);
}

/* The peer of test_cli_net_file_errors: one SETUP frame of 3 MiB + 1. */
static int tn_setup_peer(psi_net_conn *c, void *arg)
{
    size_t n = 3 * TN_MIB + 1;
    uint8_t *buf = calloc(n, 1);

    (void)arg;
    TN_PEER_CHECK(c, buf != NULL);
    // Whether it all goes out depends on when the test side gives up.
    (void)psi_net_send(c, PSI_NET_FRAME_SETUP, buf, n, NULL, NULL);
    free(buf);
    return 0;
}

/* A file that cannot be read or written is PSI_NET_EFILE with a message;
 * a frame above the limit is refused before a byte is written. */
static void test_cli_net_file_errors(void **state)
{
    uint8_t small[16] = { 0 };
    psi_net_conn a, b;
    uint64_t len = 5;
    pid_t pid;
    int fd = tn_file_with(small, sizeof small), full = open("/dev/full", O_WRONLY);

    (void)state;
    // A file shorter than the frame: refused before a byte went out, the
    // connection still usable; once the header and a slice went out, broken.
    for (int late = 0; late <= 1; late++) {
        uint8_t *big;
        int src;

        tn_pair(&a, &b, 10000);
        pid = tn_spawn(&a, &b, tn_setup_peer, NULL);
        // Made after the fork: a block the peer inherits and never frees
        // would be a leak in its process (valgrind traces children).
        big = calloc(TN_MIB + 5, 1);
        assert_non_null(big);
        src = late ? tn_file_with(big, TN_MIB + 5) : fd;
        assert_int_equal(psi_net_send_fd(&a, PSI_NET_FRAME_REQUEST, src, 2 * TN_MIB, NULL,
                                         NULL), PSI_NET_EFILE);
        assert_non_null(strstr(a.err, "shorter than the frame"));
        assert_int_equal(a.broken, late);
        psi_net_close(&a);
        tn_reap(pid);
        if (late)
            close(src);
        free(big);
    }

    // Above the limit: refused from the header, nothing written.
    tn_pair(&a, &b, 10000);
    pid = tn_spawn(&a, &b, tn_setup_peer, NULL);
    assert_int_equal(psi_net_recv_fd(&a, PSI_NET_FRAME_SETUP, TN_MIB, fd, &len, NULL, NULL),
                     PSI_NET_EFRAME);
    assert_int_equal(len, 0);
    assert_non_null(strstr(a.err, "is larger than the limit"));
    assert_int_equal(lseek(fd, 0, SEEK_END), (off_t)sizeof small);
    psi_net_close(&a);
    tn_reap(pid);

    // A full disk.
    assert_true(full >= 0);
    tn_pair(&a, &b, 10000);
    pid = tn_spawn(&a, &b, tn_setup_peer, NULL);
    assert_int_equal(psi_net_recv_fd(&a, PSI_NET_FRAME_SETUP, 4 * TN_MIB, full, &len, NULL,
                                     NULL), PSI_NET_EFILE);
    assert_non_null(strstr(a.err, "No space left on device"));
    assert_non_null(strstr(a.err, "setup frame"));
    psi_net_close(&a);
    tn_reap(pid);
    close(full);
    close(fd);
}

/* Builds the stream of test_cli_net_keepalives_skipped.  Returns: length. */
static size_t tn_keepalive_stream(uint8_t *s)
{
    size_t n = 0;

    tn_header(s, &n, PSI_NET_FRAME_KEEPALIVE, 0);
    tn_header(s, &n, PSI_NET_FRAME_KEEPALIVE, 0);
    tn_header(s, &n, PSI_NET_FRAME_SETUP, 5);
    memcpy(s + n, "hello", 5), n += 5;
    tn_header(s, &n, PSI_NET_FRAME_KEEPALIVE, 0);
    tn_header(s, &n, PSI_NET_FRAME_REQUEST, 0);
    tn_header(s, &n, PSI_NET_FRAME_KEEPALIVE, 0);
    tn_header(s, &n, PSI_NET_FRAME_RESPONSE, 9);
    memcpy(s + n, "123456789", 9), n += 9;
    tn_header(s, &n, PSI_NET_FRAME_KEEPALIVE, 0);
    tn_header(s, &n, PSI_NET_FRAME_KEEPALIVE, 0);
    tn_header(s, &n, PSI_NET_FRAME_DONE, 0);
    return n;
}

/* The drip peer: the stream a few bytes at a time, so headers split. */
static int tn_drip_peer(psi_net_conn *c, void *arg)
{
    uint8_t s[256];
    size_t n = tn_keepalive_stream(s);

    (void)arg;
    for (size_t at = 0; at < n; at += 4) {
        TN_PEER_CHECK(c, tn_raw_write(c->fd, s + at, n - at < 4 ? n - at : 4) == 0);
        tn_sleep_ms(2);
    }
    return 0;
}

/* Receives the frames of tn_keepalive_stream. */
static void tn_expect_stream(psi_net_conn *a)
{
    uint8_t *p;
    size_t len;

    assert_int_equal(psi_net_recv(a, PSI_NET_FRAME_SETUP, 100, &p, &len, NULL, NULL), 0);
    assert_int_equal(len, 5);
    assert_memory_equal(p, "hello", 5);
    free(p);
    assert_int_equal(psi_net_recv(a, PSI_NET_FRAME_REQUEST, 100, &p, &len, NULL, NULL), 0);
    assert_int_equal(len, 0);
    assert_non_null(p);
    free(p);
    assert_int_equal(psi_net_recv(a, PSI_NET_FRAME_RESPONSE, 9, &p, &len, NULL, NULL), 0);
    assert_int_equal(len, 9);
    assert_memory_equal(p, "123456789", 9);
    free(p);
    assert_int_equal(psi_net_recv(a, PSI_NET_FRAME_DONE, 0, &p, &len, NULL, NULL), 0);
    free(p);
}

static void test_cli_net_keepalives_skipped(void **state)
{
    psi_net_conn a, b;
    uint8_t s[256];
    size_t n = tn_keepalive_stream(s);
    pid_t pid;

    (void)state;
    // all at once
    tn_pair(&a, &b, 5000);
    assert_int_equal(tn_raw_write(b.fd, s, n), 0);
    tn_expect_stream(&a);
    tn_close_pair(&a, &b);
    // dripped from another process
    tn_pair(&a, &b, 5000);
    pid = tn_spawn(&a, &b, tn_drip_peer, NULL);
    tn_expect_stream(&a);
    tn_reap(pid);
    psi_net_close(&a);
}

/* The busy peer: keepalives every 200 ms for 1.5 s while not reading, then a
 * frame sent before reading ours (it must wait in the sender's buffer), then
 * our big request, then DONE. */
static int tn_busy_peer(psi_net_conn *c, void *arg)
{
    double t0 = psi_app_now_ms();
    uint8_t *buf;
    size_t len;

    (void)arg;
    while (psi_app_now_ms() - t0 < 1500) {
        psi_net_keepalive(c, 200);
        TN_PEER_CHECK(c, !c->broken);
        tn_sleep_ms(20);
    }
    TN_PEER_CHECK(c, psi_net_send(c, PSI_NET_FRAME_RESPONSE, (const uint8_t *)"early", 5,
                                      NULL, NULL) == 0);
    TN_PEER_CHECK(c, psi_net_recv(c, PSI_NET_FRAME_REQUEST, TN_BIG, &buf, &len, NULL,
                                      NULL) == 0);
    TN_PEER_CHECK(c, len == TN_BIG && tn_matches(buf, len, 7));
    free(buf);
    TN_PEER_CHECK(c, psi_net_send(c, PSI_NET_FRAME_DONE, NULL, 0, NULL, NULL) == 0);
    return 0;
}

static void test_cli_net_keepalives_keep_a_send_alive(void **state)
{
    uint8_t *out = malloc(TN_BIG), *in;
    psi_net_conn a, b;
    double t0;
    size_t len;
    pid_t pid;

    (void)state;
    assert_non_null(out);
    tn_fill(out, TN_BIG, 7);
    tn_pair(&a, &b, 1000);
    b.timeout_ms = 10000;
    pid = tn_spawn(&a, &b, tn_busy_peer, NULL);
    t0 = psi_app_now_ms();
    assert_int_equal(psi_net_send(&a, PSI_NET_FRAME_REQUEST, out, TN_BIG, NULL, NULL), 0);
    // blocked for longer than the timeout: only the keepalives kept it going
    assert_true(psi_app_now_ms() - t0 > 1200);
    a.timeout_ms = 10000; // the peer now checks 64 MiB, maybe under valgrind
    assert_int_equal(psi_net_recv(&a, PSI_NET_FRAME_RESPONSE, 100, &in, &len, NULL, NULL),
                     0);
    assert_int_equal(len, 5);
    assert_memory_equal(in, "early", 5);
    free(in);
    assert_int_equal(psi_net_recv(&a, PSI_NET_FRAME_DONE, 0, &in, &len, NULL, NULL), 0);
    free(in);
    tn_reap(pid);
    psi_net_close(&a);
    free(out);
}

static void test_cli_net_timeouts(void **state)
{
    uint8_t *big = calloc(1, TN_BIG), *p = (uint8_t *)"x", hdr[32];
    char want[256];
    psi_net_conn a, b;
    size_t n = 0, len;
    double t0;

    (void)state;
    assert_non_null(big);
    tn_pair(&a, &b, 300);
    t0 = psi_app_now_ms();
    assert_int_equal(psi_net_recv(&a, PSI_NET_FRAME_RESPONSE, 100, &p, &len, NULL, NULL),
                     PSI_NET_ETIMEOUT);
    assert_true(psi_app_now_ms() - t0 >= 290 && psi_app_now_ms() - t0 < 3000);
    assert_null(p);
    snprintf(want, sizeof want, "no data from the peer (%s) for 0.3 s while we were waiting "
             "for a response frame (--timeout)", a.peer);
    assert_string_equal(a.err, want);
    // silent in the middle of a payload
    tn_header(hdr, &n, PSI_NET_FRAME_RESPONSE, 100);
    memset(hdr + n, 'z', 10);
    assert_int_equal(tn_raw_write(b.fd, hdr, n + 10), 0);
    assert_int_equal(psi_net_recv(&a, PSI_NET_FRAME_RESPONSE, 100, &p, &len, NULL, NULL),
                     PSI_NET_ETIMEOUT);
    tn_err_has(a.err, "for 0.3 s after 10 of 100 bytes of the response frame (--timeout)");
    // a send the peer does not take
    t0 = psi_app_now_ms();
    assert_int_equal(psi_net_send(&a, PSI_NET_FRAME_REQUEST, big, TN_BIG, NULL, NULL),
                     PSI_NET_ETIMEOUT);
    assert_true(psi_app_now_ms() - t0 < 5000);
    snprintf(want, sizeof want, "no data to or from the peer (%s) for 0.3 s after we sent ",
             a.peer);
    tn_err_has(a.err, want);
    tn_err_has(a.err, "bytes of the request frame (--timeout)");
    // part of a frame went out: the stream is unusable from now on
    assert_true(a.broken);
    assert_int_equal(psi_net_send(&a, PSI_NET_FRAME_DONE, NULL, 0, NULL, NULL),
                     PSI_NET_ETIMEOUT);
    tn_close_pair(&a, &b);
    free(big);
}

static void test_cli_net_peer_closes(void **state)
{
    uint8_t *big = calloc(1, TN_BIG), *p, hdr[128];
    psi_net_conn a, b;
    size_t n = 0, len;

    (void)state;
    assert_non_null(big);
    // in the middle of a payload
    tn_pair(&a, &b, 5000);
    tn_header(hdr, &n, PSI_NET_FRAME_RESPONSE, 1000);
    memset(hdr + n, 'z', 100);
    assert_int_equal(tn_raw_write(b.fd, hdr, n + 100), 0);
    psi_net_close(&b);
    assert_int_equal(psi_net_recv(&a, PSI_NET_FRAME_RESPONSE, 1000, &p, &len, NULL, NULL),
                     PSI_NET_ECLOSED);
    tn_err_has(a.err, "closed the connection after 100 of 1000 bytes of the response frame");
    tn_close_pair(&a, &b);
    // before any header
    tn_pair(&a, &b, 5000);
    psi_net_close(&b);
    assert_int_equal(psi_net_recv(&a, PSI_NET_FRAME_SETUP, 1000, &p, &len, NULL, NULL),
                     PSI_NET_ECLOSED);
    tn_err_has(a.err, "closed the connection while we were waiting for a setup frame");
    tn_close_pair(&a, &b);
    // while we send
    tn_pair(&a, &b, 5000);
    psi_net_close(&b);
    assert_int_equal(psi_net_send(&a, PSI_NET_FRAME_REQUEST, big, TN_BIG, NULL, NULL),
                     PSI_NET_ECLOSED);
    tn_err_has(a.err, "closed the connection after we sent ");
    tn_close_pair(&a, &b);
    free(big);
}

/* Feeds `bytes` from a fresh peer; psi_net_recv(expect, max) must fail
 * with code, quickly, and with a message containing needle. */
static void tn_bad_input(const uint8_t *bytes, size_t n, int expect, size_t max, int code,
                         const char *needle)
{
    psi_net_conn a, b;
    uint8_t *p = (uint8_t *)"x";
    size_t len = 1;
    double t0;

    tn_pair(&a, &b, 5000);
    assert_int_equal(tn_raw_write(b.fd, bytes, n), 0);
    t0 = psi_app_now_ms();
    assert_int_equal(psi_net_recv(&a, expect, max, &p, &len, NULL, NULL), code);
    assert_true(psi_app_now_ms() - t0 < 2000);
    assert_null(p);
    assert_int_equal(len, 0);
    tn_err_has(a.err, needle);
    tn_close_pair(&a, &b);
}

static void test_cli_net_bad_frames(void **state)
{
    uint8_t s[64];
    size_t n;

    (void)state;
    // a length no one could allocate: refused from the header alone
    n = 0, tn_header(s, &n, PSI_NET_FRAME_RESPONSE, (uint64_t)1 << 62);
    tn_bad_input(s, n, PSI_NET_FRAME_RESPONSE, (size_t)1 << 30, PSI_NET_EFRAME,
                 "response frame of 4611686018427387904 bytes from the peer");
    n = 0, tn_header(s, &n, PSI_NET_FRAME_RESPONSE, 11);
    tn_bad_input(s, n, PSI_NET_FRAME_RESPONSE, 10, PSI_NET_EFRAME,
                 "is larger than the limit 10");
    n = 0, tn_header(s, &n, PSI_NET_FRAME_SETUP, 1), s[n++] = 0;
    tn_bad_input(s, n, PSI_NET_FRAME_RESPONSE, 10, PSI_NET_EFRAME,
                 "expected a response frame from the peer");
    n = 0, tn_header(s, &n, PSI_NET_FRAME_ACCEPT, 0);
    tn_bad_input(s, n, PSI_NET_FRAME_HELLO, 10, PSI_NET_EFRAME, "got an accept frame");
    n = 0, tn_header(s, &n, 77, 0);
    tn_bad_input(s, n, PSI_NET_FRAME_SETUP, 10, PSI_NET_EFRAME, "unknown type 77");
    n = 0, tn_header(s, &n, 0, 0);
    tn_bad_input(s, n, PSI_NET_FRAME_SETUP, 10, PSI_NET_EFRAME, "unknown type 0");
    n = 0, tn_header(s, &n, PSI_NET_FRAME_KEEPALIVE, 1), s[n++] = 0;
    tn_bad_input(s, n, PSI_NET_FRAME_SETUP, 10, PSI_NET_EFRAME,
                 "keepalive frame with a payload of 1 bytes");
    n = 0, tn_header(s, &n, PSI_NET_FRAME_ERROR, PSI_NET_MSG_MAX + 1);
    tn_bad_input(s, n, PSI_NET_FRAME_SETUP, 10, PSI_NET_EFRAME,
                 "error frame of 1025 bytes, larger than the limit 1024");
}

static void test_cli_net_error_frames(void **state)
{
    uint8_t s[PSI_NET_MSG_MAX + 64], *p;
    psi_net_conn a, b;
    size_t n = 0, len;

    (void)state;
    tn_header(s, &n, PSI_NET_FRAME_KEEPALIVE, 0);
    tn_header(s, &n, PSI_NET_FRAME_ERROR, 11);
    memcpy(s + n, "bad\x01thing\n", 11), n += 11;
    tn_bad_input(s, n, PSI_NET_FRAME_SETUP, 10, PSI_NET_EPEER,
                 "the peer reported: bad\\x01thing\\x0A");
    // the longest message, then the stream goes on
    tn_pair(&a, &b, 5000);
    n = 0, tn_header(s, &n, PSI_NET_FRAME_ERROR, PSI_NET_MSG_MAX);
    memset(s + n, 'e', PSI_NET_MSG_MAX), n += PSI_NET_MSG_MAX;
    assert_int_equal(tn_raw_write(b.fd, s, n), 0);
    assert_int_equal(psi_net_send(&b, PSI_NET_FRAME_DONE, NULL, 0, NULL, NULL), 0);
    assert_int_equal(psi_net_recv(&a, PSI_NET_FRAME_SETUP, 10, &p, &len, NULL, NULL),
                     PSI_NET_EPEER);
    assert_int_equal(strlen(a.err), strlen("the peer reported: ") + PSI_NET_MSG_MAX);
    assert_int_equal(psi_net_recv(&a, PSI_NET_FRAME_DONE, 0, &p, &len, NULL, NULL), 0);
    free(p);
    tn_close_pair(&a, &b);
}

/* Fills the socket buffers of c's direction until nothing more goes in
 * (the other end does not read).  Returns: 0 or -1. */
static int tn_fill_socket(psi_net_conn *c)
{
    static uint8_t chunk[65536];
    size_t round;

    do {
        ssize_t w;

        round = 0;
        while ((w = send(c->fd, chunk, sizeof chunk, MSG_NOSIGNAL)) > 0)
            round += (size_t)w;
        if (errno != EAGAIN)
            return -1;
        tn_sleep_ms(50);
    } while (round > 0);
    return 0;
}

static void test_cli_net_keepalive_sends_and_breaks(void **state)
{
    psi_net_conn a, b;
    struct pollfd pfd;
    uint8_t got[16], *p;
    size_t len;
    double t0;

    (void)state;
    tn_pair(&a, &b, 5000);
    pfd = (struct pollfd){ .fd = a.fd, .events = POLLIN };
    psi_net_keepalive(&b, 60000); // too early: nothing goes out
    assert_int_equal(poll(&pfd, 1, 100), 0);
    psi_net_keepalive(&b, 0);
    assert_int_equal(poll(&pfd, 1, 2000), 1);
    assert_int_equal(recv(a.fd, got, sizeof got, 0), PSI_NET_HEADER_BYTES);
    assert_memory_equal(got, "\x09\0\0\0\0\0\0\0\0", PSI_NET_HEADER_BYTES);
    // the peer goes away: a later keepalive notices and marks the connection
    psi_net_close(&a);
    for (int i = 0; i < 300 && !b.broken; i++) {
        psi_net_keepalive(&b, 0);
        tn_sleep_ms(10);
    }
    assert_true(b.broken);
    assert_int_equal(b.broken_code, PSI_NET_ECLOSED);
    tn_err_has(b.err, "keepalive");
    assert_int_equal(psi_net_send(&b, PSI_NET_FRAME_DONE, NULL, 0, NULL, NULL),
                     PSI_NET_ECLOSED);
    assert_int_equal(psi_net_recv(&b, PSI_NET_FRAME_DONE, 0, &p, &len, NULL, NULL),
                     PSI_NET_ECLOSED);
    tn_err_has(b.err, "keepalive");
    tn_close_pair(&a, &b);
    // a peer that takes nothing: the keepalive gives up after timeout_ms
    tn_pair(&a, &b, 200);
    assert_int_equal(tn_fill_socket(&b), 0);
    t0 = psi_app_now_ms();
    psi_net_keepalive(&b, 0);
    assert_true(psi_app_now_ms() - t0 >= 190 && psi_app_now_ms() - t0 < 2000);
    assert_true(b.broken);
    assert_int_equal(b.broken_code, PSI_NET_ETIMEOUT);
    tn_err_has(b.err, "keepalive");
    tn_close_pair(&a, &b);
}

/* A message of PSI_NET_MSG_MAX + 20 bytes whose byte 1024 is inside
 * "é", with a control character: the ERROR frame carries 1023 bytes. */
static void tn_long_message(char *m)
{
    memset(m, 'x', PSI_NET_MSG_MAX + 20);
    m[5] = '\x01';
    m[PSI_NET_MSG_MAX - 1] = '\xc3';
    m[PSI_NET_MSG_MAX] = '\xa9';
    m[PSI_NET_MSG_MAX + 20] = '\0';
}

/* The failing peer: waits until our frame arrives, leaves it unread, and
 * gives up with an ERROR frame. */
static int tn_failing_peer(psi_net_conn *c, void *arg)
{
    struct pollfd pfd = { .fd = c->fd, .events = POLLIN };
    char m[PSI_NET_MSG_MAX + 32];

    TN_PEER_CHECK(c, poll(&pfd, 1, 5000) == 1);
    tn_sleep_ms(arg != NULL ? 100 : 20);
    tn_long_message(m);
    psi_net_send_error(c, arg != NULL ? (const char *)arg : m);
    TN_PEER_CHECK(c, c->broken);
    return 0;
}

static void test_cli_net_send_error_reaches_the_peer(void **state)
{
    char m[PSI_NET_MSG_MAX + 32], want[PSI_NET_MSG_MAX + 64];
    uint8_t out[1000] = { 0 }, *p, *big = calloc(1, TN_BIG);
    psi_net_conn a, b;
    size_t len;
    pid_t pid;

    (void)state;
    assert_non_null(big);
    // we sent a frame the peer never read; its ERROR frame still arrives
    tn_pair(&a, &b, 5000);
    pid = tn_spawn(&a, &b, tn_failing_peer, NULL);
    assert_int_equal(psi_net_send(&a, PSI_NET_FRAME_REQUEST, out, sizeof out, NULL, NULL),
                     0);
    assert_int_equal(psi_net_recv(&a, PSI_NET_FRAME_RESPONSE, 10, &p, &len, NULL, NULL),
                     PSI_NET_EPEER);
    tn_long_message(m); // the control character escaped
    snprintf(want, sizeof want, "the peer reported: xxxxx\\x01%.*s", PSI_NET_MSG_MAX - 7,
             m + 6);
    assert_string_equal(a.err, want);
    psi_net_close(&a);
    tn_reap(pid);
    // while we are still sending a large frame to it
    tn_pair(&a, &b, 5000);
    pid = tn_spawn(&a, &b, tn_failing_peer, "disk full");
    assert_int_equal(psi_net_send(&a, PSI_NET_FRAME_REQUEST, big, TN_BIG, NULL, NULL),
                     PSI_NET_EPEER);
    assert_string_equal(a.err, "the peer reported: disk full");
    psi_net_close(&a);
    tn_reap(pid);
    free(big);
}

/* Counts the calls of c->gone (the server's round would end there). */
static void tn_on_gone(void *arg)
{
    (*(int *)arg)++;
}

/* psi_net_peer_gone: not while the peer is connected, frames unread or
 * not; yes once it has shut its side (its FIN) or closed; and a
 * computation's progress tick calls c->gone only then. */
static void test_cli_net_peer_gone(void **state)
{
    psi_net_conn a, b;
    psi_app_progress p;
    int calls = 0;

    (void)state;
    tn_pair(&a, &b, 2000);
    assert_int_equal(psi_net_peer_gone(&a), 0);
    assert_int_equal(psi_net_send(&b, PSI_NET_FRAME_DONE, NULL, 0, NULL, NULL), 0);
    tn_sleep_ms(50);
    assert_int_equal(psi_net_peer_gone(&a), 0); // a frame waiting is not a close
    psi_app_progress_init(&p, "test", 0);
    psi_net_progress_attach(&p, &a);
    a.gone = tn_on_gone;
    a.gone_arg = &calls;
    psi_app_progress_begin(&p, "computing", 10);
    psi_app_progress_update(&p, 1, 10);
    assert_int_equal(calls, 0);
    assert_int_equal(shutdown(b.fd, SHUT_WR), 0);
    tn_sleep_ms(50);
    assert_int_equal(psi_net_peer_gone(&a), 1);
    psi_app_progress_update(&p, 2, 10);
    assert_int_equal(calls, 1);
    psi_app_progress_end(&p);
    // A transfer does not tick: its own receive sees the close.
    psi_app_progress_begin_transfer(&p, "receiving", 0);
    psi_app_progress_update(&p, 3, 10);
    assert_int_equal(calls, 1);
    psi_app_progress_end(&p);
    psi_net_progress_detach(&p);
    psi_net_close(&b);
    tn_sleep_ms(50);
    assert_int_equal(psi_net_peer_gone(&a), 1);
    psi_net_close(&a);
    assert_int_equal(psi_net_peer_gone(&a), 0); // closed here: nothing to watch
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_cli_net_parse_addr),
        cmocka_unit_test(test_cli_net_frame_names),
        cmocka_unit_test(test_cli_net_listen_and_connect_errors),
        cmocka_unit_test(test_cli_net_round_trips),
        cmocka_unit_test(test_cli_net_round_trips_through_files),
        cmocka_unit_test(test_cli_net_file_errors),
        cmocka_unit_test(test_cli_net_keepalives_skipped),
        cmocka_unit_test(test_cli_net_keepalives_keep_a_send_alive),
        cmocka_unit_test(test_cli_net_timeouts),
        cmocka_unit_test(test_cli_net_peer_closes),
        cmocka_unit_test(test_cli_net_bad_frames),
        cmocka_unit_test(test_cli_net_error_frames),
        cmocka_unit_test(test_cli_net_keepalive_sends_and_breaks),
        cmocka_unit_test(test_cli_net_send_error_reaches_the_peer),
        cmocka_unit_test(test_cli_net_peer_gone),
    };

    return cmocka_run_group_tests(tests, NULL, NULL);
}
