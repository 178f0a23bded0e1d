/*
 * shardpsi-mpi: `mpirun -np R shardpsi-mpi setup|request|response|match [options]`,
 * the offline commands of `shardpsi` (PROTOCOL.md §17) on the ranks of an MPI job,
 * writing the same bytes (§18).  See mpi_run.h.
 */
#define _GNU_SOURCE // sched_getaffinity, CPU_COUNT
#include <fcntl.h>
#include <mpi.h>
#include <sched.h>
#include <sodium.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "app_util.h"
#include "mpi_run.h"

/* Elements a chunk of a stream holds at most, and the memory all of rank 0's
 * merge buffers may take together. */
#define MPI_CHUNK_MAX ((size_t)1 << 16)
#define MPI_CHUNK_MIN ((size_t)1 << 8)
#define MPI_MERGE_BYTES ((size_t)64 << 20)

static void psi_mpi_usage(FILE *out)
{
    fputs("Usage: mpirun -np R shardpsi-mpi setup|request|response|match|payloads [options]\n"
          "\n"
          "Runs one step of the offline protocol (shardpsi setup, shardpsi request, shardpsi response,\n"
          "shardpsi match: see 'shardpsi-mpi CMD --help') on R MPI ranks and writes the same bytes\n"
          "as the single-process command.  Each rank reads its own part of the input\n"
          "(byte ranges cut at line boundaries) and masks it on its own threads; rank 0\n"
          "reads the key file, sends the key to the other ranks once, and writes the\n"
          "outputs (PROTOCOL.md §18).\n"
          "\n"
          "Unlike shardpsi: --input must be a regular file every rank can read (not '-'),\n"
          "CSV (--column) is not supported (a file that looks like CSV is refused\n"
          "as shardpsi refuses it; --lines reads it as lines), and --threads and\n"
          "--shards count per rank (default threads: the node's online CPUs shared\n"
          "among its ranks, at most the CPUs the rank is bound to: Open MPI binds\n"
          "each rank to one core when it starts one or two, so use mpirun --bind-to\n"
          "none to give one rank every core), and so does --memory (default: a\n"
          "quarter of the node's memory shared among its ranks): a rank whose part\n"
          "is more than a chunk of its budget masks it a chunk at a time into\n"
          "sorted runs in --temp-dir, which rank 0 merges (PROTOCOL.md §18.5).\n"
          "Make keys with 'shardpsi keygen'.\n"
          "\n"
          "payloads (shardpsi payloads, PROTOCOL.md §22.1) reads a CSV input (--column,\n"
          "--payload-columns) whole on every rank, each rank masking its share of the\n"
          "values; rank 0 seals the table and writes the payload file.  It holds the\n"
          "input on every rank and the table on rank 0: an input past a quarter of\n"
          "--memory is refused.  match --payloads FILE writes each matched row with its\n"
          "payload (a tab before each field's cell; a payload that is not the header's\n"
          "fields, or holds a control byte, ends the job naming the row; formula-like\n"
          "cells get a ' before them unless --raw-cells); every rank reads the payload\n"
          "file where it lies, within its --memory (PROTOCOL.md §22.4).\n", out);
}

/* The command's options, parsed by psi's offline parser; messages from rank
 * 0 only.  Returns: 0, 1 after --help, -1 after a usage message. */
static int psi_mpi_parse(psi_mpi_run *r, int argc, char **argv)
{
    int saved = -1, rc;

    fflush(stderr);
    if (r->rank != 0) {
        int null = open("/dev/null", O_WRONLY);
        saved = dup(2);
        if (null >= 0) {
            dup2(null, 2);
            close(null);
        }
        // --help prints to stdout: silence it too.
        if (freopen("/dev/null", "w", stdout) == NULL)
            return -1;
    } else if (argc > 1 && psi_app_is_help(argv[1])) {
        psi_mpi_usage(stdout);
        fputs("\n", stdout);
    }
    rc = psi_app_offline_parse(&r->s, argc, argv);
    fflush(stderr);
    if (saved >= 0) {
        dup2(saved, 2);
        close(saved);
    }
    if (rc != 0)
        return rc;
    if (r->s.o.input != NULL && strcmp(r->s.o.input, "-") == 0)
        rc = -1;
    // payloads reads its CSV whole on every rank; the other steps cut lines.
    if (r->s.o.column != NULL && strcmp(argv[0], "payloads") != 0)
        rc = -2;
    if (r->s.o.mode == PSI_APP_OFFLINE_ASSOCIATION)
        rc = -4;
    if (rc != 0 && r->rank == 0)
        psi_app_error(rc == -4 ? "%s: --association: shardpsi-mpi match writes rows, indices "
                                 "or the count; run shardpsi match for the association table"
                      : rc == -1 ? "%s: --input must be a file (every rank reads its own part "
                                 "of it), not stdin"
                                 : "%s: --column: shardpsi-mpi reads one value per line only (a "
                                   "CSV record may span lines, so the file cannot be cut at "
                                   "line boundaries)", r->label);
    return rc != 0 ? -1 : 0;
}

/* The ranks on this node. */
static int psi_mpi_local_ranks(void)
{
    MPI_Comm node;
    int local = 1;

    if (MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, 0, MPI_INFO_NULL, &node) ==
        MPI_SUCCESS) {
        MPI_Comm_size(node, &local);
        MPI_Comm_free(&node);
    }
    return local > 0 ? local : 1;
}

/* Default threads: the node's online CPUs over the ranks on the node, and
 * no more than the CPUs this rank may run on (mpirun binds each rank to one
 * core when it starts at most two: then one thread). */
