/* net/'s TLS layer (net_tls.h) over loopback TCP: both forms of mutual
 * authentication, frames through TLS, the refusals and their messages, the
 * file checks, deadlines, a byte changed on the path, and psi_net_escape.
 * The certificates are made by test_certs_set.c into a fresh directory; the
 * two ends of a connection run on two threads (the server on a new one). */
#include <errno.h>
#include <poll.h>
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <netinet/in.h>
#include <arpa/inet.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>

#include "app_clock.h"
#include "net.h"
#include "net_tls.h"
#include "psi.h"
#include "test_certs_set.h"
#include "tls_common.h"

#define TT_BIG (((size_t)6 << 20) + 12345) // several MiB, not a multiple of a record

static char tt_dir[64];
char tt_pin_srv[PSI_NET_TLS_FP_HEX + 1], tt_pin_cli[PSI_NET_TLS_FP_HEX + 1];

const char *tt_path(const char *name)
{
    static char buf[8][256];
    static int k;

    k = (k + 1) % 8;
    snprintf(buf[k], sizeof buf[k], "%s/%s", tt_dir, name);
    return buf[k];
}

void tt_has(const char *s, const char *needle)
{
    if (strstr(s, needle) == NULL) {
        fprintf(stderr, "message \"%s\" lacks \"%s\"\n", s, needle);
        fail();
    }
}

/* A context from files of the set (NAME.pem, NAME.key); ca a file name of
 * the set or NULL, pin a fingerprint or NULL. */
static psi_net_tls *tt_ctx(int server, const char *name, const char *ca, const char *pin,
                           const char *tls_name)
{
    char cert[64], key[64], err[512];
    psi_net_tls *t;
    psi_net_tls_opts o = { 0 };

    snprintf(cert, sizeof cert, "%s.pem", name);
    snprintf(key, sizeof key, "%s.key", name);
    o.cert = tt_path(cert);
    o.key = tt_path(key);
    o.ca = ca != NULL ? tt_path(ca) : NULL;
    o.peer_key = pin;
    o.name = tls_name;
    if (psi_net_tls_new(&t, &o, server, err, sizeof err) != 0) {
        fprintf(stderr, "psi_net_tls_new: %s\n", err);
        fail();
    }
    return t;
}

typedef struct tt_side {
    psi_net_conn c;
    psi_net_tls *t;
    const char *host;
    int rc;
    void (*after)(struct tt_side *); // the server thread's work after its handshake
    void *arg;
} tt_side;

static void *tt_server_main(void *arg)
{
    tt_side *s = arg;

    s->rc = psi_net_tls_handshake(&s->c, s->t, NULL, psi_app_now_ms() + 5000);
    if (s->rc == 0 && s->after != NULL)
        s->after(s);
    return NULL;
}

/* A TCP pair over 127.0.0.1 (through relay_lfd's relay when >= 0: the
 * client connects to relay_addr). */
static void tt_tcp(tt_side *srv, tt_side *cli, int lfd, const char *addr)
{
    assert_int_equal(psi_net_connect(&cli->c, addr, 5000), 0);
    assert_int_equal(psi_net_accept(&srv->c, lfd, 5000), 0);
    assert_null(cli->c.tls);
    assert_string_equal(cli->c.peer_id, "");
    assert_true(cli->c.deadline_ms == 0 && cli->c.no_keepalive == 0 && srv->c.tls == NULL);
}

static int tt_listen(char *bound, size_t cap)
{
    char err[256];
    int lfd;

    assert_int_equal(psi_net_listen(&lfd, bound, cap, "127.0.0.1:0", err, sizeof err), 0);
    return lfd;
}

/* Handshakes both ends at once (the server on a thread, which then runs
 * srv->after); the thread is joined before returning. */
static void tt_handshake(tt_side *srv, tt_side *cli)
{
    pthread_t th;

    assert_int_equal(pthread_create(&th, NULL, tt_server_main, srv), 0);
    cli->rc = psi_net_tls_handshake(&cli->c, cli->t, cli->host, psi_app_now_ms() + 5000);
    if (cli->rc != 0 || srv->after == NULL)
        pthread_join(th, NULL);
    else {
        void (*fn)(tt_side *) = (void (*)(tt_side *))cli->arg;

        fn(cli); // the client's half of the exchange, then the join
        pthread_join(th, NULL);
    }
}

