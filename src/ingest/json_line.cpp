// parse_json_line(): nlohmann's parse errors made readable (json_line.h).
#include "peakcast/ingest/json_line.h"

#include <string>

#include "peakcast/core/json_error.h"

namespace peakcast::ingest {

Result<nlohmann::json> parse_json_line(std::string_view line) {
  try {
    return nlohmann::json::parse(line);
  } catch (const nlohmann::json::parse_error& e) {
    // One line, so the byte offset is the column.
    return Status::invalid("json: " + json_error_reason(e.what(), JsonQuote::kNumber) + " (column " +
                           std::to_string(e.byte) + ")");
  } catch (const nlohmann::json::exception& e) {
    return Status::invalid("json: " + json_error_reason(e.what(), JsonQuote::kNumber));
  }
}

}  // namespace peakcast::ingest