static size_t psi_mpi_default_threads(int local)
{
    cpu_set_t set;
    long cpus = sysconf(_SC_NPROCESSORS_ONLN);
    size_t t;

    if (cpus < 1)
        cpus = 1;
    t = (size_t)cpus / (size_t)local > 0 ? (size_t)cpus / (size_t)local : 1;
    if (sched_getaffinity(0, sizeof set, &set) == 0 && CPU_COUNT(&set) > 0 &&
        (size_t)CPU_COUNT(&set) < t)
        t = (size_t)CPU_COUNT(&set);
    return t;
}

static int psi_mpi_main(psi_mpi_run *r, int argc, char **argv)
{
    static const struct {
        const char *name;
        int (*run)(psi_mpi_run *r);
    } cmds[] = {{"setup", psi_mpi_setup}, {"request", psi_mpi_request}, {"response", psi_mpi_response},
                {"match", psi_mpi_match}, {"payloads", psi_mpi_payloads}};
    int (*run)(psi_mpi_run *r) = NULL;
    int local = psi_mpi_local_ranks();
    size_t threads = psi_mpi_default_threads(local), chunk;
    uint64_t budget, merge;
    char out_dir[1024];
    int rc;

    if (argc < 2 || psi_app_is_help(argv[1])) {
        if (r->rank == 0)
            psi_mpi_usage(argc < 2 ? stderr : stdout);
        return argc < 2 ? PSI_APP_EXIT_USAGE : PSI_APP_EXIT_OK;
    }
    for (size_t i = 0; i < sizeof cmds / sizeof cmds[0]; i++)
        if (strcmp(argv[1], cmds[i].name) == 0)
            run = cmds[i].run;
    if (run == NULL) {
        if (r->rank == 0)
            psi_app_error("shardpsi-mpi: unknown command '%s' (setup, request, response, "
                          "match or payloads; keys come from 'shardpsi keygen')", argv[1]);
        return PSI_APP_EXIT_USAGE;
    }
    snprintf(r->label, sizeof r->label, "shardpsi-mpi %s", argv[1]);
    rc = psi_mpi_parse(r, argc - 1, argv + 1);
    if (rc != 0)
        return rc > 0 ? PSI_APP_EXIT_OK : PSI_APP_EXIT_USAGE;
    if (r->s.o.shard.threads == 0)
        r->s.o.shard.threads = threads;
    snprintf(r->s.who, sizeof r->s.who, "%s", r->label);
    r->s.capture = 1;
    psi_app_progress_init(&r->s.prog, r->s.who, r->rank == 0 ? r->s.o.progress : 0);
    if (r->rank == 0)
        psi_app_output_cleanup_on_signal();
    // The budget is each rank's: by default the node's share (§18.5).
    budget = r->s.o.memory != 0 ? r->s.o.memory : psi_app_memory_default() / (uint64_t)local;
    if (budget < PSI_APP_MEMORY_MIN)
        budget = PSI_APP_MEMORY_MIN;
    psi_app_budget_init(&r->b, budget);
    psi_app_output_dir(out_dir, sizeof out_dir, r->s.o.output);
    snprintf(r->temp_dir, sizeof r->temp_dir, "%s", psi_app_temp_dir(r->s.o.temp_dir, out_dir));
    // Rank 0's merge buffers, a chunk a rank: at most 64 MiB, and an
    // eighth of the budget.
    merge = budget / 8 < MPI_MERGE_BYTES ? budget / 8 : MPI_MERGE_BYTES;
    chunk = (size_t)merge / (PSI_ELEMENT_BYTES + sizeof(uint64_t)) / (size_t)r->size;
    r->chunk = chunk > MPI_CHUNK_MAX ? MPI_CHUNK_MAX : chunk < MPI_CHUNK_MIN ? MPI_CHUNK_MIN
                                                                           : chunk;
    return run(r);
}

int main(int argc, char **argv)
{
    psi_mpi_run r;
    int provided = 0, rc;

    psi_app_malloc_setup(); // a spilled step's peak must not grow with its chunks
    psi_app_set_program("shardpsi-mpi"); // the options' messages name it
    // Before OpenSSL's first allocation, as psi does (psi.h).
    if (psi_openssl_wipe_on_free() != PSI_OK || sodium_init() < 0) {
        fprintf(stderr, "shardpsi-mpi: cannot set up the crypto libraries\n");
        return PSI_APP_EXIT_FAIL;
    }
    MPI_Init_thread(&argc, &argv, MPI_THREAD_FUNNELED, &provided);
    memset(&r, 0, sizeof r);
    MPI_Comm_rank(MPI_COMM_WORLD, &r.rank);
    MPI_Comm_size(MPI_COMM_WORLD, &r.size);
    r.counts = calloc((size_t)r.size, sizeof *r.counts);
    r.offsets = calloc((size_t)r.size, sizeof *r.offsets);
    r.status = calloc((size_t)r.size, sizeof *r.status);
    if (r.counts == NULL || r.offsets == NULL || r.status == NULL) {
        fprintf(stderr, "shardpsi-mpi: rank %d: out of memory\n", r.rank);
        MPI_Abort(MPI_COMM_WORLD, PSI_APP_EXIT_FAIL);
    }
    rc = psi_mpi_main(&r, argc, argv);
    psi_app_offline_free(&r.s); // wipes and frees the key's engines
    free(r.counts);
    free(r.offsets);
    free(r.status);
    MPI_Finalize();
    return rc;
}