/* A pair of the given contexts, handshaken; host for the client. */
static void tt_pair(tt_side *srv, tt_side *cli, psi_net_tls *ts, psi_net_tls *tc,
                    const char *host)
{
    char bound[64];
    int lfd = tt_listen(bound, sizeof bound);

    srv->t = ts;
    cli->t = tc;
    cli->host = host;
    tt_tcp(srv, cli, lfd, bound);
    close(lfd);
    tt_handshake(srv, cli);
}

static void tt_close(tt_side *srv, tt_side *cli)
{
    psi_net_close(&cli->c);
    psi_net_close(&srv->c);
}

/* ---- frames both ways ---- */

static void tt_fill(uint8_t *p, size_t n, unsigned seed)
{
    uint32_t x = seed * 2654435761u + 1;

    for (size_t i = 0; i < n; i++) {
        x = x * 1103515245u + 12345u;
        p[i] = (uint8_t)(x >> 24);
    }
}

static int tt_same(const uint8_t *p, size_t n, unsigned seed)
{
    uint8_t *want = malloc(n);
    int ok;

    tt_fill(want, n, seed);
    ok = memcmp(p, want, n) == 0;
    free(want);
    return ok;
}

/* The server's half: keepalives, a big frame, then the client's big answer. */
static void tt_srv_exchange(tt_side *s)
{
    uint8_t *big = malloc(TT_BIG), *p = NULL;
    size_t len = 0;
    int rc;

    tt_fill(big, TT_BIG, 1);
    psi_net_keepalive(&s->c, 0);
    psi_net_keepalive(&s->c, 0);
    rc = psi_net_send(&s->c, PSI_NET_FRAME_SETUP, big, TT_BIG, NULL, NULL);
    psi_net_keepalive(&s->c, 0);
    if (rc == 0)
        rc = psi_net_recv(&s->c, PSI_NET_FRAME_REQUEST, TT_BIG, &p, &len, NULL, NULL);
    if (rc == 0 && (len != TT_BIG || !tt_same(p, len, 2)))
        rc = -100;
    if (rc == 0)
        rc = psi_net_send(&s->c, PSI_NET_FRAME_DONE, (const uint8_t *)"ok", 2, NULL, NULL);
    s->rc = rc;
    free(p);
    free(big);
}

/* The client's half of tt_srv_exchange. */
static void tt_cli_exchange(tt_side *s)
{
    uint8_t *big = malloc(TT_BIG), *p = NULL;
    size_t len = 0;

    assert_int_equal(psi_net_recv(&s->c, PSI_NET_FRAME_SETUP, TT_BIG, &p, &len, NULL, NULL),
                     0);
    assert_int_equal(len, TT_BIG);
    assert_true(tt_same(p, len, 1));
    free(p);
    tt_fill(big, TT_BIG, 2);
    psi_net_keepalive(&s->c, 0);
    assert_int_equal(psi_net_send(&s->c, PSI_NET_FRAME_REQUEST, big, TT_BIG, NULL, NULL), 0);
    assert_int_equal(psi_net_recv(&s->c, PSI_NET_FRAME_DONE, 10, &p, &len, NULL, NULL), 0);
    assert_true(len == 2 && memcmp(p, "ok", 2) == 0);
    free(p);
    free(big);
}

static void tt_round_trip(psi_net_tls *ts, psi_net_tls *tc, const char *host,
                          const char *srv_sees, const char *cli_sees)
{
    tt_side srv = { .after = tt_srv_exchange }, cli = { .arg = (void *)tt_cli_exchange };

    tt_pair(&srv, &cli, ts, tc, host);
    assert_int_equal(cli.rc, 0);
    assert_int_equal(srv.rc, 0);
    assert_non_null(cli.c.tls);
    tt_has(srv.c.peer_id, srv_sees);
    tt_has(cli.c.peer_id, cli_sees);
    tt_close(&srv, &cli);
}

static void test_tls_ca_round_trip(void **state)
{
    psi_net_tls *ts = tt_ctx(1, "server", "ca.pem", NULL, NULL);
    psi_net_tls *tc = tt_ctx(0, "client", "ca.pem", NULL, NULL);

    (void)state;
    tt_round_trip(ts, tc, "localhost", "CN=client-1, key sha256:", "CN=server, key sha256:");
    tt_round_trip(ts, tc, "127.0.0.1", "CN=client-1", "CN=server");
    psi_net_tls_free(tc);
    psi_net_tls_free(ts);
    psi_net_tls_free(NULL);
}

