/* Error messages: a status name appears once however often a message is
 * wrapped, and a failure while loading a file names the file. */
#include <string.h>
#include "harness.h"

static int count_of(const char *hay, const char *needle)
{
    int n = 0;
    for (const char *p = strstr(hay, needle); p; p = strstr(p + 1, needle)) n++;
    return n;
}

TEST(status_name_appears_once)
{
    cb_fail(CB_ERR_IO, "cannot open x.bin: No such file or directory");
    CHECK(!strcmp(cb_error_text(CB_ERR_IO), "cannot open x.bin: No such file or directory (i/o error)"));
    /* Wrapped as a caller does: once, twice, with a context in front. */
    for (int depth = 1; depth <= 3; depth++) {
        cb_fail(CB_ERR_IO, "%s", cb_error_text(CB_ERR_IO));
        CHECK(count_of(cb_error_text(CB_ERR_IO), "(i/o error)") == 1);
        cb_fail(CB_ERR_IO, "study: %s", cb_error_text(CB_ERR_IO));
        CHECK(count_of(cb_error_text(CB_ERR_IO), "(i/o error)") == 1);
    }
    CHECK(!strncmp(cb_error_text(CB_ERR_IO), "study: study: study: cannot open x.bin", 38));
    /* A message that mentions another status keeps it; its own comes once. */
    cb_fail(CB_ERR_SHAPE, "a.npy: %s (out of memory)", "x");
    CHECK(count_of(cb_error_text(CB_ERR_SHAPE), "(shape mismatch)") == 1);
    CHECK(count_of(cb_error_text(CB_ERR_SHAPE), "(out of memory)") == 1);
    cb_fail(CB_ERR_NOMEM, "out of memory: the executor needs 9 MiB");
    CHECK(!strcmp(cb_error_text(CB_ERR_NOMEM), "out of memory: the executor needs 9 MiB (out of memory)"));
    cb_fail(CB_ERR_IO, "%s", "");
    CHECK(!strcmp(cb_error_text(CB_ERR_IO), "i/o error"));
}

TEST(load_errors_name_the_file)
{
    cb_model *m = NULL, *got = NULL;
    cb_tensor_list l = {0};
    cb_load_info info;
    CHECK_OK(cb_model_create("lenet5", &m));
    if (!m) return;
    CHECK_OK(cb_graph_params_to_list(&m->graph, &l));
    const char *path = test_tmp("lenet5-weights.safetensors");
    CHECK_OK(cb_safetensors_write(path, &l, NULL));
    /* LeNet-5's parameters are not LeNet-1's: the shape error names the file. */
    cb_status s = cb_model_load("lenet1", path, 0, &got, &info);
    CHECK(s != CB_OK && got == NULL);
    CHECK(strstr(cb_last_error(), path) != NULL);
    CHECK(count_of(cb_error_text(s), path) == 1);
    /* So does a missing one. */
    const char *missing = test_tmp("no-such-weights.safetensors");
    s = cb_model_load("lenet1", missing, 0, &got, &info);
    CHECK(s != CB_OK && strstr(cb_last_error(), missing) != NULL);
    cb_tensor_list_free(&l);
    cb_model_free(m);
}
