/* Paths under a study's work directory. Internal to the study harness.
 *
 * Parts of these paths come from manifests and configurations (binding and
 * model names), so every path is built from a root and components that are
 * each a valid name (validate.h): none can be "..", hold a '/' or be
 * empty, and none can lead out of the root. */
#ifndef CB_STUDY_PATHS_H
#define CB_STUDY_PATHS_H

#include <stddef.h>
#include "crossbind/status.h"

/* out = root "/" rel, where rel is components joined by '/', each a valid
 * name. Refuses (CB_ERR_INVALID_ARG, naming the component) anything else. */
cb_status cb_work_path(const char *root, const char *rel, char *out, size_t cap);

/* Removes root/rel and everything under it, by the program itself (no
 * shell). Every component of rel is opened below root without following a
 * symbolic link, so a link planted anywhere on the way (or inside the tree)
 * is removed as a link and what it points to is left alone. A missing
 * rel is not an error. Trees deeper than CB_REMOVE_MAX_DEPTH are refused. */
#define CB_REMOVE_MAX_DEPTH 64
cb_status cb_remove_tree(const char *root, const char *rel);

#endif
