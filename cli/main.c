/* The `shardpsi` command line tool: dispatches through one table to one file
 * per command. */
#include <stdio.h>
#include <string.h>

#include "app_offline.h"
#include "app_util.h"
#include "bench_command.h"
#include "cli_commands.h"
#include "psi.h"

static const char psi_main_usage_text[] =
    "Usage: shardpsi <command> [options]\n"
    "\n"
    "ECDH private set intersection, wire-compatible with OpenMined PSI 2.0.6\n"
    "in its default suite.\n"
    "\n"
    "Commands:\n"
    "  vectors check FILE...  check wire vector files against this library\n"
    "  demo [options]         run the protocol on generated sets and time it\n"
    "  bench [options]        values/s of every operation against the hardware\n"
    "                         limit, on one engine, shards and psi.js\n"
    "  server [options]       answer a shardpsi client over the network with the\n"
    "                         values of a file (--listen HOST:PORT --input FILE)\n"
    "  client [options]       run an intersection with a shardpsi server and write\n"
    "                         the result (--connect HOST:PORT --input FILE\n"
    "                         --output FILE)\n"
    "  tls-keygen --cert CERT --key KEY  make a TLS key and self-signed\n"
    "                         certificate for server/client and print the key's\n"
    "                         fingerprint, for the peer's --tls-peer-key\n"
    "  keygen --output KEY    write a new key file (mode 0600) for the offline\n"
    "                         commands below, which run one step each with\n"
    "                         their messages in files (the wire bytes):\n"
    "  setup [options]        server: mask a file's values into a setup message\n"
    "  request [options]      client: mask a file's values into a request\n"
    "  response [options]     server: answer a request file with a response\n"
    "  match [options]        client: the intersection from the setup and the\n"
    "                         response, written as 'shardpsi client' writes it\n"
    "  payloads [options]     server: chosen CSV columns of its rows, encrypted\n"
    "                         for 'match --payloads' (a private join)\n"
    "  help [COMMAND]         show help for shardpsi or for a command\n"
    "\n"
    "Both 'vectors check' and 'demo' take --shards N and --threads T to run\n"
    "every engine operation through the sharding layer: N engines per party\n"
    "on T threads, with the same results as one engine.  The demo runs\n"
    "sharded by default (a thread per online CPU; --single-engine not).\n"
    "\n"
    "Every command but 'vectors check' (where each file names its own) takes\n"
    "--suite NAME, the ciphersuite: openmined-p256 (the default: OpenMined\n"
    "PSI's P-256 and hashing), p256-sswu (P-256, RFC 9380 hashing) or\n"
    "ristretto255; 'bench' also takes a list or 'all'.  Both sides of a\n"
    "server/client round must use the same suite.\n"
    "\n"
    "Options:\n"
    "  -h, --help     show this help\n"
    "  --version      show the version and the arithmetic this CPU runs\n"
    "  --arith auto|portable  before the command: 'auto' (the default) masks\n"
    "                 eight values at a time with AVX-512 IFMA where the CPU\n"
    "                 has it, 'portable' never (the same bytes either way;\n"
    "                 the environment variable SHARDPSI_ARITH=portable does\n"
    "                 the same)\n"
    "\n"
    "Exit status: 0 success, 1 failure (a check failed or an error at run\n"
    "time), 2 usage error or unusable input file.\n";

/* The commands: name, run (argv from the name on; returns the exit code) and
 * help.  The offline commands share one entry point, and their help is
 * psi_app_offline_usage of their name (usage NULL). */
typedef struct psi_main_cmd {
    const char *name;
    int (*run)(int argc, char **argv);
    void (*usage)(FILE *out);
} psi_main_cmd;

static void psi_main_usage(FILE *out) { fputs(psi_main_usage_text, out); }

