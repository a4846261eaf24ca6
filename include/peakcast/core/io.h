// File reading with transparent gzip (by magic bytes, not by name) and a line splitter that
// keeps line numbers for error messages.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "peakcast/core/status.h"

namespace peakcast {

// Whole file, decompressed when it starts with the gzip magic. "-" reads standard input.
Result<std::string> read_file(const std::string& path);

// Splits text into lines (handles \n and \r\n). Views point into `text`.
std::vector<std::string_view> split_lines(std::string_view text);

// Splits on a single-character delimiter, keeping empty fields.
std::vector<std::string_view> split(std::string_view s, char delim);

std::string_view trim(std::string_view s);

// ASCII lower case (field names, units, file names; not locale-aware).
std::string lower(std::string_view s);

// Writes atomically: temp file in the same folder, fsync, rename.
Status write_file_atomic(const std::string& path, std::string_view data);

}  // namespace peakcast
