// peakcastd's command line: every option declared once, with its default, bounds and help, in
// --help order, into DaemonArgs.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

#include <CLI/CLI.hpp>

#include "peakcast/serve/http_framing.h"
#include "peakcast/serve/sizing_state.h"
#include "peakcast/serve/slurm_sync.h"
#include "peakcast/serve/store.h"
#include "peakcast/sizing/workload_sizer.h"

namespace peakcast::peakcastd {

// Everything the command line sets.
struct DaemonArgs {
  std::string model_dir, db_path, socket_path = "/run/peakcast/peakcastd.sock", listen;
  bool allow_remote = false, store_scripts = false, verbose = false, sync_once_only = false;
  std::string socket_mode_text = "0660", socket_group, admin_socket = "default";
  size_t max_script_bytes = 1 << 20;
  int threads = 0;
  double sync_interval = 0;
  int64_t late_tolerance_s = 7 * 24 * 3600;
  int64_t history_days = 0;
  int64_t sizing_days = 0;
  size_t sizing_memory_mib = sizing::WorkloadSizerOptions{}.max_bytes >> 20;
  serve::SyncOptions sync;
  uint64_t gpu_mem_bytes = 0;
  serve::HttpLimits http_limits;
  serve::SqliteOptions so;
  std::string sizing_config;
  serve::SizingOptions sizing;
};

// The options in --help order (the HTTP limits and the WAL bound between sync and --sync-once).
void add_options(CLI::App& app, DaemonArgs& a);

}  // namespace peakcast::peakcastd
