// Loading tokenizer.json and encoding (added-token split, NFC, regex split, byte-level BPE).
#include "peakcast/features/bpe_tokenizer.h"

#include <algorithm>
#include <mutex>
#include <queue>
#include <shared_mutex>
#include <unordered_map>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "features/bpe/bpe_text.h"
#include "peakcast/core/io.h"

namespace peakcast::features {

namespace {
// Hash for heterogeneous lookup: the cache is probed with string_views (no allocation per piece).
struct PieceHash {
  using is_transparent = void;
  size_t operator()(std::string_view s) const { return std::hash<std::string_view>{}(s); }
};
}  // namespace

struct BpeTokenizer::Impl {
  struct Merge {
    int32_t rank;
    int32_t result;
  };
  std::unordered_map<std::string, int32_t> vocab;  // raw bytes -> id
  std::vector<std::string> id_text;                // id -> raw bytes / added token text
  std::unordered_map<uint64_t, Merge> merges;      // (left id << 32 | right id) -> rank, result
  std::array<int32_t, 256> byte_id{};              // single-byte tokens (-1: not in vocab)
  std::vector<std::pair<std::string, int32_t>> added;  // sorted longest first
  std::array<bool, 256> added_first{};             // first bytes of added tokens
  bool normalize_nfc = false;
  std::shared_ptr<bpe::SplitRegex> split;
  int64_t id_limit = 0;

  // Pre-token -> ids, shared by all calls (scripts repeat their pieces: " --", "\n", " python").
  // Bounded in entries and in their size: once full, new pieces are merged without being kept,
  // and pieces longer than kCacheMaxPiece (a 1 MiB run of letters is one piece) never are, as HF's
  // word cache (MAX_LENGTH 256); otherwise distinct long scripts would pin gigabytes for good.
  static constexpr size_t kCacheCap = 1 << 17;
  static constexpr size_t kCacheMaxPiece = 256;
  mutable std::shared_mutex cache_mu;
  mutable std::unordered_map<std::string, std::vector<int32_t>, PieceHash, std::equal_to<>> cache;
  mutable size_t cache_bytes = 0;  // keys and ids held by `cache`

  const Merge* find_merge(int32_t a, int32_t b) const {
    auto it = merges.find((static_cast<uint64_t>(static_cast<uint32_t>(a)) << 32) | static_cast<uint32_t>(b));
    return it == merges.end() ? nullptr : &it->second;
  }

