// jobstats AdminComment summaries: base64 (OpenSSL), gzip (zlib), JSON (nlohmann) and the
// schema checks. The rules are in include/peakcast/ingest/jobstats.h.
#include "peakcast/ingest/jobstats.h"

#include <openssl/evp.h>
#include <zlib.h>

#include <algorithm>
#include <cctype>
#include <cmath>
#include <nlohmann/json.hpp>

#include "peakcast/core/input_file.h"
#include "peakcast/core/io.h"
#include "peakcast/ingest/bounds.h"

namespace peakcast::ingest::jobstats {
namespace {

constexpr std::string_view kPrefix = "JS1:";
// A summary is a few KB even for large jobs; anything that inflates past this is not one.
constexpr size_t kMaxInflated = 4u << 20;

Result<std::string> base64_decode(std::string_view b64) {
  if (b64.empty() || b64.size() % 4 != 0) {
    return Status::invalid("base64: length " + std::to_string(b64.size()) +
                           " is not a positive multiple of 4");
  }
  for (char c : b64) {
    const bool ok = std::isalnum(static_cast<unsigned char>(c)) || c == '+' || c == '/' || c == '=';
    if (!ok) return Status::invalid("base64: character outside the alphabet");
  }
  std::string out(b64.size() / 4 * 3, '\0');
  const int n = EVP_DecodeBlock(reinterpret_cast<unsigned char*>(out.data()),
                                reinterpret_cast<const unsigned char*>(b64.data()),
                                static_cast<int>(b64.size()));
  if (n < 0) return Status::invalid("base64: not valid base64");
  size_t pad = 0;
  if (b64.back() == '=') ++pad;
  if (b64.size() >= 2 && b64[b64.size() - 2] == '=') ++pad;
  out.resize(static_cast<size_t>(n) - pad);
  return out;
}

// The JSON text of a summary's gzip, through core's InputFile (the project's one inflate loop):
// every member (RFC 1952; as gzip -d and jobstats' own Python reader), and bytes after the last
// member that are no member are corrupt. At most one byte past the cap is inflated.
Result<std::string> gunzip_bounded(std::string gz) {
  InputFile in = InputFile::from_bytes(std::move(gz), "gzip");
  std::string out;
  const Status read = in.read(out, kMaxInflated + 1);
  if (!read && read.kind() != ErrorKind::kInvalidInput) return read;
  if (!read || !in.compressed()) return Status::invalid("gzip: not a complete gzip stream");
  if (out.size() > kMaxInflated) return Status::invalid("gzip: inflates past 4 MiB");
  return out;
}

Result<uint64_t> bytes_field(const nlohmann::json& v, const std::string& where) {
  if (!v.is_number() || v.is_boolean()) return Status::invalid(where + ": not a number");
  const double d = v.get<double>();
  if (!std::isfinite(d) || d < 0 || d > kMaxBytes) return Status::invalid(where + ": out of range");
  return static_cast<uint64_t>(std::llround(std::min(d, 9.2e18)));
}

Status read_gpus(const std::string& node, const nlohmann::json& n, Summary& s) {
  auto used = n.find("gpu_used_memory");
  auto total = n.find("gpu_total_memory");
  if (used == n.end()) {
    if (total != n.end()) return Status::invalid("nodes." + node + ": gpu_total_memory without gpu_used_memory");
    return Status::ok();
  }
  if (!used->is_object()) return Status::invalid("nodes." + node + ".gpu_used_memory: not an object");
  if (total != n.end() && !total->is_object()) {
    return Status::invalid("nodes." + node + ".gpu_total_memory: not an object");
  }
  for (auto it = used->begin(); it != used->end(); ++it) {
    Gpu g{node, it.key(), 0, std::nullopt};
    auto u = bytes_field(it.value(), "nodes." + node + ".gpu_used_memory." + it.key());
    if (!u) return u.status();
    g.used_bytes = *u;
    if (total != n.end()) {
      if (auto t = total->find(it.key()); t != total->end()) {
        auto tb = bytes_field(*t, "nodes." + node + ".gpu_total_memory." + it.key());
        if (!tb) return tb.status();
        if (*tb > 0) g.total_bytes = *tb;
      }
    }
    s.gpus.push_back(std::move(g));
  }
  return Status::ok();
}

Status read_node(const std::string& node, const nlohmann::json& n, Summary& s) {
  if (!n.is_object()) return Status::invalid("nodes." + node + ": not an object");
  auto add = [&](const char* key, std::optional<uint64_t>& sum) -> Status {
    auto f = n.find(key);
    if (f == n.end()) return Status::ok();
    auto b = bytes_field(*f, "nodes." + node + "." + key);
    if (!b) return b.status();
    const double total = static_cast<double>(sum.value_or(0)) + static_cast<double>(*b);
    if (total > kMaxBytes) return Status::invalid("nodes: " + std::string(key) + " sum out of range");
    sum = sum.value_or(0) + *b;
    return Status::ok();
  };
  if (Status st = add("used_memory", s.used_memory_bytes); !st) return st;
  if (Status st = add("total_memory", s.total_memory_bytes); !st) return st;
  return read_gpus(node, n, s);
}

}  // namespace

Result<Decoded> decode_admin_comment(std::string_view text) {
  text = trim(text);
  Decoded d;
  if (!text.starts_with(kPrefix)) return d;  // kAbsent
  text.remove_prefix(kPrefix.size());
  if (text == "Short") {
    d.kind = Kind::kShort;
    return d;
  }
  if (text == "None") {
    d.kind = Kind::kNoData;
    return d;
  }
  auto raw = base64_decode(text);
  if (!raw) return raw.status();
  auto json_text = gunzip_bounded(std::move(raw).value());
  if (!json_text) return json_text.status();
  nlohmann::json j = nlohmann::json::parse(*json_text, nullptr, /*allow_exceptions=*/false);
  if (j.is_discarded()) return Status::invalid("json: not valid JSON");
  if (!j.is_object()) return Status::invalid("json: not an object");
  auto nodes = j.find("nodes");
  if (nodes == j.end()) return Status::invalid("json: no \"nodes\"");
  if (!nodes->is_object()) return Status::invalid("nodes: not an object");
  for (auto it = nodes->begin(); it != nodes->end(); ++it) {
    if (Status s = read_node(it.key(), it.value(), d.summary); !s) return s;
  }
  d.kind = Kind::kSummary;
  return d;
}

std::string encode_admin_comment(const std::string& json) {
  z_stream zs{};
  deflateInit2(&zs, Z_BEST_COMPRESSION, Z_DEFLATED, 16 + 15, 8, Z_DEFAULT_STRATEGY);
  std::string gz(deflateBound(&zs, static_cast<uLong>(json.size())) + 32, '\0');
  zs.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(json.data()));
  zs.avail_in = static_cast<uInt>(json.size());
  zs.next_out = reinterpret_cast<Bytef*>(gz.data());
  zs.avail_out = static_cast<uInt>(gz.size());
  deflate(&zs, Z_FINISH);
  gz.resize(zs.total_out);
  deflateEnd(&zs);
  std::string b64(4 * ((gz.size() + 2) / 3) + 1, '\0');
  const int n = EVP_EncodeBlock(reinterpret_cast<unsigned char*>(b64.data()),
                                reinterpret_cast<const unsigned char*>(gz.data()),
                                static_cast<int>(gz.size()));
  b64.resize(static_cast<size_t>(n));
  return std::string(kPrefix) + b64;
}

const Gpu* busiest_gpu(const Summary& s) {
  const Gpu* best = nullptr;
  auto frac = [](const Gpu& g) {
    return g.total_bytes ? static_cast<double>(g.used_bytes) / static_cast<double>(*g.total_bytes)
                         : -1.0;
  };
  for (const Gpu& g : s.gpus) {
    if (!best) {
      best = &g;
      continue;
    }
    const double fb = frac(*best), fg = frac(g);
    if (fg > fb || (fg == fb && g.used_bytes > best->used_bytes)) best = &g;
  }
  return best;
}

}  // namespace peakcast::ingest::jobstats
