// One line of JSON parsed for a reader: on failure the reason nlohmann's parser gives, cleaned
// for a person (core/json_error.h), so "FILE:LINE: json: ..." says why ("invalid string:
// ill-formed UTF-8 byte (column 11)", "number overflow parsing '1e400'"), not only that the line
// is not JSON.
#pragma once

#include <string_view>

#include <nlohmann/json.hpp>

#include "peakcast/core/status.h"

namespace peakcast::ingest {

// The value on the line, or Status::invalid("json: <reason>[ (column N)]").
Result<nlohmann::json> parse_json_line(std::string_view line);

}  // namespace peakcast::ingest
