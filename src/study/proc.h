/* Running a runner as a child process with a time limit. Internal. */
#ifndef CB_STUDY_PROC_H
#define CB_STUDY_PROC_H

#include "crossbind/status.h"

typedef struct cb_proc_result {
    int exited;      /* exited normally: exit_code is valid */
    int exit_code;
    int signal;      /* killed by this signal (0 if none) */
    int timed_out;   /* killed after the time limit */
    int interrupted; /* the study was interrupted (SIGINT/SIGTERM) meanwhile */
    double wall_s;
    double start_s;  /* monotonic clock (CLOCK_MONOTONIC) just before the child was started */
} cb_proc_result;

/* No file the child writes (its stdout and stderr included) may grow past
 * this; past it, the child gets SIGXFSZ. The largest legitimate file, a
 * VGG-16 in one format, is some 60 MB. */
#define CB_PROC_FILE_LIMIT (4ULL << 30)

/* Runs argv (argv[0] searched on PATH) with stdout and stderr written to
 * the given files, in its own process group, killed (the whole group) after
 * timeout_s seconds or when the study is interrupted. The child also dies
 * with the study (PR_SET_PDEATHSIG), so a study killed with SIGKILL leaves
 * no runner behind, and its files are limited to CB_PROC_FILE_LIMIT bytes.
 * Fails only when the child cannot be started. */
cb_status cb_proc_run(char *const argv[], const char *stdout_path, const char *stderr_path, double timeout_s,
                      cb_proc_result *res);

/* Installs SIGINT/SIGTERM handlers that set the interrupted flag. */
void cb_proc_catch_interrupts(void);
int cb_proc_interrupted(void);

#endif