static void test_tls_pinned_round_trip(void **state)
{
    char want[64];
    psi_net_tls *ts = tt_ctx(1, "pin-server", NULL, tt_pin_cli, NULL);
    psi_net_tls *tc;
    char pin[200];

    (void)state;
    // the pin written as people copy it: a prefix, colons, capitals
    snprintf(pin, sizeof pin, "SHA256:");
    for (int i = 0; i < 32; i++)
        snprintf(pin + strlen(pin), sizeof pin - strlen(pin), "%s%.2s", i ? ":" : "",
                 tt_pin_srv + 2 * i);
    for (char *q = pin; *q; q++)
        if (*q >= 'a' && *q <= 'f')
            *q = (char)(*q - 'a' + 'A');
    tc = tt_ctx(0, "pin-client", NULL, pin, NULL);
    snprintf(want, sizeof want, "CN=client-1, key sha256:%.16s", tt_pin_cli);
    tt_round_trip(ts, tc, "localhost", want, "CN=localhost, key sha256:");
    psi_net_tls_free(tc);
    psi_net_tls_free(ts);
}

/* ---- refusals ---- */

/* A handshake expected to fail: the server's result srv_rc with srv_msg,
 * the client's cli_rc with cli_msg; when the client's handshake succeeds
 * (TLS 1.3: it learns of the refusal later), its first receive fails with
 * PSI_NET_ETLS and cli_msg. */
static void tt_refused(psi_net_tls *ts, psi_net_tls *tc, const char *host, int srv_rc,
                       const char *srv_msg, int cli_rc, const char *cli_msg)
{
    tt_side srv = { 0 }, cli = { 0 };
    uint8_t *p;
    size_t len;

    tt_pair(&srv, &cli, ts, tc, host);
    assert_int_equal(srv.rc, srv_rc);
    tt_has(srv.c.err, srv_msg);
    assert_null(srv.c.tls);
    psi_net_close(&srv.c);
    assert_int_equal(cli.rc, cli_rc);
    if (cli_rc == 0) {
        assert_int_equal(psi_net_recv(&cli.c, PSI_NET_FRAME_SETUP, 10, &p, &len, NULL, NULL),
                         PSI_NET_ETLS);
        assert_null(p);
    }
    tt_has(cli.c.err, cli_msg);
    psi_net_close(&cli.c);
}

static void test_tls_refusals(void **state)
{
    psi_net_tls *ts = tt_ctx(1, "server", "ca.pem", NULL, NULL);
    psi_net_tls *tc = tt_ctx(0, "client", "ca.pem", NULL, NULL);
    psi_net_tls *t;

    (void)state;
    t = tt_ctx(1, "rogue-server", "ca.pem", NULL, NULL); // another CA's server
    tt_refused(t, tc, "localhost", PSI_NET_ETLS, "the peer (127.0.0.1:", PSI_NET_ETLS,
               "TLS: the server's certificate was refused: unable to get local issuer");
    tt_refused(t, tc, "localhost", PSI_NET_ETLS, "refused our certificate (alert: unknown ca)",
               PSI_NET_ETLS, "refused");
    psi_net_tls_free(t);
    t = tt_ctx(0, "rogue-client", "ca.pem", NULL, NULL);
    tt_refused(ts, t, "localhost", PSI_NET_ETLS,
               "TLS: the client's certificate was refused: unable to get local issuer", 0,
               "refused our certificate (alert: unknown ca)");
    psi_net_tls_free(t);
    t = tt_ctx(1, "expired-server", "ca.pem", NULL, NULL);
    tt_refused(t, tc, "localhost", PSI_NET_ETLS, "refused our certificate", PSI_NET_ETLS,
               "TLS: the server's certificate was refused: certificate has expired");
    psi_net_tls_free(t);
    t = tt_ctx(0, "expired-client", "ca.pem", NULL, NULL);
    tt_refused(ts, t, "localhost", PSI_NET_ETLS,
               "TLS: the client's certificate was refused: certificate has expired", 0,
               "refused our certificate (alert: certificate expired)");
    psi_net_tls_free(t);
    t = tt_ctx(1, "wrongname-server", "ca.pem", NULL, NULL);
    tt_refused(t, tc, "localhost", PSI_NET_ETLS, "refused our certificate", PSI_NET_ETLS,
               "the server's certificate was refused: hostname mismatch (it does not name "
               "localhost");
    psi_net_tls_free(t);
    // --tls-name overrides the host
    t = tt_ctx(0, "client", "ca.pem", NULL, "elsewhere.example");
    tt_refused(ts, t, "localhost", PSI_NET_ETLS, "refused our certificate", PSI_NET_ETLS,
               "hostname mismatch (it does not name elsewhere.example");
    psi_net_tls_free(t);
    tt_refused(ts, tc, "127.0.0.2", PSI_NET_ETLS, "refused our certificate", PSI_NET_ETLS,
               "IP address mismatch");
    psi_net_tls_free(tc);
    psi_net_tls_free(ts);
}

