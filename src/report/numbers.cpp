// Numbers as the page shows them to a person (report_internal.h, grouped): thousands separated by
// commas, the same on every machine.
#include <cctype>

#include <fmt/format.h>

#include "report_internal.h"

namespace peakcast::report {

std::string group_thousands(std::string plain) {
  const size_t begin = !plain.empty() && (plain[0] == '-' || plain[0] == '+') ? 1 : 0;
  size_t end = begin;
  while (end < plain.size() && std::isdigit(static_cast<unsigned char>(plain[end]))) ++end;
  for (size_t at = end; at > begin + 3; at -= 3) plain.insert(at - 3, 1, ',');
  return plain;
}

std::string grouped(double v, int decimals) {
  return group_thousands(fmt::format("{:.{}f}", v, decimals));
}

std::string number_cell(const std::string& text, double sort_value) {
  size_t lead = 0;
  while (lead < text.size() && std::string_view("+-0123456789.,").find(text[lead]) != std::string_view::npos) ++lead;
  if (text.substr(0, lead).find(',') == std::string::npos) return "<td>" + text + "</td>";
  return fmt::format("<td data-sort=\"{}\">{}</td>", sort_value, text);
}

}  // namespace peakcast::report
