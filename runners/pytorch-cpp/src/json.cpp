#include "json.h"

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <stdexcept>

namespace cb {

const JsonValue* JsonValue::get(const std::string& key) const {
    for (const auto& m : members)
        if (m.first == key) return &m.second;
    return nullptr;
}

namespace {

struct Parser {
    const std::string& s;
    size_t i = 0;
    int depth = 0;

    [[noreturn]] void bad(const std::string& what) {
        throw std::runtime_error("invalid JSON at byte " + std::to_string(i) + ": " + what);
    }
    void ws() {
        while (i < s.size() && (s[i] == ' ' || s[i] == '\t' || s[i] == '\n' || s[i] == '\r')) i++;
    }
    bool lit(const char* w) {
        size_t n = std::char_traits<char>::length(w);
        if (s.compare(i, n, w) != 0) return false;
        i += n;
        return true;
    }
    static void utf8(std::string& out, unsigned cp) {
        if (cp < 0x80) out += char(cp);
        else if (cp < 0x800) { out += char(0xC0 | (cp >> 6)); out += char(0x80 | (cp & 0x3F)); }
        else if (cp < 0x10000) {
            out += char(0xE0 | (cp >> 12)); out += char(0x80 | ((cp >> 6) & 0x3F)); out += char(0x80 | (cp & 0x3F));
        } else {
            out += char(0xF0 | (cp >> 18)); out += char(0x80 | ((cp >> 12) & 0x3F));
            out += char(0x80 | ((cp >> 6) & 0x3F)); out += char(0x80 | (cp & 0x3F));
        }
    }
    unsigned hex4() {
        if (i + 4 > s.size()) bad("short \\u escape");
        unsigned v = 0;
        for (int k = 0; k < 4; k++) {
            char c = s[i++];
            v <<= 4;
            if (c >= '0' && c <= '9') v |= unsigned(c - '0');
            else if (c >= 'a' && c <= 'f') v |= unsigned(c - 'a' + 10);
            else if (c >= 'A' && c <= 'F') v |= unsigned(c - 'A' + 10);
            else bad("bad \\u escape");
        }
        return v;
    }
    std::string string() {
        if (i >= s.size() || s[i] != '"') bad("expected a string");
        i++;
        std::string out;
        for (;;) {
            if (i >= s.size()) bad("unterminated string");
            char c = s[i++];
            if (c == '"') return out;
            if ((unsigned char)c < 0x20) bad("control character in a string");
            if (c != '\\') { out += c; continue; }
            if (i >= s.size()) bad("unterminated escape");
            char e = s[i++];
            switch (e) {
                case '"': out += '"'; break;
                case '\\': out += '\\'; break;
                case '/': out += '/'; break;
                case 'b': out += '\b'; break;
                case 'f': out += '\f'; break;
                case 'n': out += '\n'; break;
                case 'r': out += '\r'; break;
                case 't': out += '\t'; break;
                case 'u': {
                    unsigned cp = hex4();
                    if (cp >= 0xD800 && cp < 0xDC00 && s.compare(i, 2, "\\u") == 0) {
                        i += 2;
                        unsigned lo = hex4();
                        if (lo < 0xDC00 || lo > 0xDFFF) bad("bad surrogate pair");
                        cp = 0x10000 + ((cp - 0xD800) << 10) + (lo - 0xDC00);
                    }
                    utf8(out, cp);
                    break;
                }
                default: bad("bad escape");
            }
        }
    }
    JsonValue value() {
        if (++depth > 64) bad("nested too deeply");
        ws();
        JsonValue v;
        if (i >= s.size()) bad("unexpected end");
        char c = s[i];
        if (c == '{') {
            v.type = JsonValue::Object;
            i++;
            ws();
            if (i < s.size() && s[i] == '}') { i++; depth--; return v; }
            for (;;) {
                ws();
                std::string k = string();
                for (const auto& m : v.members)
                    if (m.first == k) bad("key \"" + k + "\" appears twice");
                ws();
                if (i >= s.size() || s[i] != ':') bad("expected ':'");
                i++;
                v.members.emplace_back(k, value());
                ws();
                if (i < s.size() && s[i] == ',') { i++; continue; }
                if (i < s.size() && s[i] == '}') { i++; break; }
                bad("expected ',' or '}'");
            }
        } else if (c == '[') {
            v.type = JsonValue::Array;
            i++;
            ws();
            if (i < s.size() && s[i] == ']') { i++; depth--; return v; }
            for (;;) {
                v.items.push_back(value());
                ws();
                if (i < s.size() && s[i] == ',') { i++; continue; }
                if (i < s.size() && s[i] == ']') { i++; break; }
                bad("expected ',' or ']'");
            }
        } else if (c == '"') {
            v.type = JsonValue::String;
            v.text = string();
        } else if (lit("true")) { v.type = JsonValue::Bool; v.boolean = true; }
        else if (lit("false")) { v.type = JsonValue::Bool; }
        else if (lit("null")) { v.type = JsonValue::Null; }
        else if (c == '-' || (c >= '0' && c <= '9')) {
            size_t start = i;
            if (s[i] == '-') i++;
            if (i >= s.size() || !(s[i] >= '0' && s[i] <= '9')) bad("bad number");
            while (i < s.size() && s[i] >= '0' && s[i] <= '9') i++;
            bool integral = true;
            if (i < s.size() && s[i] == '.') {
                integral = false;
                i++;
                if (i >= s.size() || !(s[i] >= '0' && s[i] <= '9')) bad("bad number");
                while (i < s.size() && s[i] >= '0' && s[i] <= '9') i++;
            }
            if (i < s.size() && (s[i] == 'e' || s[i] == 'E')) {
                integral = false;
                i++;
                if (i < s.size() && (s[i] == '+' || s[i] == '-')) i++;
                if (i >= s.size() || !(s[i] >= '0' && s[i] <= '9')) bad("bad number");
                while (i < s.size() && s[i] >= '0' && s[i] <= '9') i++;
            }
            v.type = JsonValue::Number;
            v.integral = integral;
            v.number = std::strtod(s.substr(start, i - start).c_str(), nullptr);
        } else {
            bad(std::string("unexpected character '") + c + "'");
        }
        depth--;
        return v;
    }
};

}  // namespace

JsonValue parse_json(const std::string& text) {
    Parser p{text};
    JsonValue v = p.value();
    p.ws();
    if (p.i != text.size()) p.bad("trailing data");
    return v;
}

std::string json_number(double v) {
    if (!std::isfinite(v)) return "null";
    char buf[40];
    if (v == std::floor(v) && std::fabs(v) < 1e15) {
        std::snprintf(buf, sizeof buf, "%.1f", v);  // Python writes floats with a fraction: 3.0
        return buf;
    }
    // The shortest text that reads back as the same double, as Python's repr.
    for (int prec = 1; prec <= 17; prec++) {
        std::snprintf(buf, sizeof buf, "%.*g", prec, v);
        if (std::strtod(buf, nullptr) == v) break;
    }
    return buf;
}

std::string json_string(const std::string& s) {
    std::string out = "\"";
    for (unsigned char c : s) {
        switch (c) {
            case '"': out += "\\\""; break;
            case '\\': out += "\\\\"; break;
            case '\n': out += "\\n"; break;
            case '\r': out += "\\r"; break;
            case '\t': out += "\\t"; break;
            default:
                if (c < 0x20) {
                    char buf[8];
                    std::snprintf(buf, sizeof buf, "\\u%04x", c);
                    out += buf;
                } else {
                    out += char(c);
                }
        }
    }
    return out + "\"";
}

JsonObject& JsonObject::raw(const std::string& key, const std::string& json) {
    for (auto& m : members_)
        if (m.first == key) { m.second = json; return *this; }  // a key is written once
    members_.emplace_back(key, json);
    return *this;
}

bool JsonObject::has(const std::string& key) const {
    for (const auto& m : members_)
        if (m.first == key) return true;
    return false;
}

std::string JsonObject::dump(int indent, int depth) const {
    if (members_.empty()) return "{}";
    std::string out = "{";
    std::string pad = indent < 0 ? "" : "\n" + std::string(size_t(indent * (depth + 1)), ' ');
    for (size_t k = 0; k < members_.size(); k++) {
        if (k) out += indent < 0 ? ", " : ",";
        out += pad + json_string(members_[k].first) + ": " + members_[k].second;
    }
    if (indent >= 0) out += "\n" + std::string(size_t(indent * depth), ' ');
    return out + "}";
}

std::string json_list(const std::vector<double>& v) {
    std::string out = "[";
    for (size_t k = 0; k < v.size(); k++) out += (k ? ", " : "") + json_number(v[k]);
    return out + "]";
}

std::string json_list(const std::vector<int64_t>& v) {
    std::string out = "[";
    for (size_t k = 0; k < v.size(); k++) out += (k ? ", " : "") + std::to_string(v[k]);
    return out + "]";
}

}  // namespace cb
