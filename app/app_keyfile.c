/* Key files; see app_keyfile.h. */
#include "app_keyfile.h"

#include <errno.h>
#include <fcntl.h>
#include <sodium.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "app_util.h"

#define KEYFILE_HEX (2 * PSI_KEY_BYTES)

static int keyfile_space(unsigned char c)
{
    return c == '\n' || c == '\r' || c == ' ' || c == '\t';
}

/* Decodes the file's text into key: 64 hex digits, then optionally blanks
 * and a suite name (*suite: -1 for a name this build does not know; without
 * a name openmined-p256), then only whitespace.  libsodium's codec takes
 * the same time whatever the digits.  Returns: 0 or -1 (the caller's
 * message names no byte of the text). */
static int keyfile_decode(unsigned char key[PSI_KEY_BYTES], int *suite,
                          const unsigned char *text, size_t len)
{
    size_t bin_len = 0, i = KEYFILE_HEX, start;
    char name[32];
    psi_suite s;

    *suite = PSI_SUITE_OPENMINED_P256;
    if (len < KEYFILE_HEX ||
        sodium_hex2bin(key, PSI_KEY_BYTES, (const char *)text, KEYFILE_HEX, NULL, &bin_len,
                       NULL) != 0 || bin_len != PSI_KEY_BYTES)
        return -1;
    while (i < len && (text[i] == ' ' || text[i] == '\t'))
        i++;
    if (i > KEYFILE_HEX && i < len && !keyfile_space(text[i])) {
        for (start = i; i < len && !keyfile_space(text[i]); i++)
            ;
        if (i - start >= sizeof name)
            return -1;
        memcpy(name, text + start, i - start);
        name[i - start] = '\0';
        *suite = psi_suite_from_name(&s, name) == PSI_OK ? (int)s : -1;
    }
    for (; i < len; i++)
        if (!keyfile_space(text[i]))
            return -1;
    return 0;
}

/* Reads at most cap bytes of fd into buf.  Returns: the count, or -1. */
static ssize_t keyfile_read_all(int fd, unsigned char *buf, size_t cap)
{
    size_t got = 0;

    while (got < cap) {
        ssize_t r = read(fd, buf + got, cap - got);
        if (r < 0 && errno == EINTR)
            continue;
        if (r < 0)
            return -1;
        if (r == 0)
            break;
        got += (size_t)r;
    }
    return (ssize_t)got;
}

/* Opens an existing key file and checks its type, owner and mode, as the
 * TLS key files are (net_tls.c): a regular file, not a symbolic link, owned
 * by us or root, that the group and others cannot access.  It is opened
 * without blocking, so a FIFO or a device at the path is refused at once
 * instead of waiting for a writer.  Returns: the descriptor, -1 with a
 * message, or -2 when the file does not exist. */
static int keyfile_open_existing(const char *path, char *err, size_t err_len)
{
    struct stat st;
    int fd = open(path, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);

    if (fd < 0 && errno == ENOENT)
        return -2;
    if (fd < 0 && errno == ELOOP && lstat(path, &st) == 0 && S_ISLNK(st.st_mode)) {
        snprintf(err, err_len, "key file %s is a symbolic link: give the file itself", path);
        return -1;
    }
    if (fd < 0) {
        snprintf(err, err_len, "key file %s: cannot open: %s", path, strerror(errno));
        return -1;
    }
    if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
        snprintf(err, err_len, "key file %s: not a regular file", path);
        close(fd);
        return -1;
    }
    if (st.st_uid != geteuid() && st.st_uid != 0) {
        snprintf(err, err_len, "key file %s belongs to user %u, neither us (%u) nor root: "
                 "another user could have written the key", path, (unsigned)st.st_uid,
                 (unsigned)geteuid());
        close(fd);
        return -1;
    }
    if ((st.st_mode & 077) != 0) {
        snprintf(err, err_len, "key file %s is accessible to others (mode %04o): "
                 "run 'chmod 600 %s' if the key has not leaked, else make a new one",
                 path, (unsigned)(st.st_mode & 07777), path);
        close(fd);
        return -1;
    }
    // A regular file: reads no longer need the flag.
    fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) & ~O_NONBLOCK);
    return fd;
}

