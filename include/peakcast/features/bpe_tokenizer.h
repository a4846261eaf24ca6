// Byte-level BPE tokenizer read from a Hugging Face `tokenizer.json` (the GPT-2 / Qwen2 kind):
// the tokenizer of the study's code model, Qwen2.5-Coder (docs/method.md §4). Encoding follows HF
// `tokenizers` (checked id for id on ../shared/data/qwen2/tokenizer-golden.jsonl.gz):
//   1. added tokens (special or not) are matched first on the raw text, leftmost-longest, each
//      becoming its one id;
//   2. every piece between them is NFC-normalized (utf8proc) when the file's normalizer says NFC;
//   3. split with the pre-tokenizer's regex (PCRE2, Unicode properties; `\s` is rewritten to the
//      Unicode White_Space set as Rust's regex reads it);
//   4. each piece's UTF-8 bytes go through the GPT-2 byte-to-unicode table and are merged by rank
//      (lowest first, leftmost on ties), then looked up in the vocabulary.
// Invalid UTF-8 in the input (job scripts are bytes) is replaced by U+FFFD before step 1, as
// Python's `bytes.decode(errors="replace")` would. This header is Torch-free.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "peakcast/core/status.h"

namespace peakcast::features {

struct BpeLoadOptions {
  // Added tokens with a larger id are ignored (< 0: keep all). The fixture's Qwen3 file carries 4
  // added tokens (151665..151668) that Qwen2.5-Coder lacks: 151664 gives Qwen2.5-Coder's set.
  int64_t max_added_token_id = -1;
};

class BpeTokenizer {
 public:
  BpeTokenizer();
  ~BpeTokenizer();
  BpeTokenizer(BpeTokenizer&&) noexcept;
  BpeTokenizer& operator=(BpeTokenizer&&) noexcept;
  BpeTokenizer(const BpeTokenizer&) = delete;
  BpeTokenizer& operator=(const BpeTokenizer&) = delete;

  // tokenizer.json, plain or gzip-compressed. Merges may be `["a", "b"]` pairs or "a b" strings.
  // Errors name the file and the field (unsupported model type, a merge whose parts or result
  // are not in the vocabulary, a bad regex...).
  static Result<BpeTokenizer> load(const std::string& path, const BpeLoadOptions& opts = {});
  static Result<BpeTokenizer> from_json(std::string_view json_text, const std::string& origin,
                                        const BpeLoadOptions& opts = {});

  // Token ids of the text; no special tokens are added. Thread-safe; never throws on any input.
  std::vector<int64_t> encode(std::string_view text) const;

  // One more than the largest id (vocabulary and kept added tokens).
  int64_t id_limit() const;
  size_t vocab_entries() const;
  size_t merge_count() const;
  size_t added_token_count() const;
  // Bytes the shared piece cache holds (pieces and their ids): bounded whatever the input.
  size_t cached_bytes() const;
  // The text of a token (vocabulary entries mapped back to bytes; added tokens as written).
  // Empty for unknown ids.
  std::string token_text(int64_t id) const;

  struct Impl;

 private:
  std::unique_ptr<Impl> impl_;
};

// The study's budget rule on ids: sequences longer than `budget` keep the first
// floor(head_share * budget) and the last budget - that many ids (4096: 2457 + 1639).
std::vector<int64_t> head_tail_ids(const std::vector<int64_t>& ids, size_t budget,
                                   double head_share = 0.6);

}  // namespace peakcast::features
