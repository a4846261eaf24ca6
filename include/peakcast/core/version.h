// The one version string of peakcast and peakcastd (their --version): the project version of the
// top-level CMakeLists.txt (project(peakcast VERSION ...)), which apps/CMakeLists.txt passes to
// both programs as the compile definition PEAKCAST_VERSION, so that a release changes it in one
// place. Only the programs get the definition: no library rebuilds when it changes.
#pragma once

#include <string_view>

#ifndef PEAKCAST_VERSION
#error "PEAKCAST_VERSION is not defined: apps/CMakeLists.txt sets it from the project version"
#endif

namespace peakcast {

inline constexpr std::string_view kVersion = PEAKCAST_VERSION;

}  // namespace peakcast
