/* Fuzzes the loader of `shardpsi server --setup FILE` (cli/cli_server_setup.c,
 * PROTOCOL.md §15.5) and psi_setup_check on what it accepts.  Input: byte
 * 0 picks the suite (bits 0-1), the --structure given (bits 2-3: none,
 * raw, gcs, bloom) and the --fpr (bits 4-5); byte 1 --num-client-inputs
 * (0: not given); the rest is the file, served from a memfd.
 * Contracts: a raw file the loader accepts is kept open, not held, and is
 * the canonical setup of its elements, so psi_setup_check with its element
 * count passes (and psi_setup_check_read through the file agrees); a gcs or
 * Bloom file passes the check for any count at least the one it passes
 * for (monotone), and the check's codes are those psi.h documents. */
#define _GNU_SOURCE
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "cli_server_setup.h"
#include "psi.h"

static void pre_fail(const char *what, int rc)
{
    fprintf(stderr, "fuzz_prebuilt: %s (%d, %s)\n", what, rc,
            psi_error_name(rc) ? psi_error_name(rc) : "?");
    abort();
}

static int check_code_ok(int rc)
{
    return rc == PSI_OK || rc == PSI_E_SETUP_MISMATCH || rc == PSI_E_NOMEM;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static const double fprs[] = {1e-9, 0.001, 0.1, 0.5};
    static const int structures[] = {PSI_NET_STRUCTURE_ANY, PSI_STRUCTURE_RAW, PSI_STRUCTURE_GCS,
                                     PSI_STRUCTURE_BLOOM_FILTER};
    static int fd = -1;
    if (size < 2)
        return 0;
    if (fd < 0 && (fd = memfd_create("fuzz_prebuilt", MFD_CLOEXEC)) < 0)
        return 0;
    if (ftruncate(fd, 0) != 0 || pwrite(fd, data + 2, size - 2, 0) != (ssize_t)(size - 2))
        return 0;
    char path[64], err[1024];
    snprintf(path, sizeof path, "/proc/self/fd/%d", fd);
    psi_cli_server_setup_opts so = {.setup = path, .num_client = data[1]};
    psi_cli_round_opts net;
    memset(&net, 0, sizeof net);
    net.suite = data[0] & 3;
    if (net.suite > PSI_SUITE_RISTRETTO255)
        net.suite = PSI_SUITE_OPENMINED_P256;
    net.structure = structures[(data[0] >> 2) & 3];
    net.fpr = fprs[(data[0] >> 4) & 3];
    psi_cli_server_setup ss;
    err[0] = '\0';
    int ok = psi_cli_server_setup_load(&ss, &so, &net, 0, err, sizeof err) == 0;
    if (!ok) {
        if (err[0] == '\0')
            pre_fail("a refusal without a message", 0);
        psi_cli_server_setup_free(&ss);
        return 0;
    }
    psi_setup_params p = {(psi_structure)ss.pb.structure, net.fpr, (int64_t)so.num_client};
    if (ss.pb.structure == PSI_STRUCTURE_RAW) {
        // The loader keeps a raw file open, not its bytes: the check through
        // the file and the check of the bytes held whole agree.
        if (ss.bytes != NULL || ss.pb.len != size - 2)
            pre_fail("a raw file held whole, or of another length", (int)ss.pb.len);
        for (uint64_t k = 0; k < 2; k++) {
            int rc = psi_setup_check(net.suite, &p, ss.n + k, data + 2, size - 2);
            int rr = psi_setup_check_read(net.suite, &p, ss.n + k, psi_app_msg_read, &ss.file,
                                          ss.pb.len, 0);
            if (rc != rr)
                pre_fail("psi_setup_check_read differs from psi_setup_check", rr);
            if (k == 0 && rc != PSI_OK)
                pre_fail("a raw file the loader accepts fails psi_setup_check", rc);
            if (k == 1 && rc != PSI_E_SETUP_MISMATCH)
                pre_fail("a raw setup passes for another count", rc);
        }
    } else {
        uint64_t prev = 0;
        int passed = 0;
        for (uint64_t n = 0; n <= 1u << 12; n = n * 4 + 1) {
            int rc = psi_setup_check(net.suite, &p, n, ss.bytes, ss.pb.len);
            if (!check_code_ok(rc))
                pre_fail("psi_setup_check code", rc);
            if (passed && rc == PSI_E_SETUP_MISMATCH)
                pre_fail("psi_setup_check not monotone in n_server", (int)prev);
            if (rc == PSI_OK)
                passed = 1, prev = n;
        }
        int rc = psi_setup_check(net.suite, &p, UINT64_MAX, ss.bytes, ss.pb.len);
        if (!check_code_ok(rc) || (passed && rc != PSI_OK))
            pre_fail("psi_setup_check at UINT64_MAX", rc);
    }
    psi_cli_server_setup_free(&ss);
    return 0;
}
