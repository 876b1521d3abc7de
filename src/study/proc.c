/* Child processes for runners: time limits, interrupts, no orphans. */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#include "../core/clock.h"
#include "proc.h"

static volatile sig_atomic_t interrupted;

static void on_signal(int sig)
{
    (void)sig;
    interrupted = 1;
}

void cb_proc_catch_interrupts(void)
{
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_signal;
    sigemptyset(&sa.sa_mask);
    sigaction(SIGINT, &sa, NULL);
    sigaction(SIGTERM, &sa, NULL);
}

int cb_proc_interrupted(void) { return interrupted; }

cb_status cb_proc_run(char *const argv[], const char *stdout_path, const char *stderr_path, double timeout_s,
                      cb_proc_result *res)
{
    memset(res, 0, sizeof *res);
    int out = open(stdout_path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    int err = out >= 0 ? open(stderr_path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644) : -1;
    if (out < 0 || err < 0) {
        int e = errno;
        if (out >= 0) close(out);
        return cb_fail(CB_ERR_IO, "%s: %s", out < 0 ? stdout_path : stderr_path, strerror(e));
    }
    /* A pipe closed on exec tells the parent whether exec itself failed. */
    int status_pipe[2];
    if (pipe2(status_pipe, O_CLOEXEC) != 0) {
        close(out); close(err);
        return cb_fail(CB_ERR_IO, "cannot start %s: %s", argv[0], strerror(errno));
    }
    pid_t parent = getpid();
    double t0 = cb_now();
    pid_t pid = fork();
    if (pid < 0) {
        int e = errno;
        close(out); close(err); close(status_pipe[0]); close(status_pipe[1]);
        return cb_fail(CB_ERR_IO, "cannot start %s: %s", argv[0], strerror(e));
    }
    if (pid == 0) {
        setpgid(0, 0);
        prctl(PR_SET_PDEATHSIG, SIGKILL);
        if (getppid() != parent) _exit(127); /* the study died before prctl took effect */
        signal(SIGINT, SIG_DFL);
        signal(SIGTERM, SIG_DFL);
        /* A runaway runner stops at this file size instead of filling the disk. */
        struct rlimit fl;
        if (getrlimit(RLIMIT_FSIZE, &fl) == 0 && (fl.rlim_cur == RLIM_INFINITY || fl.rlim_cur > CB_PROC_FILE_LIMIT)) {
            fl.rlim_cur = CB_PROC_FILE_LIMIT;
            if (fl.rlim_max != RLIM_INFINITY && fl.rlim_max < fl.rlim_cur) fl.rlim_cur = fl.rlim_max;
            setrlimit(RLIMIT_FSIZE, &fl);
        }
        int devnull = open("/dev/null", O_RDONLY);
        if (devnull >= 0) dup2(devnull, 0);
        dup2(out, 1);
        dup2(err, 2);
        execvp(argv[0], argv);
        int e = errno;
        if (write(status_pipe[1], &e, sizeof e) < 0) { /* nothing more can be told */ }
        _exit(127);
    }
    setpgid(pid, pid); /* also here, so that killing the group works at once */
    close(out);
    close(err);
    close(status_pipe[1]);
    int exec_errno = 0;
    ssize_t got = read(status_pipe[0], &exec_errno, sizeof exec_errno);
    close(status_pipe[0]);
    int status = 0;
    if (got == (ssize_t)sizeof exec_errno) {
        waitpid(pid, &status, 0);
        return cb_fail(CB_ERR_IO, "cannot run %s: %s", argv[0], strerror(exec_errno));
    }
    res->start_s = t0;
    for (;;) {
        pid_t w = waitpid(pid, &status, WNOHANG);
        if (w == pid) break;
        if (w < 0 && errno != EINTR) break;
        int stop = 0;
        if (interrupted) { res->interrupted = 1; stop = 1; }
        else if (timeout_s > 0 && cb_now() - t0 > timeout_s) { res->timed_out = 1; stop = 1; }
        if (stop) {
            kill(-pid, SIGKILL);
            kill(pid, SIGKILL);
            while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {}
            break;
        }
        struct timespec nap = {0, 20 * 1000 * 1000};
        nanosleep(&nap, NULL);
    }
    kill(-pid, SIGKILL); /* anything the runner left running in its group */
    res->wall_s = cb_now() - t0;
    if (WIFEXITED(status)) { res->exited = 1; res->exit_code = WEXITSTATUS(status); }
    else if (WIFSIGNALED(status)) res->signal = WTERMSIG(status);
    return CB_OK;
}
