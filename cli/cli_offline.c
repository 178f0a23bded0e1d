/* `shardpsi keygen` and the offline steps' command; see cli_offline.h. */
#include "cli_offline.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "app_keyfile.h"
#include "app_util.h"
#include "cli_commands.h"

/* `shardpsi keygen`: a new key file of the suite, never over an existing file. */
static int offline_keygen(psi_app_offline *s)
{
    struct stat st;
    int created = 0;

    if (strcmp(s->o.output, "-") == 0) {
        psi_app_error("keygen: the key goes to a file only, not to stdout");
        return PSI_APP_EXIT_USAGE;
    }
    if (lstat(s->o.output, &st) == 0) {
        psi_app_offline_fail(s, "key file %s exists; it is not overwritten (remove it "
                             "first, or give another name)", s->o.output);
        return PSI_APP_EXIT_USAGE;
    }
    if (psi_app_keyfile_engine_suite(&s->key, &created, s->o.output, s->o.suite, s->err,
                                     sizeof s->err) != 0) {
        psi_app_offline_fail(s, "%s", s->err);
        return PSI_APP_EXIT_USAGE;
    }
    if (!created) {
        psi_app_offline_fail(s, "key file %s appeared meanwhile; it is not overwritten",
                             s->o.output);
        return PSI_APP_EXIT_USAGE;
    }
    psi_app_progress_note(&s->prog, "wrote a new %s key to %s (mode 0600)",
                          psi_app_suite_label(s->o.suite), s->o.output);
    return PSI_APP_EXIT_OK;
}

int psi_cli_cmd_offline(int argc, char **argv)
{
    static const struct {
        const char *name;
        int (*run)(psi_app_offline *s);
    } cmds[] = {
        {"keygen", offline_keygen},
        {"setup", psi_cli_offline_setup},
        {"request", psi_cli_offline_request},
        {"response", psi_cli_offline_response},
        {"match", psi_cli_offline_match},
        {"payloads", psi_cli_offline_payloads},
    };
    int (*run)(psi_app_offline *s) = NULL;
    psi_app_offline s;
    int rc;

    memset(&s, 0, sizeof s);
    for (size_t i = 0; i < sizeof cmds / sizeof cmds[0]; i++)
        if (strcmp(cmds[i].name, argv[0]) == 0)
            run = cmds[i].run;
    if (run == NULL)
        return PSI_APP_EXIT_USAGE;
    rc = psi_app_offline_parse(&s, argc, argv);
    if (rc != 0)
        return rc > 0 ? PSI_APP_EXIT_OK : PSI_APP_EXIT_USAGE;
    snprintf(s.who, sizeof s.who, "shardpsi %s", argv[0]);
    psi_app_progress_init(&s.prog, s.who, s.o.progress);
    psi_app_output_cleanup_on_signal();
    rc = run(&s);
    psi_app_offline_free(&s);
    return rc;
}
