/* The net_tls test: psi_net_escape, and the checks of psi_net_tls_new,
 * psi_net_tls_keygen and psi_net_tls_fingerprint_file. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmocka.h>

#include "net.h"
#include "tls_common.h"

static void tt_esc(const char *in, size_t len, size_t cap, const char *want)
{
    char out[256];

    memset(out, 'Z', sizeof out);
    psi_net_escape(out, cap, (const uint8_t *)in, len);
    assert_string_equal(out, want);
}

void test_tls_escape(void **state)
{
    (void)state;
    tt_esc("abc", 3, 100, "abc");
    tt_esc("a\x01" "b\x7f\n\x1b[31m", 10, 100, "a\\x01b\\x7F\\x0A\\x1B[31m");
    tt_esc("a\0b", 3, 100, "a\\x00b");
    tt_esc("back\\slash", 10, 100, "back\\\\slash");
    tt_esc("caf\xc3\xa9 \xe2\x82\xac \xf0\x9f\x98\x80", 14, 100,
           "caf\xc3\xa9 \xe2\x82\xac \xf0\x9f\x98\x80");
    tt_esc("\xc2\x9b" "1m", 4, 100, "\\u{009B}1m");                // C1 CSI
    tt_esc("x\xe2\x80\xaey", 5, 100, "x\\u{202E}y");               // right-to-left override
    tt_esc("\xef\xbb\xbf\xe2\x80\x8b\xe2\x81\xa6\xd8\x9c", 11, 100,
           "\\u{FEFF}\\u{200B}\\u{2066}\\u{061C}");
    tt_esc("\xff\xc0\xaf\xe2\x80", 5, 100, "\\xFF\\xC0\\xAF\\xE2\\x80"); // not UTF-8
    tt_esc("\xed\xa0\x80", 3, 100, "\\xED\\xA0\\x80");              // a surrogate
    tt_esc("ab\x01" "c", 4, 6, "ab");                               // cut on a whole escape
    tt_esc("ab\x01" "c", 4, 7, "ab\\x01");
    tt_esc("a\xc3\xa9", 3, 3, "a");                                 // and a whole character
    tt_esc("abc", 3, 1, "");
}

/* psi_net_tls_new of the given files must fail with a message with needle. */
static void tt_new_fails(const char *cert, const char *key, const char *ca, const char *pin,
                         const char *needle)
{
    psi_net_tls_opts o = { .cert = cert, .key = key, .ca = ca, .peer_key = pin };
    psi_net_tls *t = (psi_net_tls *)&o;
    char err[512] = "";

    assert_int_equal(psi_net_tls_new(&t, &o, 1, err, sizeof err), -1);
    assert_null(t);
    tt_has(err, needle);
}

void test_tls_files(void **state)
{
    const char *cert = tt_path("server.pem"), *key = tt_path("server.key");
    const char *ca = tt_path("ca.pem"), *link = tt_path("link.pem");
    char fp[PSI_NET_TLS_FP_HEX + 1], err[512], pin[80];
    psi_net_tls_opts o = { .cert = cert, .key = key, .ca = ca };
    psi_net_tls *t;

    (void)state;
    assert_int_equal(psi_net_tls_new(&t, &o, 1, err, sizeof err), 0);
    psi_net_tls_free(t);
    assert_int_equal(chmod(key, 0644), 0);
    tt_new_fails(cert, key, ca, NULL, "chmod 600 ");
    tt_new_fails(cert, key, ca, NULL, key);
    assert_int_equal(chmod(key, 0640), 0);
    tt_new_fails(cert, key, ca, NULL, "chmod 600");
    assert_int_equal(chmod(key, 0600), 0);
    unlink(link);
    assert_int_equal(symlink(cert, link), 0);
    tt_new_fails(link, key, ca, NULL, "is a symbolic link");
    assert_int_equal(chmod(ca, 0646), 0);
    tt_new_fails(cert, key, ca, NULL, "writable by others");
    assert_int_equal(chmod(ca, 0664), 0);
    tt_new_fails(cert, key, ca, NULL, "writable by others");
    assert_int_equal(chmod(ca, 0644), 0);
    // A FIFO at a key's path is refused at once, not waited on for a writer
    // (the alarm ends the test if it blocks).
    const char *fifo = tt_path("fifo.key");
    unlink(fifo);
    assert_int_equal(mkfifo(fifo, 0600), 0);
    alarm(20);
    tt_new_fails(cert, fifo, ca, NULL, "not a regular file");
    tt_new_fails(cert, key, fifo, NULL, "not a regular file");
    alarm(0);
    unlink(fifo);
    // A key file of another user (only root can make one).
    if (geteuid() == 0) {
        assert_int_equal(chown(key, 65534, (gid_t)-1), 0);
        tt_new_fails(cert, key, ca, NULL, "belongs to user 65534");
        assert_int_equal(chown(key, 0, (gid_t)-1), 0);
    }
    tt_new_fails(cert, tt_path("client.key"), ca, NULL, "does not hold the key of the "
                 "certificate");
    tt_new_fails(cert, key, ca, tt_pin_cli, "exactly one of --tls-ca");
    tt_new_fails(cert, key, NULL, NULL, "exactly one of --tls-ca");
    tt_new_fails(cert, NULL, ca, NULL, "both --tls-cert and --tls-key");
    tt_new_fails(cert, key, NULL, "abc", "not a key fingerprint");
    snprintf(pin, sizeof pin, "%s0", tt_pin_cli);
    tt_new_fails(cert, key, NULL, pin, "not a key fingerprint");
    snprintf(pin, sizeof pin, "%.62sxy", tt_pin_cli);
    tt_new_fails(cert, key, NULL, pin, "not a key fingerprint");
    tt_new_fails(cert, key, tt_path("nothing.pem"), NULL, "nothing.pem: cannot open");
    tt_new_fails(cert, key, key, NULL, "CA file");
    tt_new_fails(key, key, ca, NULL, "no PEM certificate");
    // fingerprints: keygen's and the file's agree; an existing file is kept
    assert_int_equal(psi_net_tls_fingerprint_file(fp, tt_path("pin-server.pem"), err,
                                                  sizeof err), 0);
    assert_string_equal(fp, tt_pin_srv);
    assert_int_equal(psi_net_tls_fingerprint_file(fp, link, err, sizeof err), 0);
    assert_int_equal(psi_net_tls_fingerprint_file(fp, key, err, sizeof err), -1);
    tt_has(err, "no PEM certificate");
    assert_int_equal(psi_net_tls_keygen(tt_path("pin-server.pem"), tt_path("new.key"),
                                        "x.example", 1, fp, err, sizeof err), -1);
    assert_int_equal(access(tt_path("new.key"), F_OK), -1);
    assert_int_equal(psi_net_tls_keygen(tt_path("new.pem"), tt_path("pin-server.key"),
                                        "x.example", 1, fp, err, sizeof err), -1);
    assert_int_equal(access(tt_path("new.pem"), F_OK), -1);
    tt_has(err, "cannot create");
}
