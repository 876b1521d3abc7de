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

/* The widest vector instructions this processor runs (as cb_blas_better_core
 * asks them), "" where none is known. */
static const char *vector_isa(void)
{
#if defined(__x86_64__) || defined(__i386__)
    __builtin_cpu_init();
    if (__builtin_cpu_supports("avx512f")) return "AVX-512";
    if (__builtin_cpu_supports("avx2")) return "AVX2";
    if (__builtin_cpu_supports("avx")) return "AVX";
#endif
    return "";
}

/* The processor as /proc/cpuinfo names it, and, because a name such as
 * "AMD EPYC" covers generations whose speed differs a lot (Zen 2 with AVX2,
 * Zen 4 and 5 with AVX-512), its family and model numbers and the widest
 * vector instructions it runs. */
static void describe_cpu(char *cpu, size_t cap)
{
    char name[200] = "unknown processor", family[16] = "", model[16] = "", line[512];
    FILE *f = fopen("/proc/cpuinfo", "r");
    while (f && fgets(line, sizeof line, f)) {
        const char *v = strchr(line, ':');
        if (!v) continue;
        v += v[1] == ' ' ? 2 : 1;
        if (!strncmp(line, "model name", 10)) {
            snprintf(name, sizeof name, "%s", v);
            break; /* the first processor's family and model come before its name */
        }
        if (!strncmp(line, "cpu family", 10)) snprintf(family, sizeof family, "%s", v);
        else if (!strncmp(line, "model\t", 6) || !strncmp(line, "model ", 6)) snprintf(model, sizeof model, "%s", v);
    }
    if (f) fclose(f);
    name[strcspn(name, "\n")] = family[strcspn(family, "\n")] = model[strcspn(model, "\n")] = 0;
    const char *isa = vector_isa();
    if (family[0] && model[0])
        snprintf(cpu, cap, "%s (family %s, model %s%s%s)", name, family, model, isa[0] ? "; " : "", isa);
    else snprintf(cpu, cap, "%s", name);
}

void cb_machine_describe(char *out, size_t cap)
{
    struct utsname u;
    char cpu[300];
    describe_cpu(cpu, sizeof cpu);
    long mem_kb = 0;
    FILE *f = fopen("/proc/meminfo", "r");
    if (f) {
        if (fscanf(f, "MemTotal: %ld kB", &mem_kb) != 1) mem_kb = 0;
        fclose(f);
    }
    if (uname(&u) != 0) strcpy(u.sysname, "?");
    snprintf(out, cap, "%s, %ld cores online, %.1f GiB memory, %s %s %s", cpu, sysconf(_SC_NPROCESSORS_ONLN),
             (double)mem_kb / (1024.0 * 1024.0), u.sysname, u.release, u.machine);
}

/* The last non-empty line of a file, at most cap - 1 bytes of it. */
static void tail_of(const char *path, char *out, size_t cap)
{
    unsigned char *text;
    size_t len;
    out[0] = 0;
    if (cb_read_file(path, 1 << 16, &text, &len) != CB_OK) return;
    while (len && (text[len - 1] == '\n' || text[len - 1] == '\r' || text[len - 1] == ' ')) len--;
    size_t start = len;
    while (start && text[start - 1] != '\n') start--;
    snprintf(out, cap, "%.*s", (int)(len - start), (const char *)text + start);
    for (char *p = out; *p; p++) if ((unsigned char)*p < 32) *p = ' ';
    free(text);
}

int cb_runner_version(const cb_runner *r, const char *work_dir, char *version, size_t cap)
{
    snprintf(version, cap, "not reported");
    if (!r->nversion) return 1;
    char out[1100], err[1100];
    snprintf(out, sizeof out, "%s/versions-%s.txt", work_dir, r->name);
    snprintf(err, sizeof err, "%s/versions-%s.stderr", work_dir, r->name);
    cb_proc_result pr;
    cb_status st = cb_proc_run(r->version_cmd, out, err, 60, &pr);
    if (st != CB_OK || !pr.exited || pr.exit_code != 0) {
        char why[300];
        if (st != CB_OK) snprintf(why, sizeof why, "%s", cb_last_error());
        else tail_of(err, why, sizeof why);
        snprintf(version, cap, "unknown (the version command failed%s%s)", why[0] ? ": " : "", why);
        return 0;
    }
    unsigned char *text;
    size_t len;
    if (cb_read_file(out, 1 << 16, &text, &len) != CB_OK) return 1;
    /* One line: the command's lines joined with "; ". */
    size_t k = 0;
    for (size_t i = 0; i < len && k + 1 < cap; i++) {
        if (text[i] != '\n') version[k++] = (char)text[i];
        else if (i + 1 < len && k + 3 < cap) { version[k++] = ';'; version[k++] = ' '; }
    }
    version[k] = 0;
    free(text);
    return 1;
}