static void test_tls_wrong_pins(void **state)
{
    psi_net_tls *ts = tt_ctx(1, "pin-server", NULL, tt_pin_cli, NULL);
    psi_net_tls *tc = tt_ctx(0, "pin-client", NULL, tt_pin_srv, NULL);
    psi_net_tls *bad_s = tt_ctx(1, "pin-server", NULL, tt_pin_srv, NULL);
    psi_net_tls *bad_c = tt_ctx(0, "pin-client", NULL, tt_pin_cli, NULL);
    char want[200];

    (void)state;
    snprintf(want, sizeof want, "TLS: the server's key sha256:%s is not the pinned key",
             tt_pin_srv);
    tt_refused(ts, bad_c, "localhost", PSI_NET_ETLS, "refused our certificate (alert: ",
               PSI_NET_ETLS, want);
    snprintf(want, sizeof want, "TLS: the client's key sha256:%s is not the pinned key",
             tt_pin_cli);
    tt_refused(bad_s, tc, "localhost", PSI_NET_ETLS, want, 0,
               "TLS: the peer (127.0.0.1:");
    tt_refused(bad_s, tc, "localhost", PSI_NET_ETLS, want, 0, "refused our certificate");
    // a CA-signed certificate is no pinned key either
    psi_net_tls_free(bad_c);
    bad_c = tt_ctx(0, "client", NULL, tt_pin_cli, NULL);
    tt_refused(ts, bad_c, "localhost", PSI_NET_ETLS, "refused our certificate", PSI_NET_ETLS,
               "the server's key");
    tt_refused(ts, bad_c, "localhost", PSI_NET_ETLS, "refused our certificate", PSI_NET_ETLS,
               "the server's key");
    psi_net_tls_free(bad_c);
    bad_c = tt_ctx(0, "client", NULL, tt_pin_srv, NULL); // right pin, key the server does not pin
    tt_refused(ts, bad_c, "localhost", PSI_NET_ETLS, "the client's key sha256:", 0,
               "refused our certificate");
    psi_net_tls_free(bad_c);
    psi_net_tls_free(bad_s);
    psi_net_tls_free(tc);
    psi_net_tls_free(ts);
}

/* ---- a plain peer ---- */

static void *tt_plain_hello(void *arg)
{
    psi_net_conn *c = arg;
    uint8_t hello[28] = "SHARDPSI";

    (void)psi_net_send(c, PSI_NET_FRAME_HELLO, hello, sizeof hello, NULL, NULL);
    return NULL;
}

static void *tt_plain_server(void *arg)
{
    psi_net_conn *c = arg;
    uint8_t *p;
    size_t len;

    if (psi_net_recv(c, PSI_NET_FRAME_HELLO, PSI_NET_MSG_MAX, &p, &len, NULL, NULL) != 0)
        psi_net_send_error(c, c->err);
    else
        free(p);
    return NULL;
}

