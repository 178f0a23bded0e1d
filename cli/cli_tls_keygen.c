/*
 * `shardpsi tls-keygen`: the pinned-key form of the transport
 * (PROTOCOL.md §15.6) in one command per side: a P-256 key and a
 * self-signed certificate, and the key's SHA-256 fingerprint that the peer
 * gives as --tls-peer-key.  --fingerprint prints the fingerprint of an
 * existing certificate.
 */
#include <stdio.h>
#include <string.h>

#include "app_util.h"
#include "cli_commands.h"
#include "net_tls.h"

#define TLS_KEYGEN_DEFAULT_DAYS 825

void psi_cli_tls_keygen_usage(FILE *out)
{
    fprintf(out,
        "Usage: shardpsi tls-keygen --cert CERT --key KEY [--name NAME] [--days D]\n"
        "       shardpsi tls-keygen --fingerprint CERT\n"
        "\n"
        "Makes a P-256 key (KEY, mode 0600) and a self-signed certificate for it\n"
        "(CERT), for `shardpsi server` and `shardpsi client` with pinned keys and no\n"
        "CA, and prints the key's fingerprint: the SHA-256 of its public key, as\n"
        "`sha256:` and 64 hex digits.  Each side runs it once and gives the other\n"
        "its fingerprint (over any channel that cannot be tampered with: reading it\n"
        "aloud will do), which the other passes as --tls-peer-key.  Neither file is\n"
        "overwritten if it exists, and on failure neither is left.\n"
        "\n"
        "  --cert CERT          the certificate to write (PEM)\n"
        "  --key KEY            the private key to write (PEM, mode 0600)\n"
        "  --name NAME          the certificate's subject name (default: shardpsi);\n"
        "                       pinning ignores it, and the server's log shows it\n"
        "  --days D             validity from now, in days (default %d)\n"
        "  --fingerprint CERT   print the key fingerprint of CERT and write nothing\n"
        "\n"
        "Exit status: 0, 1 when the files could not be made, 2 for a usage error.\n",
        TLS_KEYGEN_DEFAULT_DAYS);
}

int psi_cli_cmd_tls_keygen(int argc, char **argv)
{
    const char *cert = NULL, *key = NULL, *name = "shardpsi", *fp_of = NULL, *v;
    char fp[PSI_NET_TLS_FP_HEX + 1], err[1024];
    size_t days = TLS_KEYGEN_DEFAULT_DAYS;

    for (int i = 1; i < argc; i++) {
        v = NULL;
        if (psi_app_is_help(argv[i])) {
            psi_cli_tls_keygen_usage(stdout);
            return PSI_APP_EXIT_OK;
        }
        if (psi_app_opt_value(argc, argv, &i, "--cert", &v)) {
            if ((cert = v) == NULL)
                return PSI_APP_EXIT_USAGE;
        } else if (psi_app_opt_value(argc, argv, &i, "--key", &v)) {
            if ((key = v) == NULL)
                return PSI_APP_EXIT_USAGE;
        } else if (psi_app_opt_value(argc, argv, &i, "--name", &v)) {
            if ((name = v) == NULL)
                return PSI_APP_EXIT_USAGE;
        } else if (psi_app_opt_value(argc, argv, &i, "--fingerprint", &v)) {
            if ((fp_of = v) == NULL)
                return PSI_APP_EXIT_USAGE;
        } else if (psi_app_opt_value(argc, argv, &i, "--days", &v)) {
            if (v == NULL || psi_app_parse_count(&days, v, 36500, "tls-keygen: --days") != 0)
                return PSI_APP_EXIT_USAGE;
            if (days == 0) {
                psi_app_error("tls-keygen: --days must be at least 1");
                return PSI_APP_EXIT_USAGE;
            }
        } else {
            psi_app_error("tls-keygen: unknown argument '%s' (see 'shardpsi tls-keygen "
                          "--help')", argv[i]);
            return PSI_APP_EXIT_USAGE;
        }
    }
    if (fp_of != NULL) {
        if (cert != NULL || key != NULL) {
            psi_app_error("tls-keygen: --fingerprint writes nothing: give it alone");
            return PSI_APP_EXIT_USAGE;
        }
        if (psi_net_tls_fingerprint_file(fp, fp_of, err, sizeof err) != 0) {
            psi_app_error("tls-keygen: %s", err);
            return PSI_APP_EXIT_FAIL;
        }
        printf("sha256:%s\n", fp);
        return PSI_APP_EXIT_OK;
    }
    if (cert == NULL || key == NULL) {
        psi_app_error("tls-keygen: --cert CERT and --key KEY are required (see 'shardpsi "
                      "tls-keygen --help')");
        return PSI_APP_EXIT_USAGE;
    }
    if (psi_net_tls_keygen(cert, key, name, (int)days, fp, err, sizeof err) != 0) {
        psi_app_error("tls-keygen: %s", err);
        return PSI_APP_EXIT_FAIL;
    }
    fprintf(stderr, "shardpsi tls-keygen: wrote %s and %s (CN=%s, valid %zu days); give the "
            "peer this fingerprint for its --tls-peer-key:\n", key, cert, name, days);
    printf("sha256:%s\n", fp);
    return PSI_APP_EXIT_OK;
}
