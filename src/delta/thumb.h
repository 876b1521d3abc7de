/* Input pictures for crossbind delta's report (thumb.c). Internal. */
#ifndef CB_DELTA_THUMB_H
#define CB_DELTA_THUMB_H

/* The image file at `path` as a side x side centre crop, PNG in base64
 * (owned by the caller); NULL when the file cannot be read as an image
 * (a tensor given as inputs, a file moved since). */
char *delta_thumbnail(const char *path, int side);

#endif