/* Loads the key of an open key file into a new engine. */
static int keyfile_load(psi_engine **e, const psi_settings *s, int fd, const char *path,
                        char *err, size_t err_len)
{
    unsigned char text[KEYFILE_HEX + 64], key[PSI_KEY_BYTES];
    ssize_t n = keyfile_read_all(fd, text, sizeof text);
    int rc = -1, prc, suite = 0;

    if (n < 0) {
        snprintf(err, err_len, "key file %s: cannot read: %s", path, strerror(errno));
        goto done;
    }
    if ((size_t)n == sizeof text || keyfile_decode(key, &suite, text, (size_t)n) != 0) {
        snprintf(err, err_len, "key file %s: not a key (expected %d hex digits, for a "
                 "suite other than openmined-p256 a space and the suite's name, and a "
                 "line break)", path, KEYFILE_HEX);
        goto done;
    }
    if (suite < 0) {
        snprintf(err, err_len, "key file %s: the key's suite is not one this build "
                 "knows (" PSI_APP_SUITE_NAMES ")", path);
        goto done;
    }
    if (suite != (int)s->suite) {
        snprintf(err, err_len, "key file %s holds a key of suite %s, and this run uses "
                 "suite %s: give --suite %s, or another key file (a key is never "
                 "reused across suites)", path, psi_suite_name(suite),
                 psi_suite_name(s->suite), psi_suite_name(suite));
        goto done;
    }
    prc = psi_engine_create_from_key(e, s, key, sizeof key);
    if (prc != PSI_OK) {
        snprintf(err, err_len, "key file %s: %s", path, psi_strerror(prc));
        goto done;
    }
    rc = 0;
done:
    sodium_memzero(text, sizeof text);
    sodium_memzero(key, sizeof key);
    return rc;
}

/* Writes the key of engine e to a new file at path (O_EXCL, mode 0600). */
static int keyfile_store(const psi_engine *e, const char *path, char *err, size_t err_len)
{
    unsigned char key[PSI_KEY_BYTES], text[KEYFILE_HEX + 40];
    size_t key_len = sizeof key, text_len = KEYFILE_HEX;
    int fd = -1, rc = -1;
    psi_suite suite = psi_engine_suite(e);

    if (psi_engine_export_key(e, key, &key_len) != PSI_OK) {
        snprintf(err, err_len, "key file %s: cannot export the key", path);
        goto done;
    }
    sodium_bin2hex((char *)text, sizeof text, key, sizeof key);
    // The suite's name after the key: none for openmined-p256, whose files
    // stay as builds before the suites wrote them.
    if (suite != PSI_SUITE_OPENMINED_P256)
        text_len += (size_t)snprintf((char *)text + text_len, sizeof text - text_len,
                                     " %s", psi_suite_name(suite));
    text[text_len++] = '\n';
    fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
    if (fd < 0) {
        snprintf(err, err_len, "key file %s: cannot create: %s", path, strerror(errno));
        goto done;
    }
    // The mode is 0600 whatever the umask (which can only remove bits).
    if (fchmod(fd, 0600) != 0 || write(fd, text, text_len) != (ssize_t)text_len ||
        fsync(fd) != 0) {
        snprintf(err, err_len, "key file %s: cannot write: %s", path, strerror(errno));
        close(fd);
        fd = -1;
        unlink(path);
        goto done;
    }
    if (close(fd) != 0) {
        fd = -1;
        snprintf(err, err_len, "key file %s: cannot write: %s", path, strerror(errno));
        unlink(path);
        goto done;
    }
    fd = -1;
    rc = 0;
done:
    sodium_memzero(key, sizeof key);
    sodium_memzero(text, sizeof text);
    return rc;
}

int psi_app_keyfile_engine(psi_engine **e, int *created, const char *path, char *err,
                           size_t err_len)
{
    return psi_app_keyfile_engine_suite(e, created, path, PSI_SUITE_OPENMINED_P256, err,
                                        err_len);
}

int psi_app_keyfile_engine_suite(psi_engine **e, int *created, const char *path,
                                 int suite, char *err, size_t err_len)
{
    psi_settings s;
    int fd, prc;

    psi_settings_default(&s);
    s.suite = (psi_suite)suite;
    *e = NULL;
    *created = 0;
    fd = keyfile_open_existing(path, err, err_len);
    if (fd >= 0) {
        int rc = keyfile_load(e, &s, fd, path, err, err_len);
        close(fd);
        return rc;
    }
    if (fd == -1)
        return -1;
    prc = psi_engine_create(e, &s);
    if (prc != PSI_OK) {
        snprintf(err, err_len, "cannot create a key: %s", psi_strerror(prc));
        return -1;
    }
    if (keyfile_store(*e, path, err, err_len) != 0) {
        psi_engine_free(*e);
        *e = NULL;
        return -1;
    }
    *created = 1;
    return 0;
}
