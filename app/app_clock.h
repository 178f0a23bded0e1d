/*
 * The one clock of the commands, the network code and the tests: a
 * monotonic reading in milliseconds (timeouts, rates, progress), and the
 * process's peak memory for reports.
 */
#ifndef PSI_APP_CLOCK_H
#define PSI_APP_CLOCK_H

/** Returns: a monotonic clock reading in milliseconds. */
double psi_app_now_ms(void);

/** Returns: the process's peak resident memory so far in MiB (VmHWM, from
 *  getrusage), or -1 when unknown. */
double psi_app_peak_mib(void);

#endif /* PSI_APP_CLOCK_H */
