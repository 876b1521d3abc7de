#ifndef CB_CLOCK_H
#define CB_CLOCK_H
#include <time.h>
/* Monotonic seconds, for durations. */
static inline double cb_now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}
#endif
