// json_error_reason(): nlohmann's parse errors without the input they echo (json_error.h).
#include "peakcast/core/json_error.h"

#include <array>

namespace peakcast {
namespace {

// What follows "; expected " in nlohmann's syntax errors (lexer::token_type_name).
constexpr std::array<std::string_view, 16> kTokenNames = {
    "<uninitialized>", "true literal", "false literal", "null literal", "string literal",
    "number literal",  "'['",          "'{'",           "']'",          "'}'",
    "':'",             "','",          "<parse error>", "end of input", "'[', '{', or a literal",
    "unknown token"};

constexpr std::string_view kNotJson = "not valid JSON";

bool is_token_name(std::string_view s) {
  for (std::string_view name : kTokenNames) {
    if (s == name) return true;
  }
  return false;
}

bool is_number_text(std::string_view s) {
  if (s.empty()) return false;
  for (char c : s) {
    if (!((c >= '0' && c <= '9') || c == '-' || c == '+' || c == '.' || c == 'e' || c == 'E')) {
      return false;
    }
  }
  return true;
}

// "syntax error [while parsing CONTEXT ]- MESSAGE", where MESSAGE is "unexpected TOKEN" or the
// lexer's "REASON; last read: 'INPUT'", either followed by "; expected TOKEN". Only INPUT holds
// bytes of the input, and it may itself hold "'; expected " and anything after.
std::string syntax_reason(std::string_view m, JsonQuote quote) {
  const size_t dash = m.find(" - ");
  if (dash == std::string_view::npos) return std::string(kNotJson);
  m.remove_prefix(dash + 3);
  constexpr std::string_view kLastRead = "; last read: '";
  const size_t last = m.find(kLastRead);
  if (last == std::string_view::npos) {
    if (!m.starts_with("unexpected ")) return std::string(kNotJson);
    const size_t semi = m.find("; expected ");
    const std::string_view got = m.substr(11, semi == std::string_view::npos ? m.npos : semi - 11);
    if (!is_token_name(got)) return std::string(kNotJson);
    if (semi != std::string_view::npos && !is_token_name(m.substr(semi + 11))) {
      return "unexpected " + std::string(got);
    }
    return std::string(m);
  }
  std::string out(m.substr(0, last));
  if (quote == JsonQuote::kNothing && out.starts_with("invalid string: control character")) {
    out = "invalid string: a control character must be escaped";
  }
  // "; expected TOKEN" ends the text when nlohmann added it; a match inside INPUT ends there too
  // only if TOKEN is one of nlohmann's names, which quote nothing.
  const std::string_view rest = m.substr(last + kLastRead.size());
  constexpr std::string_view kExpected = "'; expected ";
  const size_t expected = rest.rfind(kExpected);
  if (expected != std::string_view::npos && is_token_name(rest.substr(expected + kExpected.size()))) {
    out += "; expected ";
    out += rest.substr(expected + kExpected.size());
  }
  return out;
}

}  // namespace

std::string json_error_reason(std::string_view what, JsonQuote quote) {
  std::string_view m = what;
  if (m.starts_with("[json.exception.")) {
    const size_t close = m.find("] ");
    if (close == std::string_view::npos) return std::string(kNotJson);
    m.remove_prefix(close + 2);
  }
  if (m.starts_with("parse error")) {  // "parse error at line 1, column 24: ", "parse error: "
    const size_t colon = m.find(": ");
    if (colon == std::string_view::npos) return std::string(kNotJson);
    m.remove_prefix(colon + 2);
  }
  std::string out;
  constexpr std::string_view kOverflow = "number overflow parsing '";
  if (m.starts_with("syntax error ")) {
    out = syntax_reason(m, quote);
  } else if (m.starts_with(kOverflow)) {
    const std::string_view number = m.substr(kOverflow.size(), m.size() - kOverflow.size() - 1);
    out = quote == JsonQuote::kNumber && m.ends_with('\'') && is_number_text(number)
              ? std::string(m)
              : "number overflow: too large for a double";
  } else {
    out = kNotJson;
  }
  for (char& c : out) {
    const auto u = static_cast<unsigned char>(c);
    if (u < 0x20 || u >= 0x7f) c = '?';
  }
  return out;
}

}  // namespace peakcast