static void test_tls_plain_peer(void **state)
{
    psi_net_tls *ts = tt_ctx(1, "server", "ca.pem", NULL, NULL);
    psi_net_tls *tc = tt_ctx(0, "client", "ca.pem", NULL, NULL);
    tt_side srv = { 0 }, cli = { 0 };
    char bound[64];
    int lfd = tt_listen(bound, sizeof bound), rc;
    pthread_t th;
    uint8_t *p;
    size_t len;

    (void)state;
    // a plain client's HELLO (37 bytes, "SHARDPSI" in it) at a TLS server
    tt_tcp(&srv, &cli, lfd, bound);
    assert_int_equal(pthread_create(&th, NULL, tt_plain_hello, &cli.c), 0);
    pthread_join(th, NULL);
    assert_int_equal(psi_net_tls_handshake(&srv.c, ts, NULL, psi_app_now_ms() + 5000),
                     PSI_NET_ETLS);
    tt_has(srv.c.err, "did not speak TLS 1.3 (is it a plain-TCP peer?");
    tt_has(srv.c.err, "plain hello frame");
    psi_net_close(&srv.c);
    rc = psi_net_recv(&cli.c, PSI_NET_FRAME_ACCEPT, 100, &p, &len, NULL, NULL);
    // the server tells the plain client in a plain ERROR frame why
    assert_int_equal(rc, PSI_NET_EPEER);
    tt_has(cli.c.err, "this server speaks TLS 1.3: give the client --tls-cert");
    psi_net_close(&cli.c);
    // a TLS client at a plain server, which answers with an ERROR frame
    tt_tcp(&srv, &cli, lfd, bound);
    assert_int_equal(pthread_create(&th, NULL, tt_plain_server, &srv.c), 0);
    assert_int_equal(psi_net_tls_handshake(&cli.c, tc, "localhost", psi_app_now_ms() + 5000),
                     PSI_NET_ETLS);
    tt_has(cli.c.err, "did not speak TLS 1.3 (is it a plain-TCP peer?");
    psi_net_close(&cli.c);
    pthread_join(th, NULL);
    tt_has(srv.c.err, "sent a frame of unknown type 22 (it looks like TLS");
    psi_net_close(&srv.c);
    close(lfd);
    psi_net_tls_free(tc);
    psi_net_tls_free(ts);
}

/* ---- time ---- */

static void tt_srv_keepalives(tt_side *s)
{
    double end = psi_app_now_ms() + 700;

    while (psi_app_now_ms() < end && !s->c.broken) {
        s->c.last_keepalive_ms = 0;
        psi_net_keepalive(&s->c, 0);
        nanosleep(&(struct timespec){ 0, 20000000L }, NULL);
    }
}

static void tt_cli_deadline(tt_side *s)
{
    double t0 = psi_app_now_ms();
    uint8_t *p;
    size_t len;

    s->c.deadline_ms = t0 + 250;
    assert_int_equal(psi_net_recv(&s->c, PSI_NET_FRAME_SETUP, 10, &p, &len, NULL, NULL),
                     PSI_NET_ETIMEOUT);
    assert_true(psi_app_now_ms() - t0 < 600);
    tt_has(s->c.err, "ran out");
    assert_int_equal(psi_net_send(&s->c, PSI_NET_FRAME_DONE, NULL, 0, NULL, NULL),
                     PSI_NET_ETIMEOUT);
}

static void test_tls_deadlines(void **state)
{
    psi_net_tls *ts = tt_ctx(1, "server", "ca.pem", NULL, NULL);
    psi_net_tls *tc = tt_ctx(0, "client", "ca.pem", NULL, NULL);
    tt_side srv = { .after = tt_srv_keepalives }, cli = { .arg = (void *)tt_cli_deadline };
    char bound[64];
    int lfd;
    double t0;

    (void)state;
    // keepalives do not extend deadline_ms
    tt_pair(&srv, &cli, ts, tc, "localhost");
    assert_int_equal(cli.rc, 0);
    tt_close(&srv, &cli);
    // a silent client: the server's handshake ends at its deadline
    lfd = tt_listen(bound, sizeof bound);
    tt_tcp(&srv, &cli, lfd, bound);
    t0 = psi_app_now_ms();
    assert_int_equal(psi_net_tls_handshake(&srv.c, ts, NULL, t0 + 300), PSI_NET_ETIMEOUT);
    assert_true(psi_app_now_ms() - t0 < 1500);
    tt_has(srv.c.err, "did not finish in time");
    tt_close(&srv, &cli);
    // and c->deadline_ms bounds it too
    tt_tcp(&srv, &cli, lfd, bound);
    t0 = psi_app_now_ms();
    srv.c.deadline_ms = t0 + 200;
    assert_int_equal(psi_net_tls_handshake(&srv.c, ts, NULL, t0 + 5000), PSI_NET_ETIMEOUT);
    assert_true(psi_app_now_ms() - t0 < 1500);
    tt_close(&srv, &cli);
    close(lfd);
    psi_net_tls_free(tc);
    psi_net_tls_free(ts);
}

