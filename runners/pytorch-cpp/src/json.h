// A small JSON reader (for safetensors headers) and the helpers that write
// the runner's JSON answers. No dependencies.
#pragma once
#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <utility>
#include <vector>

namespace cb {

struct JsonValue {
    enum Type { Null, Bool, Number, String, Array, Object } type = Null;
    bool boolean = false;
    double number = 0;
    bool integral = false;  // the number was written without fraction or exponent
    std::string text;
    std::vector<JsonValue> items;                          // Array
    std::vector<std::pair<std::string, JsonValue>> members;  // Object, in file order

    const JsonValue* get(const std::string& key) const;
};

// Parses a whole JSON text; throws std::runtime_error naming the offset on bad input.
JsonValue parse_json(const std::string& text);

// Writing: a number (null when not finite, integers without a fraction) and a quoted string.
std::string json_number(double v);
std::string json_string(const std::string& s);

// An ordered JSON object written with Python's json.dumps layout
// (", " and ": " separators on one line, or indent 2 over several).
class JsonObject {
public:
    JsonObject& raw(const std::string& key, const std::string& json);
    JsonObject& num(const std::string& key, double v) { return raw(key, json_number(v)); }
    JsonObject& integer(const std::string& key, int64_t v) { return raw(key, std::to_string(v)); }
    JsonObject& str(const std::string& key, const std::string& v) { return raw(key, json_string(v)); }
    JsonObject& boolean(const std::string& key, bool v) { return raw(key, v ? "true" : "false"); }
    JsonObject& null(const std::string& key) { return raw(key, "null"); }
    std::string dump(int indent = -1, int depth = 0) const;  // indent < 0: one line
    bool has(const std::string& key) const;

private:
    std::vector<std::pair<std::string, std::string>> members_;
};

std::string json_list(const std::vector<double>& v);
std::string json_list(const std::vector<int64_t>& v);

}  // namespace cb
