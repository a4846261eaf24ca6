#include "features/bpe/bpe_text.h"

#define PCRE2_CODE_UNIT_WIDTH 8
#include <pcre2.h>
#include <utf8proc.h>

#include <cstdlib>

#include <fmt/format.h>

namespace peakcast::features::bpe {
namespace {

// The UTF-8 sequence at s[i]: its length when valid, else 0 with `bad` set to the length of its
// maximal subpart (a lead byte and the continuation bytes that fit it, cut short by the end of the
// text or a byte that does not fit; at least 1): the bytes Python's decode(errors="replace") turns
// into one U+FFFD. Overlongs, surrogates and code points above U+10FFFF are invalid, as in Python
// and Rust.
size_t utf8_seq_len(std::string_view s, size_t i, size_t& bad) {
  bad = 1;
  const auto b0 = static_cast<unsigned char>(s[i]);
  if (b0 < 0x80) return 1;
  size_t n = 0;
  unsigned char lo = 0x80, hi = 0xBF;
  if (b0 >= 0xC2 && b0 <= 0xDF) n = 2;
  else if (b0 == 0xE0) { n = 3; lo = 0xA0; }
  else if (b0 >= 0xE1 && b0 <= 0xEC) n = 3;
  else if (b0 == 0xED) { n = 3; hi = 0x9F; }
  else if (b0 >= 0xEE && b0 <= 0xEF) n = 3;
  else if (b0 == 0xF0) { n = 4; lo = 0x90; }
  else if (b0 >= 0xF1 && b0 <= 0xF3) n = 4;
  else if (b0 == 0xF4) { n = 4; hi = 0x8F; }
  else return 0;
  for (size_t k = 1; k < n; ++k) {
    if (i + k >= s.size()) return 0;
    const auto b = static_cast<unsigned char>(s[i + k]);
    if (b < (k == 1 ? lo : 0x80) || b > (k == 1 ? hi : 0xBF)) return 0;
    bad = k + 1;
  }
  return n;
}

// Unicode White_Space (what Rust's regex `\s` matches), as PCRE2 class members.
constexpr const char* kWhiteSpaceMembers =
    "\\x{9}-\\x{D}\\x{20}\\x{85}\\x{A0}\\x{1680}\\x{2000}-\\x{200A}\\x{2028}\\x{2029}\\x{202F}"
    "\\x{205F}\\x{3000}";

}  // namespace

bool repair_utf8(std::string_view in, std::string& out) {
  size_t i = 0, bad = 0;
  while (i < in.size()) {
    size_t n = utf8_seq_len(in, i, bad);
    if (n == 0) break;
    i += n;
  }
  if (i == in.size()) return false;
  out.assign(in.substr(0, i));
  while (i < in.size()) {
    size_t n = utf8_seq_len(in, i, bad);
    if (n == 0) {
      out += "\xEF\xBF\xBD";  // one U+FFFD per maximal subpart, as Python
      i += bad;
    } else {
      out.append(in.substr(i, n));
      i += n;
    }
  }
  return true;
}

std::string nfc(std::string_view s) {
  bool ascii = true;
  for (char c : s) ascii &= static_cast<unsigned char>(c) < 0x80;
  if (ascii) return std::string(s);
  utf8proc_uint8_t* dst = nullptr;
  const utf8proc_ssize_t n = utf8proc_map(reinterpret_cast<const utf8proc_uint8_t*>(s.data()),
                                          static_cast<utf8proc_ssize_t>(s.size()), &dst,
                                          static_cast<utf8proc_option_t>(UTF8PROC_STABLE | UTF8PROC_COMPOSE));
  if (n < 0) return std::string(s);  // cannot happen for valid UTF-8; keep the text
  std::string out(reinterpret_cast<const char*>(dst), static_cast<size_t>(n));
  std::free(dst);
  return out;
}

const std::array<char32_t, 256>& byte_to_unicode() {
  static const std::array<char32_t, 256> kTable = [] {
    std::array<char32_t, 256> t{};
    std::array<bool, 256> printable{};
    for (int b = '!'; b <= '~'; ++b) printable[static_cast<size_t>(b)] = true;
    for (int b = 0xA1; b <= 0xAC; ++b) printable[static_cast<size_t>(b)] = true;
    for (int b = 0xAE; b <= 0xFF; ++b) printable[static_cast<size_t>(b)] = true;
    char32_t next = 256;
    for (size_t b = 0; b < 256; ++b) t[b] = printable[b] ? static_cast<char32_t>(b) : next++;
    return t;
  }();
  return kTable;
}

int byte_of_unicode(char32_t cp) {
  static const std::array<int, 512> kInverse = [] {
    std::array<int, 512> inv{};
    inv.fill(-1);
    const auto& t = byte_to_unicode();
    for (size_t b = 0; b < 256; ++b) inv[t[b]] = static_cast<int>(b);
    return inv;
  }();
  return cp < 512 ? kInverse[cp] : -1;
}

bool byte_level_decode(std::string_view token, std::string& bytes) {
  bytes.clear();
  size_t i = 0;
  while (i < token.size()) {
    utf8proc_int32_t cp = 0;
    const utf8proc_ssize_t n = utf8proc_iterate(reinterpret_cast<const utf8proc_uint8_t*>(token.data() + i),
                                                static_cast<utf8proc_ssize_t>(token.size() - i), &cp);
    if (n <= 0) return false;
    const int b = byte_of_unicode(static_cast<char32_t>(cp));
    if (b < 0) return false;
    bytes.push_back(static_cast<char>(b));
    i += static_cast<size_t>(n);
  }
  return true;
}

std::string rewrite_whitespace_classes(std::string_view p) {
  std::string out;
  bool in_class = false;
  for (size_t i = 0; i < p.size(); ++i) {
    const char c = p[i];
    if (c == '\\' && i + 1 < p.size()) {
      const char e = p[i + 1];
      ++i;
      if (e == 's') {
        out += in_class ? std::string(kWhiteSpaceMembers) : fmt::format("[{}]", kWhiteSpaceMembers);
      } else if (e == 'S' && !in_class) {
        out += fmt::format("[^{}]", kWhiteSpaceMembers);
      } else {
        out += c;
        out += e;
      }
      continue;
    }
    if (c == '[' && !in_class) {
      in_class = true;
      out += c;
      // A ']' (or '^]') right after the opening bracket is a literal.
      if (i + 1 < p.size() && p[i + 1] == '^') out += p[++i];
      if (i + 1 < p.size() && p[i + 1] == ']') out += p[++i];
      continue;
    }
    if (c == ']' && in_class) in_class = false;
    out += c;
  }
  return out;
}

Result<std::shared_ptr<SplitRegex>> SplitRegex::compile(const std::string& hf_pattern) {
  const std::string pattern = rewrite_whitespace_classes(hf_pattern);
  int err = 0;
  PCRE2_SIZE off = 0;
  pcre2_code* code = pcre2_compile(reinterpret_cast<PCRE2_SPTR>(pattern.data()), pattern.size(),
                                   PCRE2_UTF | PCRE2_UCP | PCRE2_NO_UTF_CHECK, &err, &off, nullptr);
  if (!code) {
    PCRE2_UCHAR msg[256];
    pcre2_get_error_message(err, msg, sizeof msg);
    return Status::invalid(fmt::format("split regex at offset {}: {}", off, reinterpret_cast<char*>(msg)));
  }
  pcre2_jit_compile(code, PCRE2_JIT_COMPLETE);  // falls back to the interpreter when unavailable
  std::shared_ptr<SplitRegex> r(new SplitRegex());
  r->code_ = code;
  return r;
}

SplitRegex::~SplitRegex() { pcre2_code_free(static_cast<pcre2_code*>(code_)); }

std::vector<std::string_view> SplitRegex::split(std::string_view text) const {
  std::vector<std::string_view> pieces;
  auto* code = static_cast<pcre2_code*>(code_);
  pcre2_match_data* md = pcre2_match_data_create_from_pattern(code, nullptr);
  const auto* subject = reinterpret_cast<PCRE2_SPTR>(text.data());
  size_t pos = 0;
  while (pos < text.size()) {
    const int rc = pcre2_match(code, subject, text.size(), pos, PCRE2_NO_UTF_CHECK, md, nullptr);
    if (rc < 0) break;
    const PCRE2_SIZE* ov = pcre2_get_ovector_pointer(md);
    size_t b = ov[0], e = ov[1];
    if (e == b) {  // empty match: step one character, leaving it to the gap
      size_t next = b + 1;
      while (next < text.size() && (static_cast<unsigned char>(text[next]) & 0xC0) == 0x80) ++next;
      if (b > pos) pieces.push_back(text.substr(pos, b - pos));
      pieces.push_back(text.substr(b, next - b));
      pos = next;
      continue;
    }
    if (b > pos) pieces.push_back(text.substr(pos, b - pos));
    pieces.push_back(text.substr(b, e - b));
    pos = e;
  }
  if (pos < text.size()) pieces.push_back(text.substr(pos));
  pcre2_match_data_free(md);
  return pieces;
}

}  // namespace peakcast::features::bpe
