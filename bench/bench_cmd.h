/*
 * `shardpsi bench`: what its files share.  bench_cmd_opts.c parses the options,
 * bench_cmd.c runs the rounds; bench_cmd_run.c times the C columns (psi.h
 * and psi_shard.h), bench_cmd_psijs.c the psi.js column (a Node child),
 * bench_cmd_sys.c the hardware limit S, peak memory, child processes and
 * machine facts; bench_cmd_report.c writes the table and the JSON,
 * bench_cmd_svg.c the chart.
 */
#ifndef PSI_BENCH_CMD_H
#define PSI_BENCH_CMD_H

#include <stdio.h>
#include <stddef.h>
#include <sys/types.h>

#include "app_sets.h"
#include "app_party.h"
#include "psi.h"

/* The operations, in the order they run: each one's output feeds later
 * ones (request -> response -> intersection and association). */
enum {
    PSI_BENCH_CMD_SETUP_RAW,
    PSI_BENCH_CMD_SETUP_GCS,
    PSI_BENCH_CMD_REQUEST,
    PSI_BENCH_CMD_RESPONSE,
    PSI_BENCH_CMD_INTERSECTION,
    PSI_BENCH_CMD_ASSOCIATION,
    PSI_BENCH_CMD_OPS
};

/* The measured columns, in the order a round runs them (S comes before
 * and after them). */
enum {
    PSI_BENCH_CMD_ONE,      // one engine, psi.h
    PSI_BENCH_CMD_PSIJS,    // @openmined/psi.js in Node
    PSI_BENCH_CMD_SHARDS4,  // psi_shards, 4 shards, inline (1 thread)
    PSI_BENCH_CMD_ALL,      // psi_shards, T threads, 4T shards
    PSI_BENCH_CMD_COLS
};

// Most rounds --rounds takes.
#define PSI_BENCH_CMD_MAX_ROUNDS ((size_t)1000)
// False-positive rate of the GCS setup, for the whole client query.
#define PSI_BENCH_CMD_FPR 1e-6

/* --psijs */
typedef enum psi_bench_js_mode {
    PSI_BENCH_CMD_JS_OFF,
    PSI_BENCH_CMD_JS_AUTO,
    PSI_BENCH_CMD_JS_ON
} psi_bench_js_mode;

typedef struct psi_bench_opts {
    size_t values;    // per side
    size_t rounds;
    size_t threads;   // of the all-cores column; its shards are 4x
    uint64_t seed;
    double s_seconds; // length of each S measurement
    int op_on[PSI_BENCH_CMD_OPS];  // --ops: 1 if timed and reported
    psi_bench_js_mode js;
    const char *node;       // --node, or NULL: `node` on PATH
    const char *script;     // --psijs-script, or the compiled-in path
    const char *out_dir;   // this suite's directory (DIR/<suite> for several)
    const char *base_dir;  // --out-dir
    int suites[3];         // --suite: the suites to run, in order
    size_t n_suites;
    int suite;             // the suite being run (psi_suite)
} psi_bench_opts;

/* One measurement of one column.  `done` is 0 when it was not run (the
 * psi.js column when off); peak_mib is NAN when memory is not measured. */
typedef struct psi_bench_figure {
    int done;
    double seconds;
    double rate;      // values per second
    double peak_mib;  // peak RSS minus the RSS before the call
    size_t count;     // result count, or the output's length in bytes
} psi_bench_figure;

typedef struct psi_bench_round {
    double s_before, s_after;  // ECDH derivations per second
    psi_bench_figure fig[PSI_BENCH_CMD_COLS];
} psi_bench_round;

/* Everything the reports need: options, machine, and per op the rounds
 * (NULL for an op not selected). */
typedef struct psi_bench_report {
    const psi_bench_opts *o;
    size_t online_cpus;
    size_t overlap;            // client values also in the server set
    char cpu_model[128];
    char date[32];             // UTC, ISO 8601
    const char *openssl;       // libcrypto's version string
    double openssl_speed;      // `openssl speed` figure, NAN if not run
    char openssl_note[160];    // why it was not run, or ""
    int js_ran;                // 1 if the psi.js column has figures
    char js_note[256];         // why psi.js was skipped, or ""
    char node_version[32];
    char psijs_version[32];
    psi_bench_round *rounds[PSI_BENCH_CMD_OPS];
} psi_bench_report;

