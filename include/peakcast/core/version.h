// The project's version (CMakeLists.txt's project(... VERSION ...)), the one source for every
// program's --version. A target that includes this header is given PEAKCAST_VERSION by
// target_compile_definitions(... PEAKCAST_VERSION="${PROJECT_VERSION}"), so that a release
// changes it in one place.
#pragma once

#include <string_view>

#ifndef PEAKCAST_VERSION
#error "PEAKCAST_VERSION is not defined: add target_compile_definitions(<target> PRIVATE PEAKCAST_VERSION=\"${PROJECT_VERSION}\")"
#endif

namespace peakcast {

inline constexpr std::string_view kVersion = PEAKCAST_VERSION;

}  // namespace peakcast
