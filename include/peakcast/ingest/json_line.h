// One line of JSON parsed for a reader: on failure the reason nlohmann's parser gives, cleaned
// for a person, so "FILE:LINE: json: ..." says why ("invalid string: ill-formed UTF-8 byte
// (column 11)", "number overflow parsing '1e400'"), not only that the line is not JSON.
#pragma once

#include <string>
#include <string_view>

#include <nlohmann/json.hpp>

#include "peakcast/core/status.h"

namespace peakcast::ingest {

// The value on the line, or Status::invalid("json: <reason>").
Result<nlohmann::json> parse_json_line(std::string_view line);

// nlohmann's exception text without its "[json.exception...]" tag, the "parse error at line 1,
// column N:" preamble (the column is kept at the end) and the "last read: '...'" echo of the
// input (raw bytes, perhaps part of a secret); bytes that are not printable ASCII become '?'.
std::string json_error_reason(std::string_view what);

}  // namespace peakcast::ingest