/* The medians over the rounds of one op; NAN where there is no figure. */
typedef struct psi_bench_medians {
    double s;
    double rate[PSI_BENCH_CMD_COLS];
    double peak[PSI_BENCH_CMD_COLS];
    double one_per_s, all_per_one, shards4_per_one, one_per_js, all_per_js;
} psi_bench_medians;

/** Returns: the op's name ("setup_raw"). */
const char *psi_bench_op_name(int op);
/** Returns: the column's name ("1 thread"). */
const char *psi_bench_col_name(int col);

/* -------------------------------------------------- bench_cmd_opts.c */

/** Parses the options of `shardpsi bench` (argv[0] is "bench") and fills in
 *  the defaults.  Returns: 0, 1 after printing the help, -1 after a usage
 *  message. */
int psi_bench_parse(psi_bench_opts *o, int argc, char **argv);

/** Creates dir and its missing parents.  Returns: 0, or -1 after a
 *  message. */
int psi_bench_mkdirs(const char *dir);

/* ------------------------------------------------ bench_cmd_report.c */

/** Out: the medians of op `op` of `r` (which must have rounds). */
void psi_bench_medians_of(psi_bench_medians *m,
                              const psi_bench_report *r, int op);
/** Writes n with thousands separators ("12,345"), rounded; "-" for NAN. */
void psi_bench_fmt_rate(char *out, size_t cap, double v);
/** Prints the text report (header lines and the table) to `f`. */
void psi_bench_text(FILE *f, const psi_bench_report *r);
/** Writes bench.json and bench.txt into o->out_dir.  Returns: 0, or -1
 *  after a message. */
int psi_bench_write_files(const psi_bench_report *r);

/* The medians of 1 thread and all cores, by suite and op (NAN: not run),
 * for the table of a run of several suites. */
typedef struct psi_bench_suites {
    size_t n;
    int suite[3];
    double one[3][PSI_BENCH_CMD_OPS];
    double all[3][PSI_BENCH_CMD_OPS];
} psi_bench_suites;

/** Prints the table of a run of several suites to `f`. */
void psi_bench_suites_text(FILE *f, const psi_bench_opts *o,
                               const psi_bench_suites *t);

/* --------------------------------------------------- bench_cmd_svg.c */

/** Writes the chart as SVG text to `f`.  Returns: 0, or -1 on a write
 *  error. */
int psi_bench_svg(FILE *f, const psi_bench_report *r);

/* --------------------------------------------------- bench_cmd_run.c */

/* The C columns: three parties per side with the same keys (so every
 * column must give the same bytes), and the single engine's outputs, which
 * later ops take as input. */
typedef struct psi_bench_c {
    const psi_app_demo_sets *sets;
    psi_app_party server[PSI_BENCH_CMD_COLS];  // unused at PSI_BENCH_CMD_PSIJS
    psi_app_party client[PSI_BENCH_CMD_COLS];
    uint8_t *msg[PSI_BENCH_CMD_RESPONSE + 1];  // by op, the messages
    size_t msg_len[PSI_BENCH_CMD_RESPONSE + 1];
    size_t *idx;          // the intersection, once run
    size_t idx_count;
    psi_pair *pairs;      // the association table, once run
    size_t pairs_count;
    int have[PSI_BENCH_CMD_OPS];  // 1 once the op's output is kept
    int mem;              // 1 if peak memory can be measured
    int suite;            // the parties' suite (psi_suite)
} psi_bench_c;

/** Builds the parties of `suite`: one engine, 4 shards inline, and 4T
 *  shards on T threads.  Returns: 0, or -1 after a message.  Out: *c,
 *  freed with psi_bench_c_free (also after a failure). */
int psi_bench_c_init(psi_bench_c *c, const psi_app_demo_sets *s,
                         size_t threads, int mem, int suite);
void psi_bench_c_free(psi_bench_c *c);

/** Runs op on C column col, timed, then checks its output: against the
 *  plain intersection, and byte for byte against the single engine's.
 *  Returns: 0, -1 after a message on an error, 1 after a message when the
 *  result is wrong.  Out: *fig. */
