// safetensors (header parse, memory map, dtype conversion) and config.json.
#include "peakcast/models/qwen2/checkpoint.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <limits>
#include <optional>
#include <set>

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <nlohmann/json.hpp>

#include <fstream>
#include <sstream>

namespace peakcast::models::qwen2 {

namespace fs = std::filesystem;

// A read-only memory map of a whole file (RAII).
class MappedFile {
 public:
  static Result<std::unique_ptr<MappedFile>> open(const std::string& path) {
    const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
    if (fd < 0) return Status::not_found(fmt::format("{}: cannot open: {}", path, std::strerror(errno)));
    struct stat st {};
    if (::fstat(fd, &st) != 0) {
      ::close(fd);
      return Status::io(fmt::format("{}: cannot stat: {}", path, std::strerror(errno)));
    }
    auto m = std::unique_ptr<MappedFile>(new MappedFile());
    m->size_ = static_cast<size_t>(st.st_size);
    if (m->size_ > 0) {
      void* p = ::mmap(nullptr, m->size_, PROT_READ, MAP_PRIVATE, fd, 0);
      if (p == MAP_FAILED) {
        ::close(fd);
        return Status::io(fmt::format("{}: cannot map: {}", path, std::strerror(errno)));
      }
      m->data_ = static_cast<const char*>(p);
    }
    ::close(fd);
    return m;
  }
  ~MappedFile() {
    if (data_) ::munmap(const_cast<char*>(data_), size_);
  }
  const char* data() const { return data_; }
  size_t size() const { return size_; }
  size_t data_start = 0;  // 8 + header length

