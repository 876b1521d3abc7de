#include "data.h"

#include <zlib.h>

#include <cstring>
#include <fstream>
#include <vector>

#include "common.h"
#include "tensor_io.h"

namespace cb {
namespace {

bool exists(const std::string& p) { return std::ifstream(p).good(); }

// The bytes of DIR/BASE or DIR/BASE.gz, decompressed when gzip's magic opens it.
std::string read_maybe_gz(const std::string& dir, const std::string& base, std::string& path) {
    for (const std::string& name : {base, base + ".gz"}) {
        path = dir + "/" + name;
        if (!exists(path)) continue;
        std::string raw = read_file(path);
        if (raw.size() < 2 || (unsigned char)raw[0] != 0x1f || (unsigned char)raw[1] != 0x8b) return raw;
        gzFile f = gzopen(path.c_str(), "rb");
        if (!f) fail("cannot open " + path);
        std::string out;
        std::vector<char> buf(1 << 20);
        int n;
        while ((n = gzread(f, buf.data(), unsigned(buf.size()))) > 0) out.append(buf.data(), size_t(n));
        int err = 0;
        const char* msg = gzerror(f, &err);
        bool bad = n < 0 || (err != Z_OK && err != Z_STREAM_END);
        std::string why = bad ? msg : "";
        gzclose(f);
        if (bad) fail(path + ": corrupt gzip data (" + why + ")");
        return out;
    }
    fail("cannot open " + dir + "/" + base + "[.gz]");
}

// An IDX file of unsigned bytes with NDIM dimensions: (dims, first `limit` items).
at::Tensor read_idx(const std::string& dir, const std::string& base, int ndim, int64_t limit) {
    std::string path;
    std::string blob = read_maybe_gz(dir, base, path);
    if (blob.size() < size_t(4 + 4 * ndim) || blob[0] != 0 || blob[1] != 0 || blob[2] != 8 || blob[3] != char(ndim))
        fail(path + ": wrong IDX magic or truncated header");
    std::vector<int64_t> dims;
    uint64_t count = 1;
    for (int k = 0; k < ndim; k++) {
        const unsigned char* p = reinterpret_cast<const unsigned char*>(blob.data()) + 4 + 4 * k;
        uint64_t d = (uint64_t(p[0]) << 24) | (uint64_t(p[1]) << 16) | (uint64_t(p[2]) << 8) | p[3];
        dims.push_back(int64_t(d));
        count *= d;
    }
    uint64_t have = blob.size() - 4 - 4 * ndim;
    if (have != count)
        fail(path + ": header promises " + std::to_string(count) + " bytes, file has " + std::to_string(have));
    at::Tensor t = at::empty(dims, at::kByte);
    if (count) std::memcpy(t.data_ptr(), blob.data() + 4 + 4 * ndim, count);
    return limit ? t.narrow(0, 0, std::min(limit, dims[0])) : t;
}

Dataset load_mnist(const std::string& dir, bool train, int64_t limit) {
    std::string prefix = train ? "train" : "t10k";
    at::Tensor x = read_idx(dir, prefix + "-images-idx3-ubyte", 3, limit);
    at::Tensor y = read_idx(dir, prefix + "-labels-idx1-ubyte", 1, limit);
    if (x.size(0) != y.size(0))
        fail(dir + ": " + std::to_string(x.size(0)) + " images but " + std::to_string(y.size(0)) + " labels");
    // float32 division by 255, as NumPy's x.astype(float32) / float32(255)
    return {x.to(at::kFloat).unsqueeze(1).div(255.0f).contiguous(), y.to(at::kLong)};
}

constexpr int64_t kCifarRecord = 1 + 3 * 32 * 32;

Dataset load_cifar(const std::string& dir, bool train, int64_t limit) {
    std::vector<std::string> names;
    if (train)
        for (int i = 1; i <= 5; i++) names.push_back("data_batch_" + std::to_string(i) + ".bin");
    else
        names.push_back("test_batch.bin");
    std::vector<at::Tensor> xs, ys;
    int64_t total = 0;
    for (const auto& name : names) {
        if (limit && total >= limit) break;
        std::string path = dir + "/" + name;
        std::string blob = read_file(path);
        if (blob.empty() || blob.size() % kCifarRecord)
            fail(path + ": " + std::to_string(blob.size()) + " bytes is not a whole number of " +
                 std::to_string(kCifarRecord) + "-byte records");
        int64_t n = int64_t(blob.size()) / kCifarRecord;
        if (limit) n = std::min(n, limit - total);
        at::Tensor rec = at::empty({n, kCifarRecord}, at::kByte);
        std::memcpy(rec.data_ptr(), blob.data(), size_t(n * kCifarRecord));
        if (n && rec.select(1, 0).max().item<uint8_t>() > 9) fail(path + ": a label is outside 0-9");
        xs.push_back(rec.narrow(1, 1, kCifarRecord - 1).reshape({n, 3, 32, 32}));
        ys.push_back(rec.select(1, 0));
        total += n;
    }
    at::Tensor x = at::cat(xs).to(at::kFloat).div(255.0f).contiguous();
    return {x, at::cat(ys).to(at::kLong)};
}

Dataset load_imdb(const std::string& dir, bool train, int64_t limit) {
    std::string split = train ? "train" : "test";
    if (!exists(dir + "/vocab.txt"))
        fail(dir + " is not prepared IMDb data (no vocab.txt): make it with crossbind data imdb-prepare --from ACLIMDB_DIR --out " + dir);
    at::Tensor x = read_npy(dir + "/x_" + split + ".npy");
    at::Tensor y = read_npy(dir + "/y_" + split + ".npy");
    if (x.scalar_type() != at::kLong || x.dim() != 2 || y.scalar_type() != at::kLong || y.dim() != 1 || y.size(0) != x.size(0))
        fail(dir + ": expected int64 x_" + split + ".npy [n, L] and y_" + split + ".npy [n]");
    if (limit) {
        x = x.narrow(0, 0, std::min(limit, x.size(0)));
        y = y.narrow(0, 0, std::min(limit, y.size(0)));
    }
    return {x.contiguous(), y.to(at::kFloat)};
}

}  // namespace

Dataset load_data(const std::string& model, const std::string& dir, bool train, int64_t limit) {
    std::string f = data_format(model);
    try {
        if (f == "mnist") return load_mnist(dir, train, limit);
        if (f == "cifar") return load_cifar(dir, train, limit);
        return load_imdb(dir, train, limit);
    } catch (const Failure&) {
        throw;
    } catch (const std::runtime_error& e) {
        fail(e.what());
    }
}

}  // namespace cb