  void bpe(std::string_view piece, std::vector<int64_t>& out) const;
  void encode_plain(std::string_view text, std::vector<int64_t>& out) const;
  void encode_piece(std::string_view piece, std::vector<int64_t>& out) const;
};

namespace {

Status field_error(const std::string& origin, const std::string& field, const std::string& why) {
  return Status::invalid(fmt::format("{}: {}: {}", origin, field, why));
}

// The split regex of the pre-tokenizer: a Split (possibly inside a Sequence) with a Regex
// pattern; a ByteLevel step with use_regex=false is allowed beside it.
Result<std::string> find_split_pattern(const nlohmann::json& pre, const std::string& origin) {
  if (!pre.is_object()) return field_error(origin, "pre_tokenizer", "missing");
  const std::string type = pre.value("type", "");
  if (type == "Sequence") {
    std::string found;
    for (const auto& step : pre.value("pretokenizers", nlohmann::json::array())) {
      const std::string t = step.value("type", "");
      if (t == "Split") {
        auto p = find_split_pattern(step, origin);
        if (!p) return p;
        found = *p;
      } else if (t == "ByteLevel") {
        if (step.value("use_regex", true))
          return field_error(origin, "pre_tokenizer", "ByteLevel with use_regex=true is not supported");
      } else {
        return field_error(origin, "pre_tokenizer", fmt::format("step type '{}' is not supported", t));
      }
    }
    if (found.empty()) return field_error(origin, "pre_tokenizer", "no Split step with a regex");
    return found;
  }
  if (type == "Split") {
    const auto& pat = pre.value("pattern", nlohmann::json::object());
    if (!pat.contains("Regex") || !pat["Regex"].is_string())
      return field_error(origin, "pre_tokenizer.pattern", "expected {\"Regex\": ...}");
    if (pre.value("behavior", "Isolated") != "Isolated" || pre.value("invert", false))
      return field_error(origin, "pre_tokenizer", "only behavior Isolated without invert is supported");
    return pat["Regex"].get<std::string>();
  }
  return field_error(origin, "pre_tokenizer", fmt::format("type '{}' is not supported", type));
}

Status read_normalizer(const nlohmann::json& j, const std::string& origin, bool& nfc) {
  nfc = false;
  if (!j.contains("normalizer") || j["normalizer"].is_null()) return Status::ok();
  const auto& n = j["normalizer"];
  const std::string type = n.value("type", "");
  if (type == "NFC") {
    nfc = true;
    return Status::ok();
  }
  if (type == "Sequence" && n.value("normalizers", nlohmann::json::array()).empty()) return Status::ok();
  return field_error(origin, "normalizer", fmt::format("type '{}' is not supported (NFC or none)", type));
}

// One merge entry: ["a", "b"] or "a b".
bool merge_parts(const nlohmann::json& m, std::string& a, std::string& b) {
  if (m.is_array() && m.size() == 2 && m[0].is_string() && m[1].is_string()) {
    a = m[0].get<std::string>();
    b = m[1].get<std::string>();
    return true;
  }
  if (m.is_string()) {
    const std::string& s = m.get_ref<const std::string&>();
    const size_t sp = s.find(' ');
    if (sp == std::string::npos || sp == 0 || sp + 1 >= s.size()) return false;
    a = s.substr(0, sp);
    b = s.substr(sp + 1);
    return true;
  }
  return false;
}

Status read_model(const nlohmann::json& model, const std::string& origin, BpeTokenizer::Impl& t) {
  if (!model.is_object() || model.value("type", "BPE") != "BPE")
    return field_error(origin, "model.type", "only BPE models are supported");
  if (!model.contains("vocab") || !model["vocab"].is_object())
    return field_error(origin, "model.vocab", "missing or not an object");
  std::string bytes;
  for (const auto& [key, value] : model["vocab"].items()) {
    if (!value.is_number_integer() || value.get<int64_t>() < 0 || value.get<int64_t>() > (1 << 30))
      return field_error(origin, "model.vocab." + key, "id is not a non-negative integer");
    if (!bpe::byte_level_decode(key, bytes))
      return field_error(origin, "model.vocab." + key, "not a byte-level token");
    const auto id = static_cast<int32_t>(value.get<int64_t>());
    t.vocab[bytes] = id;
    if (static_cast<size_t>(id) >= t.id_text.size()) t.id_text.resize(static_cast<size_t>(id) + 1);
    t.id_text[static_cast<size_t>(id)] = bytes;
  }
  t.byte_id.fill(-1);
  for (int b = 0; b < 256; ++b) {
    auto it = t.vocab.find(std::string(1, static_cast<char>(b)));
    if (it != t.vocab.end()) t.byte_id[static_cast<size_t>(b)] = it->second;
  }
  const auto& merges = model.value("merges", nlohmann::json::array());
  t.merges.reserve(merges.size() * 2);
  std::string a, b, ab, ba, bb;
  for (size_t r = 0; r < merges.size(); ++r) {
    const std::string where = fmt::format("model.merges[{}]", r);
    if (!merge_parts(merges[r], a, b))
      return field_error(origin, where, "expected [\"a\", \"b\"] or \"a b\"");
    if (!bpe::byte_level_decode(a, ba) || !bpe::byte_level_decode(b, bb))
      return field_error(origin, where, "not byte-level tokens");
    auto ia = t.vocab.find(ba), ib = t.vocab.find(bb), iab = t.vocab.find(ba + bb);
    if (ia == t.vocab.end() || ib == t.vocab.end() || iab == t.vocab.end())
      return field_error(origin, where, fmt::format("'{}' + '{}': a part or the result is not in the vocabulary", a, b));
    const uint64_t key = (static_cast<uint64_t>(static_cast<uint32_t>(ia->second)) << 32) |
                         static_cast<uint32_t>(ib->second);
    t.merges.emplace(key, BpeTokenizer::Impl::Merge{static_cast<int32_t>(r), iab->second});
  }
  return Status::ok();
}

Status read_added(const nlohmann::json& j, const std::string& origin, const BpeLoadOptions& opts,
                  BpeTokenizer::Impl& t) {
  for (const auto& tok : j.value("added_tokens", nlohmann::json::array())) {
    if (!tok.contains("id") || !tok["id"].is_number_integer() || !tok.contains("content") ||
        !tok["content"].is_string())
      return field_error(origin, "added_tokens", "each entry needs an integer id and a content string");
    const int64_t id = tok["id"].get<int64_t>();
    const std::string content = tok["content"].get<std::string>();
    if (opts.max_added_token_id >= 0 && id > opts.max_added_token_id) continue;
    if (id < 0 || id > (1 << 30) || content.empty())
      return field_error(origin, "added_tokens", fmt::format("'{}': bad id or empty content", content));
    t.added.emplace_back(content, static_cast<int32_t>(id));
    t.added_first[static_cast<unsigned char>(content[0])] = true;
    if (static_cast<size_t>(id) >= t.id_text.size()) t.id_text.resize(static_cast<size_t>(id) + 1);
    t.id_text[static_cast<size_t>(id)] = content;
  }
  std::stable_sort(t.added.begin(), t.added.end(),
                   [](const auto& x, const auto& y) { return x.first.size() > y.first.size(); });
  return Status::ok();
}

}  // namespace

// Repeatedly merges the lowest-ranked adjacent pair, leftmost on ties. The symbols form a linked
// list and the candidate pairs a min-heap on (rank, position), checked when popped (a pair that
// changed since it was pushed is skipped), so a piece of n bytes costs O(n log n): one pre-token
// can be a whole 1 MiB run of letters or spaces, which a rescan per merge made O(n^2) (hours).
void BpeTokenizer::Impl::bpe(std::string_view piece, std::vector<int64_t>& out) const {
  struct Sym {
    int32_t id;    // -1: merged into its left neighbour
    int64_t prev;  // -1: none
    int64_t next;
  };
  std::vector<Sym> sym;
  sym.reserve(piece.size());
  for (char c : piece) {
    const int32_t id = byte_id[static_cast<unsigned char>(c)];
    if (id >= 0) sym.push_back({id, -1, -1});  // a byte missing from the vocabulary is dropped (no unk)
  }
  if (sym.empty()) return;
  const auto n = static_cast<int64_t>(sym.size());
  for (int64_t i = 0; i < n; ++i) {
    sym[static_cast<size_t>(i)].prev = i - 1;
    sym[static_cast<size_t>(i)].next = i + 1 < n ? i + 1 : -1;
  }
  struct Candidate {
    int32_t rank;
    int64_t pos;  // the left symbol
  };
  auto later = [](const Candidate& x, const Candidate& y) {
    return x.rank != y.rank ? x.rank > y.rank : x.pos > y.pos;
  };
  std::priority_queue<Candidate, std::vector<Candidate>, decltype(later)> heap(later);
  auto at = [&](int64_t i) -> Sym& { return sym[static_cast<size_t>(i)]; };
  auto push = [&](int64_t i) {
    if (at(i).next < 0) return;
    if (const Merge* m = find_merge(at(i).id, at(at(i).next).id)) heap.push({m->rank, i});
  };
  for (int64_t i = 0; i < n; ++i) push(i);
  while (!heap.empty()) {
    const Candidate c = heap.top();
    heap.pop();
    Sym& left = at(c.pos);
    if (left.id < 0 || left.next < 0) continue;
    const Merge* m = find_merge(left.id, at(left.next).id);
    if (!m || m->rank != c.rank) continue;  // the pair changed since it was pushed
    Sym& right = at(left.next);
    left.id = m->result;
    right.id = -1;
    left.next = right.next;
    if (left.next >= 0) at(left.next).prev = c.pos;
    if (left.prev >= 0) push(left.prev);
    push(c.pos);
  }
  for (int64_t i = 0; i >= 0; i = at(i).next) out.push_back(at(i).id);
}

void BpeTokenizer::Impl::encode_piece(std::string_view piece, std::vector<int64_t>& out) const {
  if (piece.size() == 1 && byte_id[static_cast<unsigned char>(piece[0])] >= 0) {
    out.push_back(byte_id[static_cast<unsigned char>(piece[0])]);
    return;
  }
  if (piece.size() > kCacheMaxPiece) {
    bpe(piece, out);
    return;
  }
  {
    std::shared_lock<std::shared_mutex> lock(cache_mu);
    auto it = cache.find(piece);
    if (it != cache.end()) {
      out.insert(out.end(), it->second.begin(), it->second.end());
      return;
    }
  }
  const size_t start = out.size();
  bpe(piece, out);
  std::unique_lock<std::shared_mutex> lock(cache_mu);
  if (cache.size() >= kCacheCap) return;
  auto [it, added] = cache.emplace(std::string(piece), std::vector<int32_t>(out.begin() + static_cast<std::ptrdiff_t>(start), out.end()));
  if (added) cache_bytes += it->first.size() + it->second.size() * sizeof(int32_t);
}

void BpeTokenizer::Impl::encode_plain(std::string_view text, std::vector<int64_t>& out) const {
  if (text.empty()) return;
  const std::string normalized = normalize_nfc ? bpe::nfc(text) : std::string(text);
  for (std::string_view piece : split->split(normalized)) encode_piece(piece, out);
}

BpeTokenizer::BpeTokenizer() = default;
BpeTokenizer::~BpeTokenizer() = default;
BpeTokenizer::BpeTokenizer(BpeTokenizer&&) noexcept = default;
BpeTokenizer& BpeTokenizer::operator=(BpeTokenizer&&) noexcept = default;

Result<BpeTokenizer> BpeTokenizer::load(const std::string& path, const BpeLoadOptions& opts) {
  auto text = read_file(path);
  if (!text) return text.status();
  return from_json(*text, path, opts);
}

Result<BpeTokenizer> BpeTokenizer::from_json(std::string_view json_text, const std::string& origin,
                                             const BpeLoadOptions& opts) {
  auto j = nlohmann::json::parse(json_text, nullptr, /*allow_exceptions=*/false);
  if (j.is_discarded() || !j.is_object())
    return Status::invalid(fmt::format("{}: not a JSON object (a Hugging Face tokenizer.json?)", origin));
  auto impl = std::make_unique<Impl>();
  try {
    if (auto st = read_normalizer(j, origin, impl->normalize_nfc); !st) return st;
    auto pattern = find_split_pattern(j.value("pre_tokenizer", nlohmann::json()), origin);
    if (!pattern) return pattern.status();
    auto re = bpe::SplitRegex::compile(*pattern);
    if (!re) return re.status().with_context(origin + ": pre_tokenizer");
    impl->split = *re;
    if (!j.contains("model")) return field_error(origin, "model", "missing");
    if (auto st = read_model(j["model"], origin, *impl); !st) return st;
    if (auto st = read_added(j, origin, opts, *impl); !st) return st;
  } catch (const nlohmann::json::exception& e) {
    return Status::invalid(fmt::format("{}: {}", origin, e.what()));
  }
  impl->id_limit = static_cast<int64_t>(impl->id_text.size());
  BpeTokenizer t;
  t.impl_ = std::move(impl);
  return t;
}

std::vector<int64_t> BpeTokenizer::encode(std::string_view raw) const {
  std::vector<int64_t> out;
  if (!impl_) return out;
  std::string repaired;
  const std::string_view text = bpe::repair_utf8(raw, repaired) ? std::string_view(repaired) : raw;
  size_t start = 0, i = 0;
  while (i < text.size()) {
    if (!impl_->added_first[static_cast<unsigned char>(text[i])]) {
      ++i;
      continue;
    }
    const std::pair<std::string, int32_t>* hit = nullptr;
    for (const auto& a : impl_->added)  // longest first
      if (text.compare(i, a.first.size(), a.first) == 0) {
        hit = &a;
        break;
      }
    if (!hit) {
      ++i;
      continue;
    }
    impl_->encode_plain(text.substr(start, i - start), out);
    out.push_back(hit->second);
    i += hit->first.size();
    start = i;
  }
  impl_->encode_plain(text.substr(start), out);
  return out;
}

int64_t BpeTokenizer::id_limit() const { return impl_ ? impl_->id_limit : 0; }
size_t BpeTokenizer::vocab_entries() const { return impl_ ? impl_->vocab.size() : 0; }
size_t BpeTokenizer::merge_count() const { return impl_ ? impl_->merges.size() : 0; }
size_t BpeTokenizer::added_token_count() const { return impl_ ? impl_->added.size() : 0; }
size_t BpeTokenizer::cached_bytes() const {
  if (!impl_) return 0;
  std::shared_lock<std::shared_mutex> lock(impl_->cache_mu);
  return impl_->cache_bytes;
}

std::string BpeTokenizer::token_text(int64_t id) const {
  if (!impl_ || id < 0 || id >= impl_->id_limit) return {};
  return impl_->id_text[static_cast<size_t>(id)];
}

std::vector<int64_t> head_tail_ids(const std::vector<int64_t>& ids, size_t budget, double head_share) {
  if (ids.size() <= budget) return ids;
  const auto head = static_cast<size_t>(static_cast<double>(budget) * head_share);
  const size_t tail = budget - head;
  std::vector<int64_t> out(ids.begin(), ids.begin() + static_cast<std::ptrdiff_t>(head));
  out.insert(out.end(), ids.end() - static_cast<std::ptrdiff_t>(tail), ids.end());
  return out;
}

}  // namespace peakcast::features
