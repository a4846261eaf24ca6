// The completions peakcastd stored in its database (--db FILE), for `train --db` and
// `report --db`: opened read-only (safe while the daemon runs), with the scripts the daemon kept
// (--store-scripts). A missing file is an input error, not a new empty database.
#pragma once

#include <string>
#include <vector>

#include "peakcast/core/job.h"
#include "peakcast/core/status.h"

namespace peakcast::app {

Result<std::vector<Job>> load_db_jobs(const std::string& path);

}  // namespace peakcast::app
