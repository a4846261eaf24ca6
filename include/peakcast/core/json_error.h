// nlohmann's parse errors made readable, shared by the trace readers (`t.jsonl:3: json: ...`) and
// peakcastd (a refused body's reason, which the Slurm hook writes to slurmctld's log).
#pragma once

#include <string>
#include <string_view>

namespace peakcast {

// How much of the input a reason may quote.
enum class JsonQuote {
  // A number too large for a double is named ("number overflow parsing '1e400'"): for a person
  // reading their own file, who is helped to find it.
  kNumber,
  // No byte of the input, not even which control character or number: for messages that reach
  // other people's logs (a 600-digit number can be a key written in decimal).
  kNothing,
};

// The reason in nlohmann's exception text (e.what()) without its "[json.exception...]" tag, the
// "parse error at line L, column C:" preamble (callers say where, as they count) and the
// "last read: '...'" echo of the input (raw bytes, perhaps part of a secret): "invalid string:
// ill-formed UTF-8 byte", "unexpected end of input; expected string literal". Only nlohmann's
// fixed phrases are kept; a text of another shape gives "not valid JSON" rather than be passed
// on. Bytes that are not printable ASCII become '?'.
std::string json_error_reason(std::string_view what, JsonQuote quote);

}  // namespace peakcast
