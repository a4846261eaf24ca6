#include <mutex>

#include "models/gbdt/xgb_check.h"
#include "peakcast/core/log.h"

namespace peakcast::models {

namespace detail {
void XgbHandleFree::operator()(void* h) const noexcept {
  if (h != nullptr) XGDMatrixFree(h);
}
void XgbBoosterFree::operator()(void* h) const noexcept {
  if (h != nullptr) XGBoosterFree(h);
}

std::string last_xgb_error() {
  std::string m = XGBGetLastError();
  if (auto st = m.find("\nStack trace:"); st != std::string::npos) m.resize(st);
  return m;
}

namespace {
void forward_xgb_log(const char* msg) { log(LogLevel::kDebug, std::string("xgboost: ") + msg); }
}  // namespace

void install_xgb_log_sink() {
  static std::once_flag once;
  std::call_once(once, [] {
    XGB_CHECK(XGBRegisterLogCallback(&forward_xgb_log));
    XGB_CHECK(XGBSetGlobalConfig(R"({"verbosity": 1})"));  // warnings and up, into our sink
  });
}
}  // namespace detail

void CsrMatrix::add_row(std::span<const uint32_t> idx, std::span<const float> val) {
  if (idx.size() != val.size()) throw std::invalid_argument("CsrMatrix::add_row: size mismatch");
  for (uint32_t i : idx) {
    if (i >= cols) throw std::invalid_argument("CsrMatrix::add_row: index >= cols");
  }
  indices.insert(indices.end(), idx.begin(), idx.end());
  values.insert(values.end(), val.begin(), val.end());
  indptr.push_back(indices.size());
}

DMatrix DMatrix::from_dense(std::span<const float> data, size_t rows, size_t cols, float missing) {
  if (data.size() != rows * cols) {
    throw std::invalid_argument("DMatrix::from_dense: data has " + std::to_string(data.size()) +
                                " cells, expected rows*cols = " + std::to_string(rows * cols));
  }
  detail::install_xgb_log_sink();
  DMatrixHandle h = nullptr;
  XGB_CHECK(XGDMatrixCreateFromMat(data.data(), rows, cols, missing, &h));
  return DMatrix(h);
}

DMatrix DMatrix::from_csr(const CsrMatrix& m) {
  if (m.indptr.empty() || m.indptr.back() != m.indices.size() || m.indices.size() != m.values.size()) {
    throw std::invalid_argument("DMatrix::from_csr: inconsistent indptr/indices/values");
  }
  detail::install_xgb_log_sink();
  DMatrixHandle h = nullptr;
  XGB_CHECK(XGDMatrixCreateFromCSREx(m.indptr.data(), m.indices.data(), m.values.data(),
                                     m.indptr.size(), m.values.size(), m.cols, &h));
  return DMatrix(h);
}

void DMatrix::set_labels(std::span<const float> labels) {
  if (labels.size() != rows()) throw std::invalid_argument("DMatrix::set_labels: size != rows");
  XGB_CHECK(XGDMatrixSetFloatInfo(h_.get(), "label", labels.data(), labels.size()));
}

void DMatrix::set_weights(std::span<const float> weights) {
  if (weights.size() != rows()) throw std::invalid_argument("DMatrix::set_weights: size != rows");
  XGB_CHECK(XGDMatrixSetFloatInfo(h_.get(), "weight", weights.data(), weights.size()));
}

size_t DMatrix::rows() const {
  bst_ulong n = 0;
  XGB_CHECK(XGDMatrixNumRow(h_.get(), &n));
  return n;
}

size_t DMatrix::cols() const {
  bst_ulong n = 0;
  XGB_CHECK(XGDMatrixNumCol(h_.get(), &n));
  return n;
}

}  // namespace peakcast::models
