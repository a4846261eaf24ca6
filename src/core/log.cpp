#include "peakcast/core/log.h"

namespace peakcast {
namespace {
LogSink& sink() {
  static LogSink s;
  return s;
}
}  // namespace

void set_log_sink(LogSink s) { sink() = std::move(s); }

void log(LogLevel level, std::string_view message) {
  if (auto& s = sink()) s(level, message);
}

}  // namespace peakcast
