/* The study's report and exports, read from the results store only (so
 * they work while a study is still writing). Internal. */
#ifndef CB_REPORT_H
#define CB_REPORT_H

#include <stdint.h>
#include "crossbind/status.h"
#include "../study/store.h"

/* Writes DIR/index.html (self-contained, inline SVG), DIR/report.md and
 * DIR/tables/<table>.csv for one study. */
cb_status cb_report_write(cb_store *store, int64_t study_id, const char *dir);

/* Every table's rows of one study: DIR/<table>.csv, or one JSON file. */
cb_status cb_results_export_csv(cb_store *store, int64_t study_id, const char *dir);
cb_status cb_results_export_json(cb_store *store, int64_t study_id, const char *path);

#endif
