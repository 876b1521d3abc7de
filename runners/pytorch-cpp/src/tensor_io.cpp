#include "tensor_io.h"

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <stdexcept>

#include "json.h"

namespace cb {

static_assert(__BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__, "the tensor files are little endian");

std::string read_file(const std::string& path) {
    std::ifstream f(path, std::ios::binary);
    if (!f) throw std::runtime_error("cannot open " + path + ": " + std::strerror(errno));
    std::string blob((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
    if (f.bad()) throw std::runtime_error("cannot read " + path);
    return blob;
}

void write_file_atomic(const std::string& path, const std::string& bytes) {
    std::string tmp = path + ".tmp";
    {
        std::ofstream f(tmp, std::ios::binary | std::ios::trunc);
        if (!f) throw std::runtime_error("cannot write " + tmp + ": " + std::strerror(errno));
        f.write(bytes.data(), std::streamsize(bytes.size()));
        f.flush();
        if (!f) throw std::runtime_error("cannot write " + tmp + ": " + std::strerror(errno));
    }
    if (std::rename(tmp.c_str(), path.c_str()) != 0)
        throw std::runtime_error("cannot rename " + tmp + " to " + path + ": " + std::strerror(errno));
}

namespace {

struct DType {
    const char* name;
    at::ScalarType type;
    size_t size;
};
const DType kDTypes[] = {{"F32", at::kFloat, 4}, {"F64", at::kDouble, 8}, {"I64", at::kLong, 8},
                         {"I32", at::kInt, 4}, {"U8", at::kByte, 1}};

const DType* dtype_named(const std::string& n) {
    for (const auto& d : kDTypes)
        if (n == d.name) return &d;
    return nullptr;
}

const DType* dtype_of(at::ScalarType t) {
    for (const auto& d : kDTypes)
        if (d.type == t) return &d;
    return nullptr;
}

// A non-negative integer of a JSON header (shapes, offsets).
uint64_t header_uint(const JsonValue& v, const std::string& path, const std::string& what) {
    if (v.type != JsonValue::Number || !v.integral || v.number < 0 || v.number > 9.007199254740992e15)
        throw std::runtime_error(path + ": " + what + " is not a non-negative integer");
    return uint64_t(v.number);
}

}  // namespace

NamedTensors read_safetensors(const std::string& path) {
    std::string blob = read_file(path);
    if (blob.size() < 8) throw std::runtime_error(path + ": too short to be a safetensors file");
    uint64_t hlen;
    std::memcpy(&hlen, blob.data(), 8);
    if (hlen > blob.size() - 8)
        throw std::runtime_error(path + ": header length " + std::to_string(hlen) + " exceeds the file (truncated?)");
    JsonValue header;
    try {
        header = parse_json(blob.substr(8, hlen));
    } catch (const std::runtime_error& e) {
        throw std::runtime_error(path + ": the safetensors header is not JSON (" + e.what() + ")");
    }
    if (header.type != JsonValue::Object) throw std::runtime_error(path + ": the safetensors header is not a JSON object");
    const char* data = blob.data() + 8 + hlen;
    uint64_t data_len = blob.size() - 8 - hlen;
    NamedTensors out;
    for (const auto& m : header.members) {
        const std::string& name = m.first;
        if (name == "__metadata__") continue;
        const JsonValue& e = m.second;
        const JsonValue* dt = e.get("dtype");
        const JsonValue* shape = e.get("shape");
        const JsonValue* offs = e.get("data_offsets");
        if (e.type != JsonValue::Object || !dt || dt->type != JsonValue::String || !shape ||
            shape->type != JsonValue::Array || !offs || offs->type != JsonValue::Array || offs->items.size() != 2)
            throw std::runtime_error(path + ": tensor " + name + " lacks dtype, shape or data_offsets");
        const DType* d = dtype_named(dt->text);
        if (!d) throw std::runtime_error(path + ": tensor " + name + " has unsupported dtype " + dt->text);
        std::vector<int64_t> dims;
        uint64_t count = 1;
        for (const auto& x : shape->items) {
            uint64_t n = header_uint(x, path, "a dimension of tensor " + name);
            if (n && count > (uint64_t(1) << 62) / n) throw std::runtime_error(path + ": tensor " + name + " is too large");
            count *= n;
            dims.push_back(int64_t(n));
        }
        uint64_t begin = header_uint(offs->items[0], path, "an offset of tensor " + name);
        uint64_t end = header_uint(offs->items[1], path, "an offset of tensor " + name);
        if (begin > end || end > data_len || end - begin != count * d->size)
            throw std::runtime_error(path + ": tensor " + name + " lies outside the file or mismatches its shape");
        at::Tensor t = at::empty(dims, at::TensorOptions().dtype(d->type));
        if (count) std::memcpy(t.data_ptr(), data + begin, end - begin);
        out.emplace_back(name, t);
    }
    return out;
}

void write_safetensors(const std::string& path, const NamedTensors& tensors, const Metadata& metadata) {
    std::string header = "{";
    if (!metadata.empty()) {
        header += "\"__metadata__\":{";
        for (size_t k = 0; k < metadata.size(); k++)
            header += (k ? "," : "") + json_string(metadata[k].first) + ":" + json_string(metadata[k].second);
        header += "}";
    }
    std::vector<at::Tensor> parts;
    uint64_t offset = 0;
    for (const auto& nt : tensors) {
        at::Tensor t = nt.second.detach().contiguous();
        const DType* d = dtype_of(t.scalar_type());
        if (!d) throw std::runtime_error("tensor " + nt.first + ": unsupported dtype " + std::string(c10::toString(t.scalar_type())));
        uint64_t nbytes = uint64_t(t.numel()) * d->size;
        std::string shape = "[";
        for (int64_t k = 0; k < t.dim(); k++) shape += (k ? "," : "") + std::to_string(t.size(k));
        shape += "]";
        if (header.size() > 1) header += ",";
        header += json_string(nt.first) + ":{\"dtype\":\"" + d->name + "\",\"shape\":" + shape +
                  ",\"data_offsets\":[" + std::to_string(offset) + "," + std::to_string(offset + nbytes) + "]}";
        offset += nbytes;
        parts.push_back(t);
    }
    header += "}";
    header.append((8 - header.size() % 8) % 8, ' ');
    std::string bytes(8, '\0');
    uint64_t hlen = header.size();
    std::memcpy(&bytes[0], &hlen, 8);
    bytes += header;
    bytes.reserve(bytes.size() + offset);
    for (const auto& t : parts)
        bytes.append(static_cast<const char*>(t.data_ptr()), size_t(t.numel()) * t.element_size());
    write_file_atomic(path, bytes);
}

at::Tensor read_npy(const std::string& path) {
    std::string blob = read_file(path);
    if (blob.size() < 10 || blob.compare(0, 6, "\x93NUMPY") != 0) throw std::runtime_error(path + ": not a .npy file");
    unsigned major = (unsigned char)blob[6];
    size_t hlen, start;
    if (major == 1) {
        hlen = (unsigned char)blob[8] | (size_t((unsigned char)blob[9]) << 8);
        start = 10;
    } else if (major == 2 || major == 3) {
        if (blob.size() < 12) throw std::runtime_error(path + ": truncated .npy header");
        uint32_t h;
        std::memcpy(&h, blob.data() + 8, 4);
        hlen = h;
        start = 12;
    } else {
        throw std::runtime_error(path + ": unsupported .npy version " + std::to_string(major));
    }
    if (hlen > blob.size() - start) throw std::runtime_error(path + ": truncated .npy header");
    std::string h = blob.substr(start, hlen);
    auto field = [&](const char* key) -> std::string {
        size_t p = h.find(std::string("'") + key + "'");
        if (p == std::string::npos) throw std::runtime_error(path + ": .npy header lacks '" + key + "'");
        p = h.find(':', p);
        if (p == std::string::npos) throw std::runtime_error(path + ": bad .npy header");
        p = h.find_first_not_of(' ', p + 1);
        if (p == std::string::npos) throw std::runtime_error(path + ": bad .npy header");
        size_t e = h[p] == '(' ? h.find(')', p) + 1 : h[p] == '\'' ? h.find('\'', p + 1) + 1 : h.find_first_of(",}", p);
        if (e == std::string::npos || e == 0) throw std::runtime_error(path + ": bad .npy header");
        return h.substr(p, e - p);
    };
    std::string descr = field("descr"), fortran = field("fortran_order"), shape = field("shape");
    if (fortran != "False") throw std::runtime_error(path + ": Fortran-order .npy is not supported");
    at::ScalarType type;
    size_t size;
    if (descr == "'<i8'") { type = at::kLong; size = 8; }
    else if (descr == "'<f4'") { type = at::kFloat; size = 4; }
    else if (descr == "'<f8'") { type = at::kDouble; size = 8; }
    else if (descr == "'|u1'") { type = at::kByte; size = 1; }
    else throw std::runtime_error(path + ": unsupported .npy dtype " + descr);
    std::vector<int64_t> dims;
    uint64_t count = 1;
    for (size_t p = 1; p < shape.size();) {
        size_t q = shape.find_first_of(",)", p);
        std::string tok = shape.substr(p, q - p);
        size_t b = tok.find_first_not_of(' ');
        if (b != std::string::npos) {
            char* endp = nullptr;
            long long n = std::strtoll(tok.c_str() + b, &endp, 10);
            if (n < 0 || *endp != '\0') throw std::runtime_error(path + ": bad .npy shape " + shape);
            if (n && count > (uint64_t(1) << 62) / uint64_t(n)) throw std::runtime_error(path + ": .npy too large");
            dims.push_back(n);
            count *= uint64_t(n);
        }
        if (q == std::string::npos) break;
        p = q + 1;
    }
    size_t off = start + hlen;
    if (blob.size() - off != count * size)
        throw std::runtime_error(path + ": the .npy data is " + std::to_string(blob.size() - off) + " bytes, its header promises " +
                                 std::to_string(count * size));
    at::Tensor t = at::empty(dims, at::TensorOptions().dtype(type));
    if (count) std::memcpy(t.data_ptr(), blob.data() + off, count * size);
    return t;
}

void write_npy(const std::string& path, const at::Tensor& t0) {
    at::Tensor t = t0.detach().to(at::kFloat).contiguous();
    std::string shape = "(";  // Python's tuple repr: (), (n,), (a, b)
    for (int64_t k = 0; k < t.dim(); k++) shape += (k ? ", " : "") + std::to_string(t.size(k));
    shape += t.dim() == 1 ? ",)" : ")";
    std::string dict = "{'descr': '<f4', 'fortran_order': False, 'shape': " + shape + ", }";
    size_t total = 10 + dict.size() + 1;
    dict.append((64 - total % 64) % 64, ' ');
    dict += '\n';
    std::string bytes = "\x93NUMPY";
    bytes += '\x01';
    bytes += '\x00';
    bytes += char(dict.size() & 0xFF);
    bytes += char(dict.size() >> 8);
    bytes += dict;
    bytes.append(static_cast<const char*>(t.data_ptr()), size_t(t.numel()) * 4);
    write_file_atomic(path, bytes);
}

}  // namespace cb
