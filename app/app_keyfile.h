/*
 * Key files of the `shardpsi` commands: the key as 64 hexadecimal digits
 * (PROTOCOL.md §2.3's 32 big-endian bytes for the P-256 suites, §16.3's 32
 * little-endian bytes for ristretto255), then, for a suite other than
 * openmined-p256, a space and the suite's name, and a line break, in a file
 * only its owner can read.  A file without a suite name holds an
 * openmined-p256 key (the format of builds before the suites).  The key passes through a stack buffer of this file on its
 * way to or from the engine's guarded memory, and that buffer is wiped; the
 * key's bytes never appear in a message.
 */
#ifndef PSI_APP_KEYFILE_H
#define PSI_APP_KEYFILE_H

#include <stddef.h>

#include "psi.h"

/** Loads the engine's key from `path`, or, when no file of that name exists,
 *  creates the engine with a fresh key and writes it there (mode 0600,
 *  O_EXCL: an existing file is never overwritten).  An existing file must be
 *  a regular file whose mode gives the group and others no access (else it
 *  is refused with the chmod to run) and must hold exactly 64 hex digits
 *  (then optional whitespace); the key must be in [1, n-1].
 *  The engine has the default settings: it holds the key, and the commands
 *  clone it with their role and reveal flag (psi_engine_clone).
 *  Returns: 0, or -1 with a message in err.  Out: *e (NULL on failure),
 *  *created (1 if the file was written). */
int psi_app_keyfile_engine(psi_engine **e, int *created, const char *path, char *err,
                           size_t err_len);

/** As psi_app_keyfile_engine, for a key of `suite` (psi_suite): a new file
 *  records the suite, and an existing file of another suite is refused with
 *  a message naming both suites (never a byte of the key).  The engine has
 *  the default settings but the suite. */
int psi_app_keyfile_engine_suite(psi_engine **e, int *created, const char *path,
                                 int suite, char *err, size_t err_len);

#endif /* PSI_APP_KEYFILE_H */
