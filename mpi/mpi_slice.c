/* Each rank's slice of the input file (PROTOCOL.md §18.1); see mpi_run.h.
 * The slices of message files are in mpi_message.c. */
#include <errno.h>
#include <fcntl.h>
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "app_util.h"
#include "mpi_run.h"

int psi_mpi_pread(int fd, uint8_t *buf, size_t len, uint64_t off)
{
    while (len > 0) {
        ssize_t got = pread(fd, buf, len, (off_t)off);
        if (got < 0 && errno == EINTR)
            continue;
        if (got <= 0) {
            if (got == 0)
                errno = 0;
            return -1;
        }
        buf += got;
        len -= (size_t)got;
        off += (uint64_t)got;
    }
    return 0;
}

/* The start of the line holding byte cut - 1's successor: the least s >= cut
 * with s == 0 or byte s - 1 a '\n' (size if there is none).
 * Returns: 0 or -1 (errno). */
static int slice_line_start(int fd, uint64_t size, uint64_t cut, uint64_t *start)
{
    uint8_t buf[1 << 16];
    uint64_t pos;

    if (cut == 0 || cut >= size) {
        *start = cut == 0 ? 0 : size;
        return 0;
    }
    for (pos = cut - 1; pos < size;) {
        size_t want = size - pos < sizeof buf ? (size_t)(size - pos) : sizeof buf;
        const uint8_t *nl;

        if (psi_mpi_pread(fd, buf, want, pos) != 0)
            return -1;
        if ((nl = memchr(buf, '\n', want)) != NULL) {
            *start = pos + (uint64_t)(nl - buf) + 1;
            return 0;
        }
        pos += want;
    }
    *start = size;
    return 0;
}

/* Byte k * size / ranks, without overflow. */
static uint64_t slice_cut(uint64_t size, int ranks, int k)
{
    return size / (uint64_t)ranks * (uint64_t)k + size % (uint64_t)ranks * (uint64_t)k /
                                                      (uint64_t)ranks;
}

int psi_mpi_open_regular(psi_mpi_run *r, const char *what, const char *path, uint64_t *size)
{
    struct stat st;
    int fd = open(path, O_RDONLY | O_CLOEXEC);

    if (fd < 0) {
        psi_app_offline_fail(&r->s, "%s %s: cannot open: %s", what, path, strerror(errno));
        return -1;
    }
    if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
        close(fd);
        psi_app_offline_fail(&r->s, "%s %s: not a regular file (shardpsi-mpi reads each "
                             "rank's part by its byte offsets)", what, path);
        return -1;
    }
    *size = (uint64_t)st.st_size;
    return fd;
}

/* Rank 0's part of shardpsi's CSV guard (app_input.h): the file's first line,
 * bytes [0, e), is refused if it looks like a CSV header, unless --lines.
 * head: the rank's own slice [0, head_len), which holds that line unless the
 * file is smaller than the ranks (then it is read here).  Returns: 0, or an
 * exit code with the message in r->s.err. */
static int slice_guard(psi_mpi_run *r, int fd, uint64_t size, const uint8_t *head,
                       size_t head_len)
{
    uint64_t e = 0;
    uint8_t *line = NULL;
    int rc;

    if (r->s.o.lines)
        return 0;
    if (slice_line_start(fd, size, 1, &e) != 0) {
        psi_app_offline_fail(&r->s, "%s: cannot read: %s", r->s.o.input,
                             errno ? strerror(errno) : "the file shrank");
        return PSI_APP_EXIT_USAGE;
    }
    if (e > head_len) {
        if (e > SIZE_MAX - 1 || (line = psi_app_alloc((size_t)e, 1)) == NULL) {
            psi_app_offline_fail(&r->s, "%s: out of memory for its first line",
                                 r->s.o.input);
            return PSI_APP_EXIT_FAIL;
        }
        if (psi_mpi_pread(fd, line, (size_t)e, 0) != 0) {
            psi_app_offline_fail(&r->s, "%s: cannot read: %s", r->s.o.input,
                                 errno ? strerror(errno) : "the file shrank");
            free(line);
            return PSI_APP_EXIT_USAGE;
        }
        head = line;
    }
    rc = psi_app_input_guard(r->s.o.input, head, (size_t)e, r->s.err, sizeof r->s.err);
    free(line);
    return rc == PSI_APP_INPUT_OK ? 0 : PSI_APP_EXIT_USAGE;
}

int psi_mpi_input_range(psi_mpi_run *r, uint64_t *start, uint64_t *end)
{
    const char *path = r->s.o.input;
    uint64_t size = 0;
    int status = PSI_APP_EXIT_USAGE, fd = psi_mpi_open_regular(r, "input", path, &size);

    *start = *end = 0;
    if (fd < 0)
        return status;
    if (slice_line_start(fd, size, slice_cut(size, r->size, r->rank), start) != 0 ||
        slice_line_start(fd, size, slice_cut(size, r->size, r->rank + 1), end) != 0)
        psi_app_offline_fail(&r->s, "%s: cannot read: %s", path,
                             errno ? strerror(errno) : "the file shrank");
    else
        status = r->rank == 0 ? slice_guard(r, fd, size, (const uint8_t *)"", 0) : 0;
    close(fd);
    return status;
}
