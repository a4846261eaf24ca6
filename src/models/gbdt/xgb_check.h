// XGB_CHECK(call): a non-zero XGBoost C-API return becomes an XgbError carrying the call and
// XGBGetLastError()'s message. Private to src/models/gbdt.
#pragma once

#include <xgboost/c_api.h>

#include <string>

#include "peakcast/models/gbdt.h"

#define XGB_CHECK(call)                                                                  \
  do {                                                                                   \
    if ((call) != 0) {                                                                   \
      throw ::peakcast::models::XgbError(std::string("XGBoost: ") + #call + ": " +       \
                                         ::peakcast::models::detail::last_xgb_error()); \
    }                                                                                    \
  } while (0)

namespace peakcast::models::detail {
// XGBGetLastError() without the native stack trace XGBoost appends.
std::string last_xgb_error();
// Routes XGBoost's own log lines to peakcast::log instead of stderr (once per process).
void install_xgb_log_sink();
}  // namespace peakcast::models::detail
