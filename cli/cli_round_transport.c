/*
 * The transport options of `shardpsi server` and `shardpsi client`
 * (PROTOCOL.md §15.6): TLS 1.3 with a CA or pinned keys by default, plain
 * TCP only with --no-tls, and then only on loopback unless
 * --trusted-network says the network is trusted.  See cli_round.h.
 */
#include "cli_round.h"

#include <arpa/inet.h>
#include <netdb.h>
#include <netinet/in.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>

#include "app_util.h"
#include "net.h"

int psi_cli_round_transport_opt(psi_cli_round_opts *o, int argc, char **argv, int *i,
                                const char *cmd)
{
    static const struct {
        const char *name;
        size_t off;
        int client_only; // 1: the client's only, 2: the server's only
    } files[] = {
        {"--tls-cert", offsetof(psi_net_tls_opts, cert), 0},
        {"--tls-key", offsetof(psi_net_tls_opts, key), 0},
        {"--tls-ca", offsetof(psi_net_tls_opts, ca), 0},
        {"--tls-peer-key", offsetof(psi_net_tls_opts, peer_key), 0},
        {"--tls-name", offsetof(psi_net_tls_opts, name), 1},
        {"--tls-peer-name", offsetof(psi_net_tls_opts, name), 2},
    };
    char what[64];
    const char *v = NULL;
    size_t n;

    if (strcmp(argv[*i], "--no-tls") == 0)
        return o->no_tls = 1, 1;
    if (strcmp(argv[*i], "--trusted-network") == 0)
        return o->trusted_network = 1, 1;
    for (size_t k = 0; k < sizeof files / sizeof files[0]; k++) {
        if ((files[k].client_only == 1 && strcmp(cmd, "client") != 0) ||
            (files[k].client_only == 2 && strcmp(cmd, "server") != 0))
            continue;
        if (psi_app_opt_value(argc, argv, i, files[k].name, &v)) {
            if (v == NULL)
                return -1;
            *(const char **)((char *)&o->tls + files[k].off) = v;
            return 1;
        }
    }
    snprintf(what, sizeof what, "%s: --handshake-timeout", cmd);
    if (psi_app_opt_value(argc, argv, i, "--handshake-timeout", &v)) {
        if (v == NULL || psi_app_parse_count(&n, v, 3600, what) != 0)
            return -1;
        if (n == 0) {
            psi_app_error("%s: must be at least 1 second", what);
            return -1;
        }
        o->handshake_timeout_ms = (int)n * 1000;
        return 1;
    }
    return 0;
}

/* Whether every address `host` names is a loopback address. */
static int transport_is_loopback(const char *host)
{
    struct addrinfo hints, *res = NULL;
    int all = 1;

    memset(&hints, 0, sizeof hints);
    hints.ai_family = AF_UNSPEC;
    hints.ai_socktype = SOCK_STREAM;
    if (getaddrinfo(host, NULL, &hints, &res) != 0 || res == NULL)
        return 0;
    for (struct addrinfo *a = res; a != NULL; a = a->ai_next) {
        if (a->ai_family == AF_INET) {
            const struct sockaddr_in *in = (const void *)a->ai_addr;
            all &= (ntohl(in->sin_addr.s_addr) >> 24) == 127;
        } else if (a->ai_family == AF_INET6) {
            const struct sockaddr_in6 *in6 = (const void *)a->ai_addr;
            const uint8_t *b = in6->sin6_addr.s6_addr;
            static const uint8_t mapped[12] = {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff};
            all &= IN6_IS_ADDR_LOOPBACK(&in6->sin6_addr) ||
                   (memcmp(b, mapped, 12) == 0 && b[12] == 127);
        } else {
            all = 0;
        }
    }
    freeaddrinfo(res);
    return all;
}

