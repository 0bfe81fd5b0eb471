/* What tokenloop asks of the operating system in more than one place. */
#ifndef TOKENLOOP_SYSTEM_H
#define TOKENLOOP_SYSTEM_H

/* The cores this process may run on (its CPU affinity where the system has one, so a container
 * or `taskset` limit counts), at least 1. */
int tl_cpu_count(void);

/* Seconds and milliseconds on the monotonic clock (CLOCK_MONOTONIC): for intervals, not dates. */
double tl_now_s(void);
double tl_now_ms(void);

#endif
