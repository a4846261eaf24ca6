// libFuzzer target for peakcastd's request parser (the body of /v1/predict and /v1/complete).
// Links peakcast::serve (parse_job_body lives there). Any crash, hang or sanitizer report is a bug;
// every input must come back as a Job or an ApiError with a 4xx status.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string_view>
#include <variant>

#include "peakcast/serve/request.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace peakcast::serve;
  RequestLimits limits;
  limits.max_script_bytes = 4096;
  const std::string_view body(reinterpret_cast<const char*>(data), size);
  for (BodyKind kind : {BodyKind::kPredict, BodyKind::kComplete}) {
    ParsedJob r = parse_job_body(body, kind, limits);
    if (const auto* e = std::get_if<ApiError>(&r)) {
      const int status = http_status(e->kind);
      if (status < 400 || status >= 500) std::abort();  // bad input must be the client's error
    }
  }
  return 0;
}
