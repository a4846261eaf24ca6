#include <charconv>
#include <cmath>

#include "features/tokenizer_internal.h"

namespace peakcast::features::detail {

void TokenSink::add(std::string token) {
  if (token.empty()) return;
  if (token.size() > kMaxTokenChars) token.resize(kMaxTokenChars);
  out_.push_back(std::move(token));
}

std::string ascii_lower(std::string_view s) {
  std::string out(s);
  for (char& c : out) {
    if (c >= 'A' && c <= 'Z') c = static_cast<char>(c - 'A' + 'a');
  }
  return out;
}

namespace {
bool is_alpha(char c) { return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z'); }
bool is_digit(char c) { return c >= '0' && c <= '9'; }
}  // namespace

bool is_identifier(std::string_view s) {
  if (s.empty() || !(is_alpha(s[0]) || s[0] == '_')) return false;
  for (char c : s) {
    if (!(is_alpha(c) || is_digit(c) || c == '_')) return false;
  }
  return true;
}

std::optional<double> parse_number(std::string_view s) {
  if (s.empty()) return std::nullopt;
  if (s.front() == '+') s.remove_prefix(1);
  if (s.empty() || !(is_digit(s.front()) || s.front() == '-' || s.front() == '.')) return std::nullopt;
  double v = 0;
  auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  if (ec != std::errc() || p != s.data() + s.size() || !std::isfinite(v)) return std::nullopt;
  return v;
}

std::optional<double> parse_size_bytes(std::string_view s, double bare_unit) {
  size_t i = 0;
  while (i < s.size() && (is_digit(s[i]) || s[i] == '.')) ++i;
  if (i == 0) return std::nullopt;
  auto num = parse_number(s.substr(0, i));
  if (!num) return std::nullopt;
  std::string unit = ascii_lower(s.substr(i));
  if (unit.empty()) return *num * bare_unit;
  static constexpr std::string_view kLetters = "bkmgtp";
  size_t pow = kLetters.find(unit[0]);
  if (pow == std::string_view::npos) return std::nullopt;
  std::string_view rest = std::string_view(unit).substr(1);
  if (pow == 0) {
    if (!rest.empty()) return std::nullopt;
  } else if (!(rest.empty() || rest == "b" || rest == "i" || rest == "ib" || rest == "w")) {
    return std::nullopt;  // "w" (words) appears in old PBS requests; treated as bytes-ish
  }
  return *num * std::pow(1024.0, static_cast<double>(pow));
}

std::string log2_bin(double x) {
  if (x == 0 || !std::isfinite(x)) return x == 0 ? "zero" : "inf";
  double a = std::fabs(x);
  double b = std::floor(std::log2(a));
  if (b < -64) b = -64;
  if (b > 64) b = 64;
  std::string out = x < 0 ? "neg" : "";
  out += std::to_string(static_cast<int>(b));
  return out;
}

std::optional<double> parse_duration_s(std::string_view s, double bare_unit_s, bool hh_mm) {
  if (s.empty()) return std::nullopt;
  double days = 0;
  if (auto dash = s.find('-'); dash != std::string_view::npos && dash > 0) {
    auto d = parse_number(s.substr(0, dash));
    if (!d || *d < 0) return std::nullopt;
    days = *d;
    s = s.substr(dash + 1);
    // D-HH[:MM[:SS]]: the first field after the dash is hours.
    double f[3] = {0, 0, 0};
    for (int k = 0; k < 3 && !s.empty(); ++k) {
      size_t c = s.find(':');
      auto v = parse_number(s.substr(0, c));
      if (!v || *v < 0) return std::nullopt;
      f[k] = *v;
      s = c == std::string_view::npos ? std::string_view{} : s.substr(c + 1);
    }
    return ((days * 24 + f[0]) * 60 + f[1]) * 60 + f[2];
  }
  std::vector<double> f;
  while (true) {
    size_t c = s.find(':');
    auto v = parse_number(s.substr(0, c));
    if (!v || *v < 0) break;
    f.push_back(*v);
    if (c == std::string_view::npos) {
      s = {};
      break;
    }
    s = s.substr(c + 1);
  }
  if (f.empty()) {
    // Flux-style suffix: 30s, 10m, 2h, 1d.
    if (s.size() >= 2) {
      auto v = parse_number(s.substr(0, s.size() - 1));
      char u = s.back();
      if (v && *v >= 0) {
        if (u == 's') return *v;
        if (u == 'm') return *v * 60;
        if (u == 'h') return *v * 3600;
        if (u == 'd') return *v * 86400;
      }
    }
    return std::nullopt;
  }
  if (!s.empty() && f.size() < 3) return std::nullopt;  // trailing garbage
  switch (f.size()) {
    case 1: return f[0] * bare_unit_s;
    case 2: return hh_mm ? (f[0] * 60 + f[1]) * 60 : f[0] * 60 + f[1];
    case 3: return (f[0] * 60 + f[1]) * 60 + f[2];
    default: return std::nullopt;
  }
}

std::string hours_bin(double seconds) { return "hbin:" + log2_bin(seconds / 3600.0); }

std::string text_value(std::string_view v) {
  std::string out = ascii_lower(v);
  if (out.size() > kMaxTextValueChars) out.resize(kMaxTextValueChars);
  return out;
}

void emit_var_refs(std::string_view word, TokenSink& sink) {
  for (size_t i = 0; i + 1 < word.size(); ++i) {
    if (word[i] != '$') continue;
    size_t j = i + 1;
    if (word[j] == '{') ++j;
    size_t start = j;
    while (j < word.size() && (is_alpha(word[j]) || is_digit(word[j]) || word[j] == '_')) ++j;
    if (j > start) sink.add("var:", word.substr(start, j - start));
    i = j - 1;
  }
}

void emit_word_pieces(std::string_view word, TokenSink& sink) {
  bool pathlike = word.find('/') != std::string_view::npos || word.find('.') != std::string_view::npos;
  std::string_view prefix = pathlike ? "path:" : "w:";
  std::string piece;
  auto flush = [&] {
    bool all_digits = !piece.empty();
    for (char c : piece) all_digits = all_digits && is_digit(c);
    if (!piece.empty() && !all_digits) sink.add(prefix, ascii_lower(piece));
    piece.clear();
  };
  for (size_t i = 0; i < word.size(); ++i) {
    char c = word[i];
    if (c == '$') {  // variable reference: skipped here, emitted by emit_var_refs
      flush();
      size_t j = i + 1;
      bool brace = j < word.size() && word[j] == '{';
      if (brace) {
        while (j < word.size() && word[j] != '}') ++j;
      } else {
        while (j < word.size() && (is_alpha(word[j]) || is_digit(word[j]) || word[j] == '_')) ++j;
        --j;
      }
      i = j;
      continue;
    }
    if (is_alpha(c) || is_digit(c) || static_cast<unsigned char>(c) >= 0x80) {
      piece.push_back(c);
    } else {
      flush();
    }
  }
  flush();
}

}  // namespace peakcast::features::detail
