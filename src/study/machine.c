/* What a measurement ran on and with: the machine, and each binding's
 * versions as its runner reports them. Shared by the study and the
 * benchmarks, whose reports both state them. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/utsname.h>
#include <unistd.h>
#include "../core/file.h"
#include "proc.h"
#include "study.h"

void cb_machine_describe(char *out, size_t cap)
{
    struct utsname u;
    char cpu[200] = "unknown processor";
    FILE *f = fopen("/proc/cpuinfo", "r");
    char line[512];
    while (f && fgets(line, sizeof line, f))
        if (!strncmp(line, "model name", 10) && strchr(line, ':')) {
            snprintf(cpu, sizeof cpu, "%s", strchr(line, ':') + 2);
            cpu[strcspn(cpu, "\n")] = 0;
            break;
        }
    if (f) fclose(f);
    long mem_kb = 0;
    f = fopen("/proc/meminfo", "r");
    if (f) {
        if (fscanf(f, "MemTotal: %ld kB", &mem_kb) != 1) mem_kb = 0;
        fclose(f);
    }
    if (uname(&u) != 0) strcpy(u.sysname, "?");
    snprintf(out, cap, "%s, %ld cores online, %.1f GiB memory, %s %s %s", cpu, sysconf(_SC_NPROCESSORS_ONLN),
             (double)mem_kb / (1024.0 * 1024.0), u.sysname, u.release, u.machine);
}

void cb_runner_version(const cb_runner *r, const char *work_dir, char *version, size_t cap)
{
    snprintf(version, cap, "not reported");
    if (!r->nversion) return;
    char out[1100], err[1100];
    snprintf(out, sizeof out, "%s/versions-%s.txt", work_dir, r->name);
    snprintf(err, sizeof err, "%s/versions-%s.stderr", work_dir, r->name);
    cb_proc_result pr;
    if (cb_proc_run(r->version_cmd, out, err, 60, &pr) != CB_OK || !pr.exited || pr.exit_code != 0) {
        snprintf(version, cap, "unknown (the version command failed)");
        return;
    }
    unsigned char *text;
    size_t len;
    if (cb_read_file(out, 1 << 16, &text, &len) != CB_OK) return;
    /* One line: the command's lines joined with "; ". */
    size_t k = 0;
    for (size_t i = 0; i < len && k + 1 < cap; i++) {
        if (text[i] != '\n') version[k++] = (char)text[i];
        else if (i + 1 < len && k + 3 < cap) { version[k++] = ';'; version[k++] = ' '; }
    }
    version[k] = 0;
    free(text);
}
