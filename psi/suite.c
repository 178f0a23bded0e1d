/* The suites' names and element sizes (PROTOCOL.md §16). */
#include <string.h>

#include "suite.h"

static const char *const suite_names[PSI_SUITE_COUNT] = {
    [PSI_SUITE_OPENMINED_P256] = "openmined-p256",
    [PSI_SUITE_P256_SSWU] = "p256-sswu",
    [PSI_SUITE_RISTRETTO255] = "ristretto255",
};

int psi_suite_known(int suite)
{
    return suite >= 0 && suite < PSI_SUITE_COUNT;
}

const char *psi_suite_name(int suite)
{
    return psi_suite_known(suite) ? suite_names[suite] : NULL;
}

int psi_suite_from_name(psi_suite *suite, const char *name)
{
    PSI_CHECK_ARG(suite != NULL);
    *suite = PSI_SUITE_OPENMINED_P256;
    PSI_CHECK_ARG(name != NULL);
    psi_detail_clear();
    for (int i = 0; i < PSI_SUITE_COUNT; i++) {
        if (strcmp(name, suite_names[i]) == 0) {
            *suite = (psi_suite)i;
            return PSI_OK;
        }
    }
    return psi_fail_at(PSI_E_SUITE, "suite", -1, -1);
}

size_t psi_suite_element_bytes(int suite)
{
    if (!psi_suite_known(suite))
        return 0;
    return suite == PSI_SUITE_RISTRETTO255 ? PSI_R255_BYTES : PSI_ELEMENT_BYTES;
}
