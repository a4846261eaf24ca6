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

// Whether `s` is one or more ASCII digits (a count or an epoch written bare).
bool all_digits(std::string_view s);

// ASCII lower case (field names, units, file names; not locale-aware).
std::string lower(std::string_view s);

// Writes a regular file atomically: temp file in the same folder, fsync, rename. A symbolic link
// is followed (its target written, the link kept); what is not a regular file (/dev/stdout,
// /dev/null, a FIFO) is written to as it is, never replaced by a file. Errors name `path`.
Status write_file_atomic(const std::string& path, std::string_view data);

}  // namespace peakcast
