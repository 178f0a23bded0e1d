#include "psi_shard.h"
/*
 * Proves psi_shard.h compiles on its own: it is the first
 * and only include, and it brings psi.h with it.
 */

int main(void)
{
    _Static_assert(PSI_SHARD_MAX_THREADS >= 1, "at least one thread");
    _Static_assert(sizeof(psi_shard_settings) > 0, "complete type");

    size_t offset = 1, count = 1;
    // A call, not just a declaration, so the test also links.
    return psi_shard_plan(&offset, &count, 10, 3, 0) == PSI_OK && count == 4 ? 0 : 1;
}