int psi_cli_round_transport(psi_net_tls **t, const psi_cli_round_opts *o, const char *cmd,
                            int is_server)
{
    const psi_net_tls_opts *x = &o->tls;
    char host[256], port[16], err[1024];

    *t = NULL;
    if (o->no_tls) {
        if (x->cert || x->key || x->ca || x->peer_key || x->name) {
            psi_app_error("%s: --no-tls and --tls-* options together: choose one", cmd);
            return -1;
        }
        if (psi_net_parse_addr(host, sizeof host, port, sizeof port, o->addr, err,
                               sizeof err) != 0) {
            psi_app_error("%s: %s", cmd, err);
            return -1;
        }
        if (!o->trusted_network && !transport_is_loopback(host)) {
            psi_app_error("%s: --no-tls sends every frame in the clear and lets anyone "
                          "who reaches %s %s; it is allowed only on a loopback address "
                          "unless --trusted-network says the network between the two "
                          "sides is trusted", cmd, o->addr,
                          is_server ? "query this server" : "pose as the server");
            return -1;
        }
        return 0;
    }
    if (o->trusted_network) {
        psi_app_error("%s: --trusted-network is for --no-tls", cmd);
        return -1;
    }
    if (x->cert == NULL || x->key == NULL || (x->ca == NULL && x->peer_key == NULL)) {
        psi_app_error("%s: the round runs over mutually authenticated TLS: give --tls-cert "
                      "FILE --tls-key FILE and either --tls-ca FILE (certificates from a "
                      "CA) or --tls-peer-key FINGERPRINT (keys from `shardpsi tls-keygen`); "
                      "--no-tls runs plain TCP on loopback (see 'shardpsi %s --help')",
                      cmd, cmd);
        return -1;
    }
    if (x->ca != NULL && x->peer_key != NULL) {
        psi_app_error("%s: give one of --tls-ca and --tls-peer-key, not both", cmd);
        return -1;
    }
    if (x->name != NULL && x->ca == NULL) {
        psi_app_error(is_server ? "%s: --tls-peer-name is for --tls-ca (a pinned key is "
                                  "already one client's)"
                                : "%s: --tls-name is for --tls-ca (a pinned key names no host)",
                      cmd);
        return -1;
    }
    if (is_server && x->name != NULL) {
        const char *p = x->name;
        for (size_t n; *p != '\0'; p += n + (p[n] == ',')) {
            n = strcspn(p, ",");
            if (n == 0 || n > 253) {
                psi_app_error("%s: --tls-peer-name %s: a comma-separated list of names, none "
                              "empty or longer than 253 characters", cmd, x->name);
                return -1;
            }
        }
    }
    if (is_server && x->ca != NULL && x->name == NULL)
        psi_app_error("%s: warning: any client holding a certificate of %s is served: "
                      "--tls-peer-name NAMES limits it to those names", cmd, x->ca);
    if (psi_net_tls_new(t, x, is_server, err, sizeof err) != 0) {
        psi_app_error("%s: %s", cmd, err);
        return -1;
    }
    return 0;
}

void psi_cli_round_transport_name(char *out, size_t cap, const psi_cli_round_opts *o)
{
    if (o->no_tls)
        snprintf(out, cap, "plain TCP, no TLS%s",
                 o->trusted_network ? ", on a network said to be trusted" : "");
    else if (o->tls.ca != NULL && o->tls.name != NULL)
        snprintf(out, cap, "TLS 1.3, peers certified by %s and named %s", o->tls.ca,
                 o->tls.name);
    else if (o->tls.ca != NULL)
        snprintf(out, cap, "TLS 1.3, peers certified by %s", o->tls.ca);
    else
        snprintf(out, cap, "TLS 1.3, pinned peer key");
}

void psi_cli_round_transport_usage(FILE *out, int is_server)
{
    fprintf(out,
        "Transport (mutually authenticated TLS 1.3 unless --no-tls):\n"
        "  --tls-cert FILE      this side's certificate (PEM; a chain for --tls-ca)\n"
        "  --tls-key FILE       its private key (PEM, mode 0600)\n"
        "  --tls-ca FILE        accept a peer whose certificate chains to a CA of FILE%s\n"
        "  --tls-peer-key FP    accept only the peer whose key has fingerprint FP (the\n"
        "                       SHA-256 `shardpsi tls-keygen` prints; no CA needed)\n"
        "%s"
        "%s"
        "  --no-tls             plain TCP: anyone on the path reads and changes the\n"
        "                       frames, and %s; allowed only on\n"
        "                       loopback unless --trusted-network\n"
        "  --trusted-network    allow --no-tls beyond loopback\n"
        "  --handshake-timeout S  the connection must reach an agreed handshake (TLS\n"
        "                       and HELLO/ACCEPT) within S seconds (default %d);\n"
        "                       keepalives do not extend it\n",
        is_server ? "" : ";\n                       the server's certificate must name the host of\n"
                         "                       --connect (a DNS name or address) or --tls-name",
        is_server ? "" : "  --tls-name NAME      with --tls-ca: the name the server's certificate\n"
                         "                       must carry instead of --connect's host\n",
        is_server ? "  --tls-peer-name NAMES  with --tls-ca: serve only clients whose certificate\n"
                    "                       carries one of these comma-separated names (a DNS\n"
                    "                       name of its subjectAltName, or its CN without one);\n"
                    "                       without it any certificate of the CA is served\n"
                  : "",
        is_server ? "any client may query the server" : "anyone may pose as the server",
        PSI_NET_DEFAULT_HANDSHAKE_TIMEOUT_S);
}