static void tt_srv_one_keepalive(tt_side *s)
{
    psi_net_keepalive(&s->c, 0);
}

static void tt_cli_no_keepalive(tt_side *s)
{
    uint8_t *p;
    size_t len;

    s->c.no_keepalive = 1;
    assert_int_equal(psi_net_recv(&s->c, PSI_NET_FRAME_ACCEPT, 10, &p, &len, NULL, NULL),
                     PSI_NET_EFRAME);
    tt_has(s->c.err, "a keepalive before the handshake was accepted");
}

static void test_tls_no_keepalive(void **state)
{
    psi_net_tls *ts = tt_ctx(1, "server", "ca.pem", NULL, NULL);
    psi_net_tls *tc = tt_ctx(0, "client", "ca.pem", NULL, NULL);
    tt_side srv = { .after = tt_srv_one_keepalive }, cli = { .arg = (void *)tt_cli_no_keepalive };

    (void)state;
    tt_pair(&srv, &cli, ts, tc, "localhost");
    assert_int_equal(cli.rc, 0);
    tt_close(&srv, &cli);
    psi_net_tls_free(tc);
    psi_net_tls_free(ts);
}

/* ---- a byte changed on the path ---- */

typedef struct tt_relay {
    int lfd;             // where the client connects
    char target[64];     // the server's address
    atomic_int armed;    // flip a byte of the next application record
    atomic_int flipped;
    atomic_int stop;
} tt_relay;

/* Copies what fd `from` has to `to`; client to server (up): tracks TLS
 * records and, once armed, flips one byte inside the next one's ciphertext.
 * Returns: 0, or -1 at the end of the stream. */
static int tt_relay_copy(tt_relay *r, int from, int to, int up, size_t *need, uint8_t *hdr,
                         size_t *hlen, size_t *off)
{
    uint8_t buf[16384];
    ssize_t n = recv(from, buf, sizeof buf, 0);

    if (n <= 0)
        return -1;
    for (ssize_t i = 0; up && i < n; i++) {
        if (*need == 0) {
            hdr[(*hlen)++] = buf[i];
            if (*hlen == 5) {
                *need = (size_t)hdr[3] << 8 | hdr[4];
                *hlen = 0;
                *off = 0;
            }
            continue;
        }
        if (*off == 10 && hdr[0] == 0x17 && atomic_load(&r->armed) &&
            !atomic_load(&r->flipped)) {
            buf[i] ^= 0x01;
            atomic_store(&r->flipped, 1);
        }
        (*off)++;
        (*need)--;
    }
    return send(to, buf, (size_t)n, MSG_NOSIGNAL) == n ? 0 : -1;
}

static void *tt_relay_main(void *arg)
{
    tt_relay *r = arg;
    struct sockaddr_in sa = { .sin_family = AF_INET };
    int a = accept(r->lfd, NULL, NULL), b = socket(AF_INET, SOCK_STREAM, 0);
    size_t need = 0, hlen = 0, off = 0;
    uint8_t hdr[5];
    char *colon = strrchr(r->target, ':');

    sa.sin_port = htons((uint16_t)atoi(colon + 1));
    inet_pton(AF_INET, "127.0.0.1", &sa.sin_addr);
    if (a >= 0 && b >= 0 && connect(b, (struct sockaddr *)&sa, sizeof sa) == 0) {
        while (!atomic_load(&r->stop)) {
            struct pollfd p[2] = { { .fd = a, .events = POLLIN }, { .fd = b, .events = POLLIN } };

            if (poll(p, 2, 50) < 0)
                break;
            if (p[0].revents && tt_relay_copy(r, a, b, 1, &need, hdr, &hlen, &off) != 0)
                break;
            if (p[1].revents && tt_relay_copy(r, b, a, 0, NULL, NULL, NULL, NULL) != 0)
                break;
        }
    }
    if (a >= 0)
        close(a);
    if (b >= 0)
        close(b);
    return NULL;
}

