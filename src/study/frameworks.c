/* Which binding is each framework's default in a study: the harness (for
 * the reference binding) and the report (for the comparisons) resolve it
 * the same way, from the same facts. */
#include <string.h>
#include "study.h"

void cb_framework_defaults(const cb_fw_member *m, int n, const cb_fw_override *ov, int nov, int *def, int *why)
{
    for (int i = 0; i < n; i++) { def[i] = -1; if (why) why[i] = CB_DEFAULT_NONE; }
    for (int i = 0; i < n; i++) {
        if (def[i] >= 0 || !m[i].runnable) continue;
        const char *fw = m[i].framework;
        int pick = -1, reason = CB_DEFAULT_NONE;
        for (int k = 0; k < nov && pick < 0; k++)
            if (!strcmp(ov[k].framework, fw))
                for (int j = 0; j < n; j++)
                    if (m[j].runnable && !strcmp(m[j].framework, fw) && !strcmp(m[j].name, ov[k].binding)) {
                        pick = j;
                        reason = CB_DEFAULT_CONFIG;
                    }
        for (int j = 0; j < n && pick < 0; j++)
            if (m[j].runnable && m[j].flagged && !strcmp(m[j].framework, fw)) { pick = j; reason = CB_DEFAULT_MANIFEST; }
        for (int j = 0; j < n && pick < 0; j++)
            if (m[j].runnable && m[j].trains && !strcmp(m[j].framework, fw)) { pick = j; reason = CB_DEFAULT_FIRST; }
        for (int j = 0; j < n && pick < 0; j++)
            if (m[j].runnable && !strcmp(m[j].framework, fw)) { pick = j; reason = CB_DEFAULT_FIRST; }
        for (int j = 0; j < n; j++)
            if (m[j].runnable && !strcmp(m[j].framework, fw)) { def[j] = pick; if (why) why[j] = reason; }
    }
}
