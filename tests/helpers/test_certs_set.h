/*
 * A set of PEM certificates and keys for the TLS tests (test_certs_set.c),
 * written into an existing directory: ca, server (CN server, SAN
 * DNS:localhost and IP:127.0.0.1), client (CN client-1), expired-server,
 * expired-client and wrongname-server (SAN DNS:elsewhere.example only), all
 * signed by ca; other-ca, and rogue-server and rogue-client signed by it.
 * Each NAME gives NAME.pem and NAME.key (mode 0600).
 */
#ifndef TEST_CERTS_SET_H
#define TEST_CERTS_SET_H

/** Writes the set into dir.  Returns: 0 or -1 (a message on stderr). */
int test_certs_write(const char *dir);

#endif /* TEST_CERTS_SET_H */
