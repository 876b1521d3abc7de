/* crossbind convert: a model from one format into another. */
#include <stdio.h>
#include <string.h>
#include "cli.h"
#include "crossbind/formats.h"
#include "crossbind/onnx.h"

static void help(void)
{
    printf("usage: crossbind convert [MODEL] IN OUT --to safetensors|pt|onnx\n"
           "  IN in any supported format, recognised by content; parameters files (safetensors,\n"
           "  .pt) need MODEL, one of: %s.\n"
           "  --to pt writes a PyTorch state dict that torch.load reads.\n"
           "  --non-strict  load a parameters file that also holds tensors the model lacks\n",
           cli_models(NULL, ", "));
}

int cmd_convert(int argc, char **argv)
{
    const char *pos[3] = {NULL, NULL, NULL}, *to = NULL;
    int n_pos = 0, strict = 1;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        if (!strcmp(a, "--help") || !strcmp(a, "-h")) { help(); return 0; }
        else if (a[0] != '-') {
            if (n_pos == 3) return cli_error("unexpected argument '%s'", a);
            pos[n_pos++] = a;
        }
        else if (!strcmp(a, "--non-strict")) strict = 0;
        else if (!strcmp(a, "--to")) { if (!(to = cli_value(argc, argv, &i))) return 1; }
        else return cli_error("unknown option '%s' (see crossbind convert --help)", a);
    }
    if (n_pos < 2) return cli_error("convert: give IN and OUT (see crossbind convert --help)");
    const char *model = n_pos == 3 ? pos[0] : NULL, *in = pos[n_pos - 2], *out = pos[n_pos - 1];
    if (!to) return cli_error("convert: --to safetensors|pt|onnx is required");
    if (strcmp(to, "safetensors") && strcmp(to, "pt") && strcmp(to, "onnx"))
        return cli_error("--to must be safetensors, pt or onnx, got '%s'", to);
    cb_model *m = NULL;
    cb_load_info info;
    cb_tensor_list params = {0};
    cb_status s = cb_model_load_ex(model, in, 0, strict, &m, &info);
    if (s == CB_OK) cli_notice_load(in, &info);
    if (s == CB_OK && !strcmp(to, "onnx")) s = cb_onnx_export(m, out);
    else if (s == CB_OK) {
        const char *meta[] = {"model", m->name, "format", "crossbind-weights/1", NULL};
        s = cb_graph_params_to_list(&m->graph, &params);
        if (s == CB_OK) s = !strcmp(to, "pt") ? cb_torch_write(out, &params) : cb_safetensors_write(out, &params, meta);
    }
    cb_tensor_list_free(&params);
    cb_model_free(m);
    return s == CB_OK ? 0 : cli_status(s);
}
