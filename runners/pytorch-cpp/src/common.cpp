#include "common.h"

#include <ATen/Context.h>
#include <ATen/Parallel.h>
#include <sys/utsname.h>
#include <torch/version.h>

#include <chrono>
#include <cmath>
#include <cstdlib>
#include <ctime>
#include <fstream>

namespace cb {

const int64_t kSeeds[5] = {287426343, 1850616268, 2068338201, 1202616822, 868822724};

const std::vector<std::string>& model_names() {
    static const std::vector<std::string> names = {"lenet1", "lenet5", "vgg16", "lstm", "gru"};
    return names;
}

void check_model(const std::string& name) {
    for (const auto& n : model_names())
        if (n == name) return;
    if (name == "gru-rb")
        fail("model gru-rb is not supported by PyTorch/C++: libtorch has no reset-before GRU (known: lenet1, lenet5, vgg16, lstm, gru)");
    fail("unknown model '" + name + "' (known: lenet1, lenet5, vgg16, lstm, gru)");
}

Protocol protocol_of(const std::string& name) {
    if (name == "lstm") return {"adam", 8e-5, 256, 30};
    if (name == "gru") return {"adam", 3e-4, 256, 30};
    return {"sgd", 0.05, 128, 200};
}

bool is_binary(const std::string& name) { return data_format(name) == "imdb"; }

std::string data_format(const std::string& name) {
    if (name == "lenet1" || name == "lenet5") return "mnist";
    if (name == "vgg16") return "cifar";
    return "imdb";
}

std::string default_data_dir(const std::string& name) {
    std::string f = data_format(name);
    if (f == "mnist") return "/usr/share/datasets/fashion-mnist";
    if (f == "cifar") return "data/cifar-stand-in";
    return "data/imdb-prepared";
}

std::vector<int64_t> input_shape(const std::string& name) {
    std::string f = data_format(name);
    if (f == "mnist") return {1, 28, 28};
    if (f == "cifar") return {3, 32, 32};
    return {300};
}

std::string Args::str(const std::string& opt, const std::string& def) const {
    auto it = values.find(opt);
    return it == values.end() ? def : it->second;
}

int64_t Args::integer(const std::string& opt, int64_t def, int64_t min) const {
    auto it = values.find(opt);
    if (it == values.end()) return def;
    const std::string& s = it->second;
    char* end = nullptr;
    errno = 0;
    long long v = std::strtoll(s.c_str(), &end, 10);
    if (s.empty() || *end || errno) fail("--" + opt + " needs an integer, got '" + s + "'");
    if (v < min) fail("--" + opt + " must be at least " + std::to_string(min) + ", got " + s);
    return v;
}

double Args::real(const std::string& opt, double def) const {
    auto it = values.find(opt);
    if (it == values.end()) return def;
    const std::string& s = it->second;
    char* end = nullptr;
    double v = std::strtod(s.c_str(), &end);
    if (s.empty() || *end || !std::isfinite(v)) fail("--" + opt + " needs a finite number, got '" + s + "'");
    return v;
}

Args parse_args(int argc, char** argv, int first, const std::string& cmd, bool positional_model,
                const std::vector<std::string>& value_opts, const std::vector<std::string>& flag_opts) {
    Args a;
    a.cmd = cmd;
    auto known = [](const std::vector<std::string>& v, const std::string& s) {
        for (const auto& x : v)
            if (x == s) return true;
        return false;
    };
    for (int i = first; i < argc; i++) {
        std::string s = argv[i];
        if (s.rfind("--", 0) == 0 && s.size() > 2) {
            std::string name = s.substr(2), value;
            bool inline_value = false;
            size_t eq = name.find('=');
            if (eq != std::string::npos) {
                value = name.substr(eq + 1);
                name = name.substr(0, eq);
                inline_value = true;
            }
            if (known(value_opts, name)) {
                if (!inline_value) {
                    if (i + 1 >= argc) fail("option --" + name + " needs a value");
                    value = argv[++i];
                }
                if (a.values.count(name)) fail("option --" + name + " is given twice");
                a.values[name] = value;
            } else if (known(flag_opts, name) && !inline_value) {
                a.flags.insert(name);
            } else {
                fail("unknown option " + s + " for " + cmd + " (" + kProg + " --help lists the options)");
            }
        } else if (positional_model && a.model.empty()) {
            a.model = s;
        } else {
            fail("unexpected argument '" + s + "' for " + cmd);
        }
    }
    if (positional_model && a.model.empty()) fail(cmd + " needs a MODEL (lenet1, lenet5, vgg16, lstm, gru)");
    return a;
}

double now_s() {
    return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

double monotonic_s() {
    timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return double(ts.tv_sec) + double(ts.tv_nsec) * 1e-9;
}

int64_t vmhwm_kib() {
    std::ifstream f("/proc/self/status");
    std::string line;
    while (std::getline(f, line))
        if (line.rfind("VmHWM:", 0) == 0) return std::strtoll(line.c_str() + 6, nullptr, 10);
    return -1;
}

std::string machine() {
    utsname u;
    if (uname(&u) != 0) return "unknown";
    return std::string(u.sysname) + " " + u.release + " " + u.machine;
}

std::string torch_version() { return TORCH_VERSION; }

std::string compiler_version() {
#if defined(__clang__)
    return "clang " __clang_version__;
#elif defined(__GNUC__)
    return "g++ " __VERSION__;
#else
    return "unknown";
#endif
}

void setup_torch(int64_t threads) {
    at::set_num_threads(int(threads));
    // Subnormal floats flushed to zero, as the Python runner and crossbind do:
    // gradients vanishing through 300 recurrent steps become subnormal, and each
    // operation on one costs a microcode assist.
    at::globalContext().setFlushDenormal(true);
}

}  // namespace cb
