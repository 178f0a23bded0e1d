#include "psi.h"
/*
 * Proves psi.h compiles on its own: it is the first and only
 * include, so any header it forgets to include itself breaks this build.
 * Registered by the lead in tests/psi/meson.build (suite headers).
 */

int main(void)
{
    _Static_assert(PSI_ELEMENT_BYTES == 33, "compressed P-256 point");
    _Static_assert(PSI_KEY_BYTES == 32, "P-256 scalar");
    _Static_assert(sizeof(psi_settings) > 0, "complete type");

    // A call, not just a declaration, so the test also links.
    return psi_strerror(PSI_OK) != NULL ? PSI_OK : 1;
}
