// What every command shares: the protocol's tables, the command line, errors
// and clocks.
#pragma once
#include <cstdint>
#include <map>
#include <set>
#include <stdexcept>
#include <string>
#include <vector>

namespace cb {

constexpr const char* kProg = "crossbind-torch-cpp";
constexpr const char* kBinding = "pytorch-cpp";
extern const int64_t kSeeds[5];

// A clear error for the user: main prints "crossbind-torch-cpp: error: MSG" and exits 1.
struct Failure : std::runtime_error {
    using std::runtime_error::runtime_error;
};
[[noreturn]] inline void fail(const std::string& msg) { throw Failure(msg); }

// Protocol section 3 (the default study): optimizer, learning rate, batch, epochs.
struct Protocol {
    std::string optimizer;
    double lr;
    int64_t batch, epochs;
};
const std::vector<std::string>& model_names();  // lenet1 lenet5 vgg16 lstm gru
void check_model(const std::string& name);      // fails on an unknown or unsupported model
Protocol protocol_of(const std::string& name);
bool is_binary(const std::string& name);        // the IMDb models: one sigmoid output
std::string data_format(const std::string& name);  // mnist, cifar, imdb
std::string default_data_dir(const std::string& name);
std::vector<int64_t> input_shape(const std::string& name);  // one sample, e.g. {1, 28, 28}

// The command line: `CMD [MODEL] --option value ... --flag ...`.
struct Args {
    std::string cmd, model;
    std::map<std::string, std::string> values;
    std::set<std::string> flags;

    bool has(const std::string& opt) const { return values.count(opt) || flags.count(opt); }
    std::string str(const std::string& opt, const std::string& def = "") const;
    int64_t integer(const std::string& opt, int64_t def, int64_t min) const;
    double real(const std::string& opt, double def) const;
};
// Parses argv[first..]: value options and flags known to the command; anything else fails.
Args parse_args(int argc, char** argv, int first, const std::string& cmd, bool positional_model,
                const std::vector<std::string>& value_opts, const std::vector<std::string>& flag_opts);

double now_s();         // steady clock, seconds
double monotonic_s();   // CLOCK_MONOTONIC, seconds (the clock the harness starts workers by)
int64_t vmhwm_kib();    // peak resident memory from /proc/self/status, -1 if unknown
std::string machine();  // "Linux 6.1.0 x86_64"
std::string torch_version();
std::string compiler_version();

// The runner's threads and floating-point settings, as the Python runner makes them.
void setup_torch(int64_t threads);

}  // namespace cb
