// The completions peakcastd stored in its database (--db FILE), for `train --db` and
// `report --db`: opened read-only (safe while the daemon runs), with the scripts the daemon kept
// (--store-scripts). A missing file is an input error, not a new empty database.
//
// The store keeps each completion's labels clipped at the daemon's util_cap; they are recomputed
// here at `util_cap` (the caller's --util-cap) from what it keeps (peaks, requests, state,
// ran_mem_bytes), so a --db run is labelled as a trace read at that cap would be.
#pragma once

#include <string>
#include <vector>

#include "peakcast/core/job.h"
#include "peakcast/core/status.h"

namespace peakcast::app {

Result<std::vector<Job>> load_db_jobs(const std::string& path, double util_cap);

}  // namespace peakcast::app
