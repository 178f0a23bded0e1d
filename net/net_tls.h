/*
 * TLS 1.3 under the frames of net.h (OpenSSL's libssl), with mutual
 * authentication in one of two forms (PROTOCOL.md §15.6):
 *  - a CA: each side presents a certificate chain (--tls-cert, --tls-key)
 *    that the other verifies against its --tls-ca; the client also checks
 *    that the server's certificate names the host it connected to (a DNS
 *    name, or an IP address for an address literal) or --tls-name;
 *  - pinned keys: each side presents a certificate (self-signed, from
 *    `shardpsi tls-keygen`), and the other accepts exactly the public key
 *    whose SHA-256 fingerprint (of the DER SubjectPublicKeyInfo) it was
 *    given (--tls-peer-key); no CA is involved.
 * In both forms the peer's certificate must be within its validity dates.
 * Only TLS 1.3; no session tickets, no resumption, no renegotiation.
 *
 * Files: each of cert, key and ca must be a regular file (not a symlink),
 * owned by the effective user or root, and not writable by the group or
 * others; the key file also must give the group and others no access at
 * all (the message names the chmod to run).  They are read once, into
 * memory, when the context is made.
 *
 * After psi_net_tls_handshake succeeds on a connection, every send,
 * receive, keepalive, ERROR frame and close of net.h on it goes through
 * TLS; the frame layer's rules (timeouts, keepalives, the broken state)
 * are unchanged.  A record that fails TLS's integrity check (the bytes were
 * changed on the way) fails the operation with PSI_NET_EINTEGRITY.
 */
#ifndef PSI_NET_TLS_H
#define PSI_NET_TLS_H

#include <stddef.h>

#include "net.h"

/** Length of a key fingerprint in hex digits (SHA-256). */
#define PSI_NET_TLS_FP_HEX 64

/** The TLS options of `shardpsi server` and `shardpsi client`. */
typedef struct psi_net_tls_opts {
    const char *cert;      // --tls-cert: this side's PEM certificate (chain)
    const char *key;       // --tls-key: its PEM private key
    const char *ca;        // --tls-ca: PEM CA certificates for the peer's chain
    const char *peer_key;  // --tls-peer-key: the peer's key fingerprint, 64 hex
                           // digits (':' between byte pairs and a "sha256:"
                           // prefix allowed, case ignored)
    const char *name;      // client, CA form: the name the server's
                           // certificate must carry (default: --connect's host);
                           // server, CA form: --tls-peer-name, the names (comma-
                           // separated) of which the client's must carry one
                           // (NULL: any certificate of the CA)
} psi_net_tls_opts;

/** A TLS context of one side (opaque); one per process, shared by its
 *  connections (and by forked children). */
typedef struct psi_net_tls psi_net_tls;

/** Makes the context of a server (is_server 1) or a client: loads and
 *  checks cert and key (both required, and matching) and exactly one of ca
 *  and peer_key.  Returns: 0, or -1 with a message in err naming the file
 *  or option at fault.  Out: *t (NULL on failure). */
int psi_net_tls_new(psi_net_tls **t, const psi_net_tls_opts *o, int is_server, char *err,
                    size_t err_len);

/** Frees a context (NULL is a no-op); the key's memory is wiped. */
void psi_net_tls_free(psi_net_tls *t);

/** Runs the TLS handshake on c, a connection just made by psi_net_accept
 *  (server context) or psi_net_connect (client context), finishing by the
 *  absolute time deadline_ms (psi_app_now_ms) whatever bytes move.  host:
 *  the client's --connect host, for the name check and SNI (ignored by a
 *  server).  On success c->tls is set and c->peer_id names the peer
 *  ("CN=<subject CN>, key sha256:<first 16 hex digits>", the CN escaped
 *  as psi_net_escape does).  Returns: 0, or PSI_NET_ETLS (the peer's
 *  identity was refused by us or ours by it, or no TLS 1.3 was spoken:
 *  the message says which and why), _ETIMEOUT, _ECLOSED, _EIO, with the
 *  message in c->err. */
int psi_net_tls_handshake(psi_net_conn *c, psi_net_tls *t, const char *host,
                          double deadline_ms);

/** `shardpsi tls-keygen`: makes a P-256 key and a self-signed certificate
 *  for `name` (subject CN and subjectAltName: an IP address when name
 *  parses as one, else a DNS name), valid from now for `days` days, and
 *  writes them to key_path (mode 0600) and cert_path (mode 0644), both
 *  with O_EXCL: an existing file is never overwritten, and on any failure
 *  neither file is left.  Returns: 0, or -1 with a message.  Out: fp, the
 *  key's fingerprint (PSI_NET_TLS_FP_HEX lowercase hex digits and NUL). */
int psi_net_tls_keygen(const char *cert_path, const char *key_path, const char *name,
                       int days, char fp[PSI_NET_TLS_FP_HEX + 1], char *err, size_t err_len);

/** The key fingerprint of the first certificate in a PEM file (the file
 *  checks above do not apply: it is only read).  Returns: 0 or -1 with a
 *  message.  Out: fp as for psi_net_tls_keygen. */
int psi_net_tls_fingerprint_file(char fp[PSI_NET_TLS_FP_HEX + 1], const char *cert_path,
                                 char *err, size_t err_len);

#endif /* PSI_NET_TLS_H */
