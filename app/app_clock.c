/* The clock and memory figures of the commands; see app_clock.h. */
#include "app_clock.h"

#include <sys/resource.h>
#include <time.h>

double psi_app_now_ms(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
}

double psi_app_peak_mib(void)
{
    struct rusage ru;

    // ru_maxrss is in KiB on Linux, where it is VmHWM of /proc/self/status.
    if (getrusage(RUSAGE_SELF, &ru) != 0 || ru.ru_maxrss <= 0)
        return -1;
    return (double)ru.ru_maxrss / 1024.0;
}