 private:
  MappedFile() = default;
  const char* data_ = nullptr;
  size_t size_ = 0;
};

namespace {

// A whole small file (config.json, the shard index). Not core's read_file: this library builds
// with LibTorch, fmt and nlohmann-json alone (bench/gpu/run.sh).
Result<std::string> slurp(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return Status::not_found(fmt::format("{}: cannot open: {}", path, std::strerror(errno)));
  std::ostringstream ss;
  ss << in.rdbuf();
  if (in.bad()) return Status::io(path + ": read error");
  return ss.str();
}

// Bytes per element of the safetensors dtypes (0 = unknown).
size_t dtype_size(const std::string& d) {
  if (d == "F64" || d == "I64" || d == "U64") return 8;
  if (d == "F32" || d == "I32" || d == "U32") return 4;
  if (d == "F16" || d == "BF16" || d == "I16" || d == "U16") return 2;
  if (d == "I8" || d == "U8" || d == "BOOL" || d == "F8_E4M3" || d == "F8_E5M2") return 1;
  return 0;
}

Result<int64_t> get_int(const nlohmann::json& j, const char* key, const std::string& origin,
                        std::optional<int64_t> fallback = std::nullopt) {
  if (!j.contains(key) || j[key].is_null()) {
    if (fallback) return *fallback;
    return Status::invalid(fmt::format("{}: {}: missing", origin, key));
  }
  if (!j[key].is_number_integer())
    return Status::invalid(fmt::format("{}: {}: expected an integer", origin, key));
  return j[key].get<int64_t>();
}

}  // namespace

int64_t Qwen2Config::parameter_count() const {
  const int64_t h = hidden_size, q = q_size(), kv = num_key_value_heads * head_dim();
  const int64_t attn = q * h + q + 2 * (kv * h + kv) + h * q;
  const int64_t mlp = 3 * h * intermediate_size;
  const int64_t layer = attn + mlp + 2 * h;
  return vocab_size * h * (tie_word_embeddings ? 1 : 2) + num_hidden_layers * layer + h;
}

Status Qwen2Config::validate() const {
  for (auto [v, name] : {std::pair{vocab_size, "vocab_size"}, {hidden_size, "hidden_size"},
                         {intermediate_size, "intermediate_size"}, {num_hidden_layers, "num_hidden_layers"},
                         {num_attention_heads, "num_attention_heads"},
                         {num_key_value_heads, "num_key_value_heads"}})
    if (v <= 0) return Status::invalid(fmt::format("{}: must be positive (got {})", name, v));
  if (explicit_head_dim < 0) return Status::invalid(fmt::format("head_dim: must be positive (got {})", explicit_head_dim));
  if (explicit_head_dim == 0 && hidden_size % num_attention_heads != 0)
    return Status::invalid("hidden_size: not a multiple of num_attention_heads (and no head_dim given)");
  if (num_attention_heads % num_key_value_heads != 0)
    return Status::invalid("num_attention_heads: not a multiple of num_key_value_heads");
  if (head_dim() % 2 != 0) return Status::invalid("head_dim: must be even for rotary embeddings");
  if (!(rope_theta > 0) || !(rms_norm_eps > 0))
    return Status::invalid("rope_theta and rms_norm_eps must be positive");
  return Status::ok();
}

Qwen2Config qwen25_coder_1p5b_config() {
  Qwen2Config c;
  c.vocab_size = 151936;
  c.hidden_size = 1536;
  c.intermediate_size = 8960;
  c.num_hidden_layers = 28;
  c.num_attention_heads = 12;
  c.num_key_value_heads = 2;
  c.max_position_embeddings = 32768;
  c.rope_theta = 1e6;
  c.rms_norm_eps = 1e-6;
  c.tie_word_embeddings = true;
  return c;
}

Result<Qwen2Config> parse_qwen2_config(const std::string& text, const std::string& origin) {
  auto j = nlohmann::json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (j.is_discarded() || !j.is_object()) return Status::invalid(origin + ": not a JSON object");
  const std::string type = j.value("model_type", "qwen2");
  if (type != "qwen2")
    return Status::unsupported(fmt::format("{}: model_type: '{}' is not qwen2", origin, type));
  if (j.contains("rope_scaling") && !j["rope_scaling"].is_null()) {
    // {"rope_type": "default"} (or the older "type") is plain RoPE, as null is.
    const auto& rs = j["rope_scaling"];
    const auto kind = [&](const char* k) {
      return rs.is_object() && rs.contains(k) && rs[k].is_string() ? rs[k].get<std::string>() : std::string();
    };
    const std::string scaling = !kind("rope_type").empty() ? kind("rope_type") : kind("type");
    if (scaling != "default")
      return Status::unsupported(fmt::format(
          "{}: rope_scaling: only null or rope_type 'default' (no scaling) is supported, got {}", origin, rs.dump()));
  }
  if (j.value("use_sliding_window", false))
    return Status::unsupported(origin + ": use_sliding_window: true is not supported");
  if (j.contains("hidden_act") && j["hidden_act"] != "silu")
    return Status::unsupported(origin + ": hidden_act: only silu is supported");
  Qwen2Config c;
  try {
    auto set = [&](int64_t& field, const char* key, std::optional<int64_t> fb = std::nullopt) -> Status {
      auto v = get_int(j, key, origin, fb);
      if (!v) return v.status();
      field = *v;
      return Status::ok();
    };
    for (auto [f, k] : {std::pair{&c.vocab_size, "vocab_size"}, {&c.hidden_size, "hidden_size"},
                        {&c.intermediate_size, "intermediate_size"},
                        {&c.num_hidden_layers, "num_hidden_layers"},
                        {&c.num_attention_heads, "num_attention_heads"}})
      if (auto st = set(*f, k); !st) return st;
    if (auto st = set(c.num_key_value_heads, "num_key_value_heads", c.num_attention_heads); !st) return st;
    if (auto st = set(c.max_position_embeddings, "max_position_embeddings", 32768); !st) return st;
    c.rope_theta = j.value("rope_theta", 10000.0);
    if (j.contains("rope_parameters") && j["rope_parameters"].is_object()) {  // transformers >= 5
      const auto& rp = j["rope_parameters"];
      if (rp.value("rope_type", "default") != "default")
        return Status::unsupported(origin + ": rope_parameters.rope_type: only default is supported");
      c.rope_theta = rp.value("rope_theta", c.rope_theta);
    }
    c.rms_norm_eps = j.value("rms_norm_eps", 1e-6);
    c.tie_word_embeddings = j.value("tie_word_embeddings", false);
    // As HF's Qwen2Attention: getattr(config, "head_dim", hidden_size // num_attention_heads).
    if (auto st = set(c.explicit_head_dim, "head_dim", 0); !st) return st;
    if (j.contains("head_dim") && !j["head_dim"].is_null() && c.explicit_head_dim <= 0)
      return Status::invalid(fmt::format("{}: head_dim: must be positive (got {})", origin, c.explicit_head_dim));
  } catch (const nlohmann::json::exception& e) {
    return Status::invalid(fmt::format("{}: {}", origin, e.what()));
  }
  if (auto st = c.validate(); !st) return st.with_context(origin);
  return c;
}

Result<Qwen2Config> read_qwen2_config(const std::string& dir) {
  const std::string path = (fs::path(dir) / "config.json").string();
  auto text = slurp(path);
  if (!text) return text.status();
  return parse_qwen2_config(*text, path);
}

Checkpoint::Checkpoint() = default;
Checkpoint::~Checkpoint() = default;
Checkpoint::Checkpoint(Checkpoint&&) noexcept = default;
Checkpoint& Checkpoint::operator=(Checkpoint&&) noexcept = default;

Status Checkpoint::add_file(const std::string& path) {
  auto m = MappedFile::open(path);
  if (!m) return m.status();
  MappedFile& f = **m;
  if (f.size() < 8) return Status::invalid(fmt::format("{}: truncated (no safetensors header)", path));
  uint64_t n = 0;
  std::memcpy(&n, f.data(), 8);  // little-endian (x86, aarch64)
  if (n > f.size() - 8 || n > (uint64_t{1} << 30))
    return Status::invalid(fmt::format("{}: header length {} exceeds the file ({} bytes): truncated or "
                                       "not safetensors", path, n, f.size()));
  auto j = nlohmann::json::parse(f.data() + 8, f.data() + 8 + n, nullptr, false);
  if (j.is_discarded() || !j.is_object())
    return Status::invalid(fmt::format("{}: header is not a JSON object", path));
  f.data_start = 8 + n;
  const uint64_t data_size = f.size() - f.data_start;
  const size_t file_index = paths_.size();
  for (const auto& [name, e] : j.items()) {
    if (name == "__metadata__") continue;
    const std::string where = fmt::format("{}: tensor {}", path, name);
    if (!e.is_object() || !e.contains("dtype") || !e["dtype"].is_string() || !e.contains("shape") ||
        !e["shape"].is_array() || !e.contains("data_offsets") || !e["data_offsets"].is_array() ||
        e["data_offsets"].size() != 2)
      return Status::invalid(where + ": needs dtype, shape and data_offsets [begin, end]");
    TensorEntry t;
    t.dtype = e["dtype"].get<std::string>();
    t.file = file_index;
    // Checked products: a shape whose byte count wraps 64 bits (2^62 x 64 float32 is 0 modulo
    // 2^64) would otherwise pass the size check below with an empty data range.
    uint64_t numel = 1;
    bool overflow = false;
    for (const auto& d : e["shape"]) {
      if (!d.is_number_unsigned()) return Status::invalid(where + ": shape: not non-negative integers");
      const uint64_t dim = d.get<uint64_t>();
      overflow |= dim > static_cast<uint64_t>(std::numeric_limits<int64_t>::max()) ||
                  __builtin_mul_overflow(numel, dim, &numel);
      t.shape.push_back(static_cast<int64_t>(dim));
    }
    if (!e["data_offsets"][0].is_number_unsigned() || !e["data_offsets"][1].is_number_unsigned())
      return Status::invalid(where + ": data_offsets: not non-negative integers");
    t.begin = e["data_offsets"][0].get<uint64_t>();
    t.end = e["data_offsets"][1].get<uint64_t>();
    if (t.end < t.begin) return Status::invalid(where + ": data_offsets: end before begin");
    if (t.end > data_size)
      return Status::invalid(fmt::format("{}: data ends at byte {} but the file holds {} data bytes "
                                         "(truncated file?)", where, t.end, data_size));
    const size_t es = dtype_size(t.dtype);
    uint64_t bytes = 0;
    if (overflow || (es != 0 && __builtin_mul_overflow(numel, uint64_t{es}, &bytes)))
      return Status::invalid(fmt::format("{}: shape {} of {} is more than 2^64 bytes", where,
                                         e["shape"].dump(), t.dtype));
    if (es != 0 && bytes != t.end - t.begin)
      return Status::invalid(fmt::format("{}: {} bytes for shape [{}] of {}", where, t.end - t.begin,
                                         fmt::join(t.shape, ", "), t.dtype));
    if (!entries_.emplace(name, std::move(t)).second)
      return Status::invalid(where + ": appears in more than one file");
  }
  paths_.push_back(path);
  maps_.push_back(std::move(m).value());
  return Status::ok();
}

Result<Checkpoint> Checkpoint::open_file(const std::string& path) {
  Checkpoint c;
  if (auto st = c.add_file(path); !st) return st;
  return c;
}

Result<Checkpoint> Checkpoint::open(const std::string& dir) {
  const fs::path single = fs::path(dir) / "model.safetensors";
  const fs::path index = fs::path(dir) / "model.safetensors.index.json";
  if (fs::exists(single)) return open_file(single.string());
  if (!fs::exists(index))
    return Status::not_found(fmt::format("{}: no weights (neither model.safetensors nor "
                                         "model.safetensors.index.json)", dir));
  auto text = slurp(index.string());
  if (!text) return text.status();
  auto j = nlohmann::json::parse(*text, nullptr, false);
  if (j.is_discarded() || !j.is_object() || !j.contains("weight_map") || !j["weight_map"].is_object())
    return Status::invalid(index.string() + ": weight_map: missing or not an object");
  std::set<std::string> shards;
  for (const auto& [name, file] : j["weight_map"].items()) {
    if (!file.is_string()) return Status::invalid(fmt::format("{}: weight_map.{}: not a file name", index.string(), name));
    shards.insert(file.get<std::string>());
  }
  Checkpoint c;
  for (const auto& s : shards)
    if (auto st = c.add_file((fs::path(dir) / s).string()); !st) return st;
  for (const auto& [name, file] : j["weight_map"].items()) {
    auto it = c.entries_.find(name);
    if (it == c.entries_.end() || fs::path(c.paths_[it->second.file]).filename() != file.get<std::string>())
      return Status::invalid(fmt::format("{}: weight_map: tensor {} is not in {}", index.string(), name,
                                         file.get<std::string>()));
  }
  return c;
}

Result<torch::Tensor> Checkpoint::read(const std::string& name, const std::vector<int64_t>& shape,
                                       torch::ScalarType dtype) const {
  auto it = entries_.find(name);
  if (it == entries_.end())
    return Status::invalid(fmt::format("tensor {}: missing from {}", name,
                                       paths_.size() == 1 ? paths_[0] : fmt::format("the {} shards", paths_.size())));
  const TensorEntry& t = it->second;
  const std::string& path = paths_[t.file];
  if (t.shape != shape)
    return Status::invalid(fmt::format("{}: tensor {}: shape [{}], expected [{}] from config.json", path,
                                       name, fmt::join(t.shape, ", "), fmt::join(shape, ", ")));
  torch::ScalarType src;
  if (t.dtype == "F32") src = torch::kFloat32;
  else if (t.dtype == "BF16") src = torch::kBFloat16;
  else if (t.dtype == "F16") src = torch::kFloat16;
  else
    return Status::unsupported(fmt::format("{}: tensor {}: dtype {} is not supported (F32, BF16, F16)",
                                           path, name, t.dtype));
  const MappedFile& f = *maps_[t.file];
  auto out = torch::empty(shape, torch::TensorOptions().dtype(src));
  std::memcpy(out.data_ptr(), f.data() + f.data_start + t.begin, t.end - t.begin);  // any alignment
  return src == dtype ? out : out.to(dtype);
}

std::string_view Checkpoint::file_bytes(size_t i) const {
  const MappedFile& f = *maps_.at(i);
  return f.data() ? std::string_view(f.data(), f.size()) : std::string_view();
}

}  // namespace peakcast::models::qwen2
