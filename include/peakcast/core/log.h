// The library never prints: it reports through a sink the caller owns. The default sink drops
// everything; apps install one that writes to stderr (or spdlog).
#pragma once

#include <functional>
#include <string_view>

namespace peakcast {

enum class LogLevel { kDebug, kInfo, kWarn, kError };

using LogSink = std::function<void(LogLevel, std::string_view)>;

// Process-wide sink; set once at start-up by the program (not thread-safe to change while
// other threads log). Passing an empty function restores the silent default.
void set_log_sink(LogSink sink);
void log(LogLevel level, std::string_view message);

// Progress for long runs (replays, training): called with done/total; may be empty.
using ProgressFn = std::function<void(std::string_view stage, size_t done, size_t total)>;

}  // namespace peakcast
