// libFuzzer target for the jsonl reader: no input may crash it, hang it or break the invariants
// in fuzz_check.h.
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "fuzz/fuzz_check.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  peakcast::ingest::fuzz::check_parser(peakcast::ingest::parse_jsonl, text, "fuzz.jsonl");
  (void)peakcast::ingest::detect_format(text);
  return 0;
}