static void test_tls_integrity(void **state)
{
    psi_net_tls *ts = tt_ctx(1, "server", "ca.pem", NULL, NULL);
    psi_net_tls *tc = tt_ctx(0, "client", "ca.pem", NULL, NULL);
    tt_side srv = { .t = ts }, cli = { .t = tc, .host = "localhost" };
    tt_relay r = { 0 };
    char bound[64];
    int lfd = tt_listen(r.target, sizeof r.target);
    uint8_t msg[100] = { 0 }, *p;
    size_t len;
    pthread_t th;

    (void)state;
    r.lfd = tt_listen(bound, sizeof bound);
    assert_int_equal(pthread_create(&th, NULL, tt_relay_main, &r), 0);
    tt_tcp(&srv, &cli, lfd, bound);
    tt_handshake(&srv, &cli);
    assert_int_equal(cli.rc, 0);
    assert_int_equal(srv.rc, 0);
    // a good frame first, then one changed on the way
    assert_int_equal(psi_net_send(&cli.c, PSI_NET_FRAME_REQUEST, msg, sizeof msg, NULL, NULL), 0);
    assert_int_equal(psi_net_recv(&srv.c, PSI_NET_FRAME_REQUEST, 100, &p, &len, NULL, NULL), 0);
    free(p);
    atomic_store(&r.armed, 1);
    assert_int_equal(psi_net_send(&cli.c, PSI_NET_FRAME_REQUEST, msg, sizeof msg, NULL, NULL), 0);
    assert_int_equal(psi_net_recv(&srv.c, PSI_NET_FRAME_REQUEST, 100, &p, &len, NULL, NULL),
                     PSI_NET_EINTEGRITY);
    assert_true(atomic_load(&r.flipped));
    tt_has(srv.c.err, "integrity check");
    tt_close(&srv, &cli);
    atomic_store(&r.stop, 1);
    pthread_join(th, NULL);
    close(r.lfd);
    close(lfd);
    psi_net_tls_free(tc);
    psi_net_tls_free(ts);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_tls_escape),
        cmocka_unit_test(test_tls_files),
        cmocka_unit_test(test_tls_ca_round_trip),
        cmocka_unit_test(test_tls_pinned_round_trip),
        cmocka_unit_test(test_tls_refusals),
        cmocka_unit_test(test_tls_wrong_pins),
        cmocka_unit_test(test_tls_plain_peer),
        cmocka_unit_test(test_tls_deadlines),
        cmocka_unit_test(test_tls_no_keepalive),
        cmocka_unit_test(test_tls_integrity),
    };
    char err[512];
    int rc;

    // As `shardpsi` does: OpenSSL's memory through the library's wiping
    // allocator, so that a buffer the TLS layer frees the wrong way fails here.
    if (psi_openssl_wipe_on_free() != PSI_OK)
        return 1;
    snprintf(tt_dir, sizeof tt_dir, "/tmp/psi-tls-XXXXXX");
    if (mkdtemp(tt_dir) == NULL || test_certs_write(tt_dir) != 0)
        return 1;
    if (psi_net_tls_keygen(tt_path("pin-server.pem"), tt_path("pin-server.key"), "localhost",
                           30, tt_pin_srv, err, sizeof err) != 0 ||
        psi_net_tls_keygen(tt_path("pin-client.pem"), tt_path("pin-client.key"), "client-1",
                           30, tt_pin_cli, err, sizeof err) != 0) {
        fprintf(stderr, "keygen: %s\n", err);
        return 1;
    }
    rc = cmocka_run_group_tests(tests, NULL, NULL);
    // the directory and its files
    {
        static const char *const names[] = {
            "ca", "other-ca", "server", "client", "rogue-server", "rogue-client",
            "expired-server", "expired-client", "wrongname-server", "pin-server",
            "pin-client",
        };

        for (size_t i = 0; i < sizeof names / sizeof names[0]; i++) {
            char n[64];

            snprintf(n, sizeof n, "%s.pem", names[i]);
            unlink(tt_path(n));
            snprintf(n, sizeof n, "%s.key", names[i]);
            unlink(tt_path(n));
        }
        unlink(tt_path("link.pem"));
        rmdir(tt_dir);
    }
    return rc;
}