int psi_bench_c_run(psi_bench_c *c, int op, int col, psi_bench_figure *fig);

/** Checks a result count of the psi.js column (intersection: every true
 *  match plus the few false positives GCS may give; association, run as an
 *  intersection against the raw setup: exact).  Returns: 0 if right. */
int psi_bench_count_ok(const psi_app_demo_sets *s, int op, size_t count);

/* --------------------------------------------------- bench_cmd_sys.c */

/** Out: *rate, P-256 ECDH derivations per second on this thread, measured
 *  as `openssl speed ecdhp256` does (EVP_PKEY_derive with a fixed peer
 *  key) for about `seconds`.  Returns: 0, or -1 after a message. */
int psi_bench_ecdh_rate(double *rate, double seconds);

/** Returns: the version string of the libcrypto in use. */
const char *psi_bench_openssl_version(void);

/** Runs `openssl speed -seconds 2 ecdhp256` if openssl is on PATH.
 *  Out: *rate (NAN if not run) and a note saying why not. */
void psi_bench_openssl_speed(double *rate, char *note, size_t cap);

/** Returns: 1 if peak memory can be measured (/proc/self/clear_refs is
 *  writable), else 0. */
int psi_bench_mem_usable(void);
/** Starts a peak-memory window: trims malloc, resets VmHWM to the current
 *  RSS.  Returns: the RSS in KiB, or -1 if it cannot. */
long psi_bench_mem_begin(void);
/** Returns: VmHWM minus `base` in MiB, or NAN when base < 0 or VmHWM
 *  cannot be read. */
double psi_bench_mem_end(long base);

/** Out: the first "model name" of /proc/cpuinfo, or "unknown". */
void psi_bench_cpu_model(char *out, size_t cap);
/** Returns: the online CPUs, at least 1. */
size_t psi_bench_online_cpus(void);

/** Finds a program: `name` itself if it holds a '/', else the first
 *  executable PATH entry.  Returns: 0 with the path in out, -1 if none. */
int psi_bench_find_program(char *out, size_t cap, const char *name);

/* A child process with its standard input and output on pipes. */
typedef struct psi_bench_child {
    pid_t pid;    // 0 when none
    FILE *to;     // the child's standard input
    FILE *from;   // the child's standard output
} psi_bench_child;

/** Starts argv[0] (a path) with argv; its standard error is ours, or
 *  /dev/null when quiet_err.  Returns: 0, or -1 with a reason in err.
 *  Out: *c, ended with psi_bench_child_end (also after a failure). */
int psi_bench_child_start(psi_bench_child *c, char *const argv[], int quiet_err,
                        char *err, size_t err_len);
/** Closes the pipes (its standard input first, so a child reading it sees
 *  the end), terminates the child if `kill_it`, and waits for it.
 *  Returns: its exit status, or -1 if it did not exit normally. */
int psi_bench_child_end(psi_bench_child *c, int kill_it);

/* ------------------------------------------------- bench_cmd_psijs.c */

typedef struct psi_bench_js {
    psi_bench_child child;
    char dir[256];        // temporary directory of the value files, or ""
    int ready;            // 1 once the child said it loaded psi.js
    int ended;            // 1 once its output ended
    int hung;             // 1 if it did not answer in time: it is killed
    int have[PSI_BENCH_CMD_OPS];  // 1 once psi.js ran the op
} psi_bench_js;

/** Writes the sets to files and starts the Node child, which loads psi.js.
 *  Returns: 0 when it is ready; 1 when psi.js is unavailable (no node, no
 *  script, psi.js not installed or another version), with the reason in
 *  `why`; -1 after a message on another error.  Out: *js, versions into
 *  r->node_version and r->psijs_version; stopped with
 *  psi_bench_js_stop (also after a failure). */
int psi_bench_js_start(psi_bench_js *js, psi_bench_report *r,
                           const psi_app_demo_sets *s, char *why, size_t why_len);

/** Has the child run op, timed.  Returns: 0, or -1 after a message.
 *  Out: *fig. */
int psi_bench_js_run(psi_bench_js *js, int op, size_t values,
                         psi_bench_figure *fig);

/** Stops the child and removes the value files. */
void psi_bench_js_stop(psi_bench_js *js);

#endif /* PSI_BENCH_CMD_H */
