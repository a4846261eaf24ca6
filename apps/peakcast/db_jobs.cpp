#include "db_jobs.h"

#include <filesystem>
#include <fstream>
#include <iostream>
#include <string_view>

#include <fmt/format.h>

#include "peakcast/serve/store.h"

namespace peakcast::app {

Result<std::vector<Job>> load_db_jobs(const std::string& path, double util_cap) {
  std::error_code ec;
  if (!std::filesystem::is_regular_file(path, ec)) {
    return Status::invalid(path + ": no such database (peakcastd --db FILE writes it)");
  }
  // Opened by SQLite, any other file (a trace given by mistake) said "file is not a database" as
  // the system's failure, and an empty one had the daemon's schema written into it.
  char head[16] = {};
  std::ifstream(path, std::ios::binary).read(head, sizeof head);
  if (std::string_view(head, sizeof head) != std::string_view("SQLite format 3\0", 16)) {
    return Status::invalid(path + ": not a peakcastd database (no SQLite header; peakcastd --db FILE writes one)");
  }
  serve::SqliteOptions so;
  so.query_only = true;
  auto store = serve::open_sqlite_store(path, so);
  if (!store) return store.status();
  std::vector<Job> jobs;
  size_t scripts = 0;
  Status s = (*store)->for_each_with_scripts([&](Job&& j) {
    if (j.script) ++scripts;
    compute_labels(j, util_cap);
    jobs.push_back(std::move(j));
  });
  if (!s) return s.with_context(path);
  std::cerr << fmt::format("{}: {} completions, {} with their script{}\n", path, jobs.size(),
                           scripts,
                           scripts == 0 ? " (the daemon ran without --store-scripts: the code "
                                          "model reads identity text)"
                                        : "");
  return jobs;
}

}  // namespace peakcast::app
