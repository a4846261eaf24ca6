// Small pieces shared by training and prediction: boosters-or-constants, the trust region, the
// conformal quantile, and the one door from the code model's outputs to gate/fusion training.
#include <algorithm>
#include <cmath>
#include <limits>
#include <stdexcept>

#include "cascade/cascade_internal.h"

namespace peakcast::cascade {

double Component::predict(std::span<const float> row) const {
  if (!booster) return constant;
  return static_cast<double>(booster->predict_row(row));
}

std::vector<double> Component::predict_rows(const std::vector<float>& data, size_t rows,
                                            size_t cols) const {
  std::vector<double> out(rows, constant);
  if (!booster || rows == 0) return out;
  if (data.size() != rows * cols) throw std::logic_error("Component::predict_rows: shape mismatch");
  std::vector<float> buf(rows);
  booster->predict_dense(data, rows, buf);
  for (size_t i = 0; i < rows; ++i) out[i] = static_cast<double>(buf[i]);
  return out;
}

Component fit_component(const models::GbdtParams& params, const std::vector<float>& x, size_t cols,
                        const std::vector<float>& y, const std::vector<float>* weights,
                        size_t min_examples, double fallback_constant) {
  Component c;
  c.n = y.size();
  c.constant = fallback_constant;
  if (c.n < min_examples) return c;
  if (params.objective == models::GbdtObjective::kBinaryLogistic) {
    const auto pos = std::count_if(y.begin(), y.end(), [](float v) { return v > 0.5f; });
    if (pos == 0 || static_cast<size_t>(pos) == y.size()) return c;  // one class: the constant
  }
  models::DMatrix dm = models::DMatrix::from_dense(x, y.size(), cols);
  dm.set_labels(y);
  if (weights != nullptr) dm.set_weights(*weights);
  c.booster = models::Booster::train(params, dm);
  return c;
}

std::string_view route_class_name(int c) {
  switch (c) {
    case kClassBypass: return "bypass";
    case kClassEncoderExact: return "encoder_exact";
    case kClassEncoderUser: return "encoder_user";
    case kClassNoHistory: return "no_history";
  }
  return "?";
}

double trust_clip(double f, double h, double mad, double coef, double floor) {
  const double d = std::max(floor, coef * mad);
  return std::clamp(f, h - d, h + d);
}

double conformal_quantile(std::vector<double> r, double coverage, size_t min_n) {
  if (r.size() < min_n || r.empty()) return std::numeric_limits<double>::quiet_NaN();
  const double n = static_cast<double>(r.size());
  const auto rank = static_cast<size_t>(std::ceil((n + 1.0) * coverage));  // 1-based
  if (rank > r.size()) return std::numeric_limits<double>::infinity();
  std::nth_element(r.begin(), r.begin() + static_cast<std::ptrdiff_t>(rank - 1), r.end());
  return r[rank - 1];
}

std::vector<models::code::CodePrediction> out_of_sample_q(const models::code::CodeModel& code,
                                                          const CodeModelSight& sight,
                                                          const TrainingInput& input,
                                                          const std::vector<size_t>& positions) {
  std::vector<const Job*> jobs;
  jobs.reserve(positions.size());
  for (size_t p : positions) {
    if (sight.saw(p)) {
      throw std::logic_error("cascade: leakage: job " + input.jobs.at(p).job->job_id +
                             " is in the code model's training or early-stopping set; its output "
                             "cannot train the gate or fusion");
    }
    jobs.push_back(input.jobs.at(p).job);
  }
  return code.predict_batch(jobs);
}

}  // namespace peakcast::cascade
