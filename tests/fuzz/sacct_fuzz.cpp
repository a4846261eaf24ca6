// libFuzzer target for the sacct -P reader: no input may crash it, hang it or break the invariants
// in fuzz_check.h. The first byte picks between header mode and `-n` mode with --columns, so
// both paths are explored.
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "fuzz/fuzz_check.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace peakcast::ingest;
  std::string_view text(reinterpret_cast<const char*>(data), size);
  const bool with_columns = !text.empty() && (static_cast<unsigned char>(text[0]) & 1) != 0;
  if (!text.empty()) text.remove_prefix(1);
  auto parse = [with_columns](std::string_view t, const std::string& name, const ReadOptions& o,
                              Trace& out) {
    if (!with_columns) return parse_sacct(t, name, o, out);
    ReadOptions c = o;
    c.columns = {"JobID", "JobName", "State", "Submit", "Start", "End", "ElapsedRaw", "Timelimit",
                 "NCPUS", "NNodes", "ReqMem", "AllocTRES", "MaxRSS", "TRESUsageInTot"};
    return parse_sacct(t, name, c, out);
  };
  peakcast::ingest::fuzz::check_parser(parse, text, "fuzz.sacct");
  (void)detect_format(text);
  return 0;
}
