// parse_json_line(): nlohmann's parse errors made readable (json_line.h).
#include "peakcast/ingest/json_line.h"

#include <cctype>

namespace peakcast::ingest {

std::string json_error_reason(std::string_view what) {
  std::string_view m = what;
  if (m.starts_with("[json.exception.")) {
    const size_t close = m.find("] ");
    if (close != std::string_view::npos) m.remove_prefix(close + 2);
  }
  std::string column;
  constexpr std::string_view kAt = "parse error at line ";
  if (m.starts_with(kAt)) {
    const size_t col = m.find(", column ");
    const size_t colon = m.find(": ");
    if (col != std::string_view::npos && colon != std::string_view::npos && col < colon) {
      column = std::string(m.substr(col + 9, colon - col - 9));
      m.remove_prefix(colon + 2);
    }
  } else if (m.starts_with("parse error: ")) {
    m.remove_prefix(13);
  }
  // "syntax error while parsing value - invalid string: ..." -> "invalid string: ..."
  if (m.starts_with("syntax error while parsing ")) {
    const size_t dash = m.find(" - ");
    if (dash != std::string_view::npos) m.remove_prefix(dash + 3);
  }
  std::string out(m);
  const size_t last = out.find("; last read: '");
  if (last != std::string::npos) {
    const size_t expected = out.rfind("'; expected ");
    if (expected != std::string::npos && expected > last) {
      out.erase(last, expected + 1 - last);
    } else {
      out.erase(last);
    }
  }
  for (char& c : out) {
    const auto u = static_cast<unsigned char>(c);
    if (u < 0x20 || u >= 0x7f) c = '?';
  }
  if (!column.empty()) out += " (column " + column + ")";
  return out;
}

Result<nlohmann::json> parse_json_line(std::string_view line) {
  try {
    return nlohmann::json::parse(line);
  } catch (const nlohmann::json::exception& e) {
    return Status::invalid("json: " + json_error_reason(e.what()));
  }
}

}  // namespace peakcast::ingest
