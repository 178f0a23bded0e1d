/*
 * An output file that appears only when complete: written as a file without
 * a name (O_TMPFILE) in the target's directory, linked to a temporary name
 * and renamed over the target on commit, so a failed, interrupted or killed
 * (even SIGKILL) run leaves no half-written result (and any older file of
 * that name untouched); where the file system has no O_TMPFILE it is written
 * under the temporary name itself.  "-" writes to stdout instead (no rename).
 * The target's directory must be writable; a symbolic link at the target is
 * replaced by the new file, not followed.  A new file's mode is 0666 minus
 * the umask; a file that replaces a regular file takes its permission bits
 * (a 0600 result stays 0600).  An interrupting SIGINT, SIGTERM
 * or SIGHUP removes the temporary file too once
 * psi_app_output_cleanup_on_signal has been called.
 *
 * Thread-safety: none; open, commit and abort run on one thread (open sets
 * and restores the process umask to read it).
 */
#ifndef PSI_APP_OUTPUT_H
#define PSI_APP_OUTPUT_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

typedef struct psi_app_output {
    FILE *f;           // write here (stdout for "-")
    char *path;        // the target, NULL for stdout
    char *tmp;         // the temporary name, NULL for stdout
    int anon;          // the file has no name until commit (O_TMPFILE)
} psi_app_output;

/** Opens a temporary file "<path>.tmp.XXXXXX" (mkstemp, mode 0666 & ~umask
 *  like a plain fopen) next to `path`, and makes it the file a signal
 *  removes (see psi_app_output_cleanup_on_signal).  Returns: 0, or -1 with a
 *  message in err naming the path and the system's reason (directory
 *  missing or not writable, path is a directory), *o zeroed.  Out: *o. */
int psi_app_output_open(psi_app_output *o, const char *path, char *err, size_t err_len);

/** Flushes, fsyncs and closes the file and renames it to the target.
 *  Returns: 0, or -1 with a message in err (write error, disk full, rename
 *  failed), in which case the temporary file is removed.  *o is released
 *  either way. */
int psi_app_output_commit(psi_app_output *o, char *err, size_t err_len);

/** Closes and removes the temporary file; nothing is left behind and an
 *  existing target is untouched.  For stdout it only releases *o.  Safe on
 *  NULL, a zeroed, an aborted or an already committed *o. */
void psi_app_output_abort(psi_app_output *o);

/** A psi_sink_fn (psi.h) that writes the library's pieces of a message to
 *  the FILE * arg, such as an output's f.  Returns: 0, or 1 when the write
 *  fell short. */
int psi_app_output_sink(void *arg, const uint8_t *bytes, size_t len);

/** Installs handlers for SIGINT, SIGTERM and SIGHUP (except one ignored at
 *  start, as under nohup) that remove the temporary files of the outputs
 *  open at the time (opened and not yet committed or aborted; up to four
 *  at once, such as a setup and its permutation), then restore the default
 *  action and raise the signal again, so the process still dies of it.
 *  Call it once, early in a command that writes outputs.  A temporary name
 *  of 4096 bytes or more is not removed, nor a fifth one, nor one created
 *  in the moment between mkstemp and its registration. */
void psi_app_output_cleanup_on_signal(void);

#endif /* PSI_APP_OUTPUT_H */