static const psi_main_cmd psi_main_cmds[] = {
    {"vectors", psi_cli_cmd_vectors, psi_cli_vectors_usage},
    {"demo", psi_cli_cmd_demo, psi_cli_demo_usage},
    {"bench", psi_bench_cmd, psi_bench_usage},
    {"server", psi_cli_cmd_server, psi_cli_server_usage},
    {"client", psi_cli_cmd_client, psi_cli_client_usage},
    {"tls-keygen", psi_cli_cmd_tls_keygen, psi_cli_tls_keygen_usage},
    {"keygen", psi_cli_cmd_offline, NULL},
    {"setup", psi_cli_cmd_offline, NULL},
    {"request", psi_cli_cmd_offline, NULL},
    {"response", psi_cli_cmd_offline, NULL},
    {"match", psi_cli_cmd_offline, NULL},
    {"payloads", psi_cli_cmd_offline, NULL},
    {"help", NULL, psi_main_usage},  // run: psi_main_help
};

static const psi_main_cmd *psi_main_find(const char *name)
{
    for (size_t i = 0; i < sizeof psi_main_cmds / sizeof psi_main_cmds[0]; i++)
        if (strcmp(psi_main_cmds[i].name, name) == 0)
            return &psi_main_cmds[i];
    return NULL;
}

static int psi_main_help(int argc, char **argv)
{
    const psi_main_cmd *c;

    if (argc < 2) {
        psi_main_usage(stdout);
        return PSI_APP_EXIT_OK;
    }
    if (argc > 2) {
        psi_app_error("help: too many arguments");
        return PSI_APP_EXIT_USAGE;
    }
    if ((c = psi_main_find(argv[1])) == NULL) {
        psi_app_error("help: unknown command '%s'", argv[1]);
        return PSI_APP_EXIT_USAGE;
    }
    if (c->usage != NULL)
        c->usage(stdout);
    else
        psi_app_offline_usage(stdout, c->name);
    return PSI_APP_EXIT_OK;
}

static int psi_main_dispatch(int argc, char **argv)
{
    const psi_main_cmd *c;

    if (argc < 2) {
        psi_app_error("missing command (see 'shardpsi --help')");
        return PSI_APP_EXIT_USAGE;
    }
    if (psi_app_is_help(argv[1]))
        return psi_main_help(1, argv + 1);
    if (strcmp(argv[1], "--arith") == 0) {
        const char *v = argc > 2 ? argv[2] : "";
        if (strcmp(v, "auto") != 0 && strcmp(v, "portable") != 0) {
            psi_app_error("--arith takes 'auto' or 'portable', not '%s'", v);
            return PSI_APP_EXIT_USAGE;
        }
        psi_arith_set(strcmp(v, "auto") == 0 ? PSI_ARITH_AUTO : PSI_ARITH_PORTABLE);
        return psi_main_dispatch(argc - 2, argv + 2);
    }
    if (strcmp(argv[1], "--version") == 0) {
        printf("shardpsi %s\narithmetic: %s\n", psi_version(),
               psi_arith_get() == PSI_ARITH_IFMA ? "AVX-512 IFMA, eight values at a time"
                                                  : "portable");
        return PSI_APP_EXIT_OK;
    }
    if ((c = psi_main_find(argv[1])) != NULL)
        return c->run != NULL ? c->run(argc - 1, argv + 1) : psi_main_help(argc - 1, argv + 1);
    if (argv[1][0] == '-')
        psi_app_error("unknown option '%s' (see 'shardpsi --help')", argv[1]);
    else
        psi_app_error("unknown command '%s' (see 'shardpsi --help')", argv[1]);
    return PSI_APP_EXIT_USAGE;
}

int main(int argc, char **argv)
{
    psi_app_malloc_setup(); // a spilled step's peak must not grow with its chunks
    // First, before anything uses OpenSSL: its P-256 code frees copies of
    // the key unwiped unless its allocator wipes (psi.h).
    if (psi_openssl_wipe_on_free() != PSI_OK) {
        psi_app_error("cannot make OpenSSL wipe the memory it frees");
        return PSI_APP_EXIT_FAIL;
    }
    int rc = psi_main_dispatch(argc, argv);

    // A full disk or closed pipe must not pass for success.
    if (fflush(stdout) != 0 || ferror(stdout)) {
        psi_app_error("cannot write to standard output");
        return rc == PSI_APP_EXIT_OK ? PSI_APP_EXIT_FAIL : rc;
    }
    return rc;
}
