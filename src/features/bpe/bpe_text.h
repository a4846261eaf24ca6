// Text steps of the byte-level BPE tokenizer: UTF-8 repair, NFC, the GPT-2 byte-to-unicode
// table, and the pre-tokenizer's split regex (PCRE2).
#pragma once

#include <array>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "peakcast/core/status.h"

namespace peakcast::features::bpe {

// The text with each maximal invalid UTF-8 subpart replaced by one U+FFFD, as Python's
// decode(errors="replace") (a character cut short is one U+FFFD; returns the input unchanged,
// without copying, when it is valid: `out` stays empty and false is returned).
bool repair_utf8(std::string_view in, std::string& out);

// NFC of valid UTF-8 (utf8proc). ASCII-only text is returned as is.
std::string nfc(std::string_view valid_utf8);

// GPT-2's byte -> code point table and its inverse (code point -> byte, -1 if none).
const std::array<char32_t, 256>& byte_to_unicode();
int byte_of_unicode(char32_t cp);

// Decodes a byte-level token string ("Ġhello") back to its raw bytes; false when a code point is
// outside the table.
bool byte_level_decode(std::string_view token, std::string& bytes);

// Rewrites a Hugging Face (Rust `regex`) pattern for PCRE2: `\s` / `\S` become the Unicode
// White_Space set (PCRE2's UCP `\s` differs on U+0085, U+180E...). Inside a class `\s` expands to
// the set's members.
std::string rewrite_whitespace_classes(std::string_view pattern);

// The compiled split regex ("Isolated" behaviour: matches and the gaps between them are pieces).
class SplitRegex {
 public:
  static Result<std::shared_ptr<SplitRegex>> compile(const std::string& hf_pattern);
  ~SplitRegex();
  // Pieces of valid UTF-8 text, as views into it, in order; their concatenation is the text.
  std::vector<std::string_view> split(std::string_view text) const;

 private:
  SplitRegex() = default;
  void* code_ = nullptr;  // pcre2_code_8*
};

}  // namespace peakcast::features::bpe
