/* test_key_hygiene, the programs' key file (app/app_keyfile.c): a key
 * file created, loaded again and refused when malformed, with nothing of
 * the key left in a freed block or shown in a message. */
#define _GNU_SOURCE
#include <fcntl.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmocka.h>
#include <sodium.h>

#include "app_keyfile.h"
#include "engine.h"
#include "key_hygiene_scan.h"

/* A whole small file, by read(2): stdio would leave its buffer on the heap. */
static size_t read_file(const char *path, char *buf, size_t cap)
{
    int fd = open(path, O_RDONLY);
    assert_true(fd >= 0);
    ssize_t n = read(fd, buf, cap);
    assert_true(n > 0);
    close(fd);
    return (size_t)n;
}

static void write_file(const char *path, const char *text, size_t len, mode_t mode)
{
    int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, mode);
    assert_true(fd >= 0);
    assert_int_equal(write(fd, text, len), (ssize_t)len);
    close(fd);
    assert_int_equal(chmod(path, mode), 0);
}

/* True if msg holds any 16 consecutive hex digits of the key, either case. */
static int holds_key_hex(const char *msg, const uint8_t key[PSI_KEY_BYTES])
{
    char hex[2][2 * PSI_KEY_BYTES + 1];
    int found = 0;
    for (int upper = 0; upper < 2; upper++) {
        to_hex(hex[upper], key, PSI_KEY_BYTES, upper);
        hex[upper][2 * PSI_KEY_BYTES] = '\0';
        for (size_t off = 0; off + 16 <= 2 * PSI_KEY_BYTES; off++) {
            char w[17];
            memcpy(w, hex[upper] + off, 16);
            w[16] = '\0';
            if (strstr(msg, w) != NULL)
                found = 1;
        }
    }
    sodium_memzero(hex, sizeof hex);
    return found;
}

/* (e) the CLI's key file: created (the key known only afterwards, so the
 * creation's blocks are held back), loaded again, and refused when
 * malformed, with messages that never show the key. */
void test_key_hygiene_keyfile(void **state)
{
    (void)state;
    char dir[] = "/tmp/psi-key-hygiene-XXXXXX", path[64], bad[64], err[512];
    assert_non_null(mkdtemp(dir));
    snprintf(path, sizeof path, "%s/key", dir);
    snprintf(bad, sizeof bad, "%s/bad", dir);
    psi_engine *e = NULL, *again = NULL;
    int created = -1;

    quarantine_begin();
    err[0] = '\0';
    assert_int_equal(psi_app_keyfile_engine(&e, &created, path, err, sizeof err), 0);
    assert_int_equal(created, 1);
    char text[2 * PSI_KEY_BYTES + 8];
    size_t n = read_file(path, text, sizeof text);
    assert_int_equal(n, 2 * PSI_KEY_BYTES + 1);
    keypair kp;
    size_t bin_len = 0;
    assert_int_equal(sodium_hex2bin(kp.k, sizeof kp.k, text, 2 * PSI_KEY_BYTES, NULL, &bin_len,
                                    NULL), 0);
    assert_int_equal(bin_len, PSI_KEY_BYTES);
    keypair exported;
    keypair_of(&exported, e);
    assert_true(sodium_memcmp(exported.k, kp.k, PSI_KEY_BYTES) == 0);
    compute_inverse(&kp);
    secret s = {"key file's key", kp.k, PSI_KEY_BYTES, kp.kinv, 1};
    quarantine_end(&s, 1);
    psi_engine_free(e);

    assert_int_equal(psi_app_keyfile_engine(&again, &created, path, err, sizeof err), 0);
    assert_int_equal(created, 0);
    keypair_of(&exported, again);
    assert_true(sodium_memcmp(exported.k, kp.k, PSI_KEY_BYTES) == 0);
    psi_engine_free(again);

    /* Malformed files: a valid key line with one character more (a 65th
     * digit, or a letter), and the right text with a group-readable mode. */
    static const char extra[] = {'0', 'g', 'Z'};
    for (size_t i = 0; i < sizeof extra + 1; i++) {
        char t[2 * PSI_KEY_BYTES + 2];
        memcpy(t, text, 2 * PSI_KEY_BYTES);
        t[2 * PSI_KEY_BYTES] = i < sizeof extra ? extra[i] : '\n';
        t[2 * PSI_KEY_BYTES + 1] = '\n';
        unlink(bad);
        write_file(bad, t, sizeof t, i < sizeof extra ? 0600 : 0644);
        e = (psi_engine *)&s;
        err[0] = '\0';
        assert_int_equal(psi_app_keyfile_engine(&e, &created, bad, err, sizeof err), -1);
        assert_null(e);
        assert_true(err[0] != '\0');
        assert_false(holds_key_hex(err, kp.k));
        sodium_memzero(t, sizeof t);
    }
    expect_clean("CLI key file: created, loaded, malformed");
    unlink(bad);
    unlink(path);
    rmdir(dir);
    sodium_memzero(text, sizeof text);
    keypair_wipe(&kp);
    keypair_wipe(&exported);
}
