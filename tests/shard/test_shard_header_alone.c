#include "psi_shard.h"
/*
 * Proves psi_shard.h compiles on its own: it is the first
 * and only include, and it brings psi.h with it.
 */

int main(void)
{
    _Static_assert(PSI_SHARD_MAX_THREADS >= 1, "at least one thread");
    _Static_assert(sizeof(psi_shard_settings) > 0, "complete type");

    // A call, not just a declaration, so the test also links.
    return psi_shards_count(NULL) == 0 && psi_shards_threads(NULL) == 0 ? 0 : 1;
}
