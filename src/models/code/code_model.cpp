// The fusion network, its training loop, prediction and the model directory.
#include "peakcast/models/code/code_model.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <filesystem>
#include <iterator>
#include <limits>
#include <numeric>
#include <random>
#include <sstream>
#include <stdexcept>

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <nlohmann/json.hpp>
#include <torch/nn.h>
#include <torch/optim/adamw.h>
#include <torch/serialize.h>
#include <torch/utils.h>

#include "peakcast/core/hash.h"
#include "peakcast/core/io.h"
#include "peakcast/core/json_count.h"
#include "peakcast/features/request.h"
#include "peakcast/models/code/encoder.h"

namespace peakcast::models::code {
namespace {

constexpr int kReq = features::kNumRequestFeatures;
constexpr size_t kPredictChunk = 512;
constexpr const char* kFormatName = "peakcast-code-model";

// script vector [B, D] ++ user embedding [B, U] ++ request [B, 8] -> fused [B, F] -> heads.
class FusionNet : public torch::nn::Module {
 public:
  FusionNet(std::shared_ptr<ScriptEncoder> encoder, int64_t user_rows, const CodeModelConfig& cfg)
      : cap_(cfg.util_cap) {
    encoder_ = register_module("encoder", std::move(encoder));
    users_ = register_module("users", torch::nn::Embedding(user_rows, cfg.user_dim));
    const int64_t in = encoder_->output_dim() + cfg.user_dim + kReq;
    fuse_ = register_module("fuse", torch::nn::Sequential(
        torch::nn::Linear(in, cfg.fused_dim), torch::nn::ReLU(), torch::nn::Dropout(cfg.dropout),
        torch::nn::Linear(cfg.fused_dim, cfg.fused_dim), torch::nn::ReLU(),
        torch::nn::Dropout(cfg.dropout)));
    mem_head_ = register_module("mem_head", torch::nn::Linear(cfg.fused_dim, 1));
    vram_head_ = register_module("vram_head", torch::nn::Linear(cfg.fused_dim, 1));
    // Small user vectors: an unseen user (row 0) and a seen one start on the same footing.
    torch::NoGradGuard no_grad;
    users_->weight.normal_(0.0, 0.1);
  }

  ScriptEncoder& encoder() { return *encoder_; }

  // users [B] int64, request [B, 8] float -> [B, 2] in [0, cap].
  torch::Tensor forward(const torch::Tensor& script_vec, const torch::Tensor& users,
                        const torch::Tensor& request) {
    auto x = torch::cat({script_vec, users_->forward(users), request}, 1);  // [B, D + U + 8]
    auto h = fuse_->forward(x);                                              // [B, F]
    auto logits = torch::cat({mem_head_->forward(h), vram_head_->forward(h)}, 1);  // [B, 2]
    return torch::sigmoid(logits) * cap_;
  }

 private:
  double cap_;
  std::shared_ptr<ScriptEncoder> encoder_;
  torch::nn::Embedding users_{nullptr};
  torch::nn::Sequential fuse_{nullptr};
  torch::nn::Linear mem_head_{nullptr};
  torch::nn::Linear vram_head_{nullptr};
};

// One job, ready for batching: everything but the tensors.
struct Example {
  PreparedText text;
  int64_t user = 0;
  std::array<float, kReq> request{};
  std::array<float, kNumResources> target{};  // 0 where invalid
  std::array<float, kNumResources> mask{};
  std::array<float, kNumResources> censored{};  // 1: target is a lower bound (OOM)
  bool script_absent = false;
};

struct BatchTensors {
  std::vector<const PreparedText*> texts;
  torch::Tensor users;    // [B] int64
  torch::Tensor request;  // [B, 8]
  torch::Tensor target;   // [B, 2]
  torch::Tensor mask;     // [B, 2]
  torch::Tensor censored; // [B, 2]: 1 where the target is a lower bound
};

BatchTensors make_batch(const std::vector<const Example*>& ex, bool with_labels) {
  const auto b = static_cast<int64_t>(ex.size());
  BatchTensors bt;
  bt.texts.reserve(ex.size());
  bt.users = torch::empty({b}, torch::kInt64);
  bt.request = torch::empty({b, kReq}, torch::kFloat32);
  auto u = bt.users.accessor<int64_t, 1>();
  auto r = bt.request.accessor<float, 2>();
  // Placeholder [1, 2] tensors keep the accessors below valid when there are no labels.
  bt.target = torch::zeros({with_labels ? b : 1, kNumResources}, torch::kFloat32);
  bt.mask = torch::zeros({with_labels ? b : 1, kNumResources}, torch::kFloat32);
  bt.censored = torch::zeros({with_labels ? b : 1, kNumResources}, torch::kFloat32);
  auto t = bt.target.accessor<float, 2>();
  auto m = bt.mask.accessor<float, 2>();
  auto c = bt.censored.accessor<float, 2>();
  for (int64_t i = 0; i < b; ++i) {
    const Example& e = *ex[static_cast<size_t>(i)];
    bt.texts.push_back(&e.text);
    u[i] = e.user;
    for (int k = 0; k < kReq; ++k) r[i][k] = e.request[static_cast<size_t>(k)];
    if (with_labels) {
      for (int k = 0; k < kNumResources; ++k) {
        t[i][k] = e.target[static_cast<size_t>(k)];
        m[i][k] = e.mask[static_cast<size_t>(k)];
        c[i][k] = e.censored[static_cast<size_t>(k)];
      }
    }
  }
  return bt;
}

// Adam for tables with sparse gradients, updating (and decaying) only the rows a batch touched.
// Bias correction uses the global step, as torch.optim.SparseAdam does.
class LazyAdam {
 public:
  LazyAdam(std::vector<torch::Tensor> params, double lr, double weight_decay)
      : params_(std::move(params)), lr_(lr), wd_(weight_decay) {
    for (const auto& p : params_) {
      m_.push_back(torch::zeros_like(p));
      v_.push_back(torch::zeros_like(p));
    }
  }
  void zero_grad() {
    for (auto& p : params_) p.mutable_grad() = torch::Tensor();
  }
  void step() {
    torch::NoGradGuard no_grad;
    ++t_;
    const double bc1 = 1.0 - std::pow(kB1, static_cast<double>(t_));
    const double bc2 = 1.0 - std::pow(kB2, static_cast<double>(t_));
    for (size_t i = 0; i < params_.size(); ++i) {
      auto& p = params_[i];
      if (!p.grad().defined()) continue;
      auto g = p.grad().coalesce();
      auto rows = g.indices()[0];                  // [n]
      auto vals = g.values();                      // [n, D]
      auto m = m_[i].index_select(0, rows).mul_(kB1).add_(vals, 1.0 - kB1);           // [n, D]
      auto v = v_[i].index_select(0, rows).mul_(kB2).addcmul_(vals, vals, 1.0 - kB2);  // [n, D]
      m_[i].index_copy_(0, rows, m);
      v_[i].index_copy_(0, rows, v);
      auto w = p.index_select(0, rows).mul_(1.0 - lr_ * wd_);                           // [n, D]
      w.addcdiv_(m, (v / bc2).sqrt_().add_(kEps), -lr_ / bc1);
      p.index_copy_(0, rows, w);
    }
  }

 private:
  static constexpr double kB1 = 0.9, kB2 = 0.999, kEps = 1e-8;
  std::vector<torch::Tensor> params_, m_, v_;
  double lr_, wd_;
  int64_t t_ = 0;
};

double seconds_since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

}  // namespace

struct CodeModel::Impl {
  CodeModelConfig cfg;
  UserVocab users;
  features::RequestStandardizer standardizer;
  CodeTrainReport report;
  std::shared_ptr<FusionNet> net;

  Example example(const Job& job, bool with_labels) const {
    Example e;
    CodeText text = code_text(job);
    e.script_absent = !text.is_script;
    e.text = net->encoder().prepare(text);
    e.user = users.row(job.user);
    e.request = standardizer.transform(job);
    if (with_labels) {
      for (Resource r : kResources) {
        if (!job.is_valid(r)) continue;
        e.target[idx(r)] = static_cast<float>(std::clamp(job.label(r), 0.0, cfg.util_cap));
        e.mask[idx(r)] = 1.0f;
        e.censored[idx(r)] = censored_for(job, r) ? 1.0f : 0.0f;
      }
    }
    return e;
  }

  // Forward of prepared examples, in eval mode without gradients: [B, 2].
  torch::Tensor forward(const std::vector<const Example*>& ex) const {
    BatchTensors bt = make_batch(ex, false);
    return net->forward(net->encoder().encode(bt.texts), bt.users, bt.request);
  }
};

CodeModel::CodeModel() = default;
CodeModel::~CodeModel() = default;
CodeModel::CodeModel(CodeModel&&) noexcept = default;
CodeModel& CodeModel::operator=(CodeModel&&) noexcept = default;
CodeModel::CodeModel(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}

void set_torch_threads(int n) {
  if (n < 1) throw std::invalid_argument("set_torch_threads: n must be >= 1");
  torch::set_num_threads(n);
}
int torch_threads() { return torch::get_num_threads(); }

namespace {

Result<std::shared_ptr<FusionNet>> build_net(const CodeModelConfig& cfg, int64_t user_rows,
                                             const EncoderRegistry* registry) {
  const EncoderRegistry& reg = registry ? *registry : EncoderRegistry::builtin();
  auto enc = reg.create(cfg);
  if (!enc) return enc.status();
  return std::make_shared<FusionNet>(std::move(enc).value(), user_rows, cfg);
}

struct EvalResult {
  double loss = std::numeric_limits<double>::quiet_NaN();
  std::array<double, kNumResources> mae{};
};

// Masked loss and MAE over a whole set, batch by batch; the loss equals masked_smooth_l1 over
// the concatenated set (sums and counts accumulated, divided once).
EvalResult evaluate(CodeModel::Impl& m, const std::vector<Example>& set) {
  EvalResult out;
  if (set.empty()) return out;
  torch::NoGradGuard no_grad;
  m.net->eval();
  double loss_sum = 0.0, cells = 0.0;
  std::array<double, kNumResources> abs_sum{}, n{};
  for (size_t start = 0; start < set.size(); start += kPredictChunk) {
    std::vector<const Example*> chunk;
    for (size_t i = start; i < std::min(set.size(), start + kPredictChunk); ++i) chunk.push_back(&set[i]);
    BatchTensors bt = make_batch(chunk, true);
    auto pred = m.net->forward(m.net->encoder().encode(bt.texts), bt.users, bt.request);  // [B, 2]
    const double c = bt.mask.sum().item<double>();
    loss_sum += masked_smooth_l1(pred, bt.target, bt.mask, m.cfg.vram_weight, m.cfg.smooth_l1_beta,
                                 bt.censored)
                    .item<double>() * std::max(c, 1.0);
    cells += c;
    auto err = ((pred - bt.target).abs() * bt.mask).sum(0);  // [2]
    auto cnt = bt.mask.sum(0);                                // [2]
    for (int k = 0; k < kNumResources; ++k) {
      abs_sum[static_cast<size_t>(k)] += err[k].item<double>();
      n[static_cast<size_t>(k)] += cnt[k].item<double>();
    }
  }
  out.loss = cells > 0 ? loss_sum / cells : std::numeric_limits<double>::quiet_NaN();
  for (int k = 0; k < kNumResources; ++k) {
    auto kk = static_cast<size_t>(k);
    out.mae[kk] = n[kk] > 0 ? abs_sum[kk] / n[kk] : std::numeric_limits<double>::quiet_NaN();
  }
  return out;
}

// The train and validation examples; fills the report's counts.
struct ExampleSets {
  std::vector<Example> train, val;
};

ExampleSets make_examples(const CodeModel::Impl& m, const std::vector<const Job*>& train_jobs,
                          const std::vector<const Job*>& val_jobs, CodeTrainReport& rep) {
  ExampleSets ex;
  ex.train.reserve(train_jobs.size());
  size_t scripts = 0;
  for (const Job* j : train_jobs) {
    ex.train.push_back(m.example(*j, true));
    scripts += ex.train.back().script_absent ? 0 : 1;
  }
  for (const Job* j : val_jobs) ex.val.push_back(m.example(*j, true));
  rep.train_jobs = ex.train.size();
  rep.val_jobs = ex.val.size();
  rep.users = static_cast<size_t>(m.users.rows() - 1);
  rep.script_share = static_cast<double>(scripts) / static_cast<double>(ex.train.size());
  return ex;
}

// Dense parameters (fusion, heads, users, dense encoder parts) go to AdamW; the encoder's sparse
// token tables to LazyAdam; frozen encoder weights (not in trainable_parameters) to neither.
std::vector<torch::Tensor> dense_parameters(FusionNet& net, const std::vector<torch::Tensor>& params,
                                            const std::vector<torch::Tensor>& sparse) {
  auto is_in = [](const torch::Tensor& t, const std::vector<torch::Tensor>& v) {
    return std::any_of(v.begin(), v.end(), [&](const torch::Tensor& u) { return u.is_same(t); });
  };
  const auto enc_trainable = net.encoder().trainable_parameters();
  const auto enc_all = net.encoder().parameters();
  std::vector<torch::Tensor> dense;
  for (const auto& p : params) {
    if (is_in(p, sparse)) continue;
    if (is_in(p, enc_all) && !is_in(p, enc_trainable)) continue;
    dense.push_back(p);
  }
  return dense;
}

// What one epoch needs besides the model: the optimizers, the shuffled order and the random
// stream (shuffles and user dropout draw from it in a fixed order, so a seed repeats a run).
struct EpochState {
  torch::optim::AdamW& opt;
  LazyAdam& sparse_opt;
  const std::vector<torch::Tensor>& dense;
  std::vector<size_t> order;
  std::mt19937_64 rng;
  std::bernoulli_distribution drop_user;
};

// One pass over the training examples in a new shuffled order; returns the examples seen.
size_t train_epoch(CodeModel::Impl& m, const CodeModelConfig& cfg, const std::vector<Example>& train,
                   EpochState& st) {
  m.net->train();
  std::shuffle(st.order.begin(), st.order.end(), st.rng);
  size_t seen = 0;
  for (size_t start = 0; start < st.order.size(); start += static_cast<size_t>(cfg.batch_size)) {
    const size_t end = std::min(st.order.size(), start + static_cast<size_t>(cfg.batch_size));
    std::vector<const Example*> chunk;
    for (size_t i = start; i < end; ++i) chunk.push_back(&train[st.order[i]]);
    BatchTensors bt = make_batch(chunk, true);
    // User dropout: some examples are shown as the unknown user so row 0 keeps learning.
    auto u = bt.users.accessor<int64_t, 1>();
    for (int64_t i = 0; i < u.size(0); ++i)
      if (st.drop_user(st.rng)) u[i] = 0;
    auto pred = m.net->forward(m.net->encoder().encode(bt.texts), bt.users, bt.request);
    auto loss = masked_smooth_l1(pred, bt.target, bt.mask, cfg.vram_weight, cfg.smooth_l1_beta,
                                 bt.censored);
    st.opt.zero_grad();
    st.sparse_opt.zero_grad();
    loss.backward();
    if (cfg.grad_clip > 0) torch::nn::utils::clip_grad_norm_(st.dense, cfg.grad_clip);
    st.opt.step();
    st.sparse_opt.step();
    seen += chunk.size();
  }
  return seen;
}

// Early stopping: the lowest validation loss so far and a copy of the weights that reached it.
// Without validation examples every epoch is the best. With them, a non-finite loss (NaN or inf
// predictions: a diverged run, a float16 overflow) never counts as an improvement, so it can
// neither replace good weights nor pass for "no validation data".
struct BestState {
  std::vector<torch::Tensor> weights;
  double loss = std::numeric_limits<double>::infinity();
  int64_t since_best = 0;
};

void keep_if_best(const EvalResult& ev, bool has_val, int64_t epoch,
                  const std::vector<torch::Tensor>& params, BestState& best, CodeTrainReport& rep) {
  if (has_val && !(std::isfinite(ev.loss) && ev.loss < best.loss)) {
    ++best.since_best;
    return;
  }
  best.loss = has_val ? ev.loss : best.loss;
  rep.best_epoch = epoch;
  rep.best_val_loss = ev.loss;
  rep.val_mae = ev.mae;
  best.since_best = 0;
  torch::NoGradGuard no_grad;
  best.weights.clear();
  for (const auto& p : params) best.weights.push_back(p.detach().clone());
}

// A model that would predict NaN is an error, not a result: no epoch reached a finite validation
// loss, or (without validation data) the weights kept are not finite.
Status check_finite(const BestState& best, bool has_val) {
  const char* hint = "lower lr, or use dtype=float32/bfloat16 for qwen2";
  if (best.weights.empty())
    return Status::invalid(fmt::format(
        "code model: training diverged: no epoch reached a finite validation loss ({})", hint));
  if (!has_val)
    for (const auto& w : best.weights)
      if (!torch::isfinite(w).all().item<bool>())
        return Status::invalid(fmt::format(
            "code model: training diverged: the weights are not finite ({})", hint));
  return Status::ok();
}

}  // namespace

Result<CodeModel> CodeModel::train(const std::vector<const Job*>& train,
                                   const std::vector<const Job*>& val, const CodeModelConfig& cfg,
                                   const ProgressFn& progress, const EncoderRegistry* registry) {
  const auto t_start = std::chrono::steady_clock::now();
  if (auto st = cfg.validate(); !st) return st;
  std::vector<const Job*> train_jobs, val_jobs;
  for (const Job* j : train) if (j->any_valid()) train_jobs.push_back(j);
  for (const Job* j : val) if (j->any_valid()) val_jobs.push_back(j);
  if (train_jobs.empty()) return Status::invalid("code model: no training job has a valid label");

  if (cfg.threads > 0) set_torch_threads(static_cast<int>(cfg.threads));
  torch::manual_seed(cfg.seed);

  auto impl = std::make_unique<Impl>();
  impl->cfg = cfg;
  impl->users = UserVocab::fit(train_jobs, cfg.min_user_jobs);
  impl->standardizer.fit(train_jobs);
  auto net = build_net(cfg, impl->users.rows(), registry);
  if (!net) return net.status();
  impl->net = std::move(net).value();
  impl->net->encoder().record_in_config(impl->cfg);

  try {
    CodeTrainReport& rep = impl->report;
    const ExampleSets ex = make_examples(*impl, train_jobs, val_jobs, rep);
    std::vector<torch::Tensor> params = impl->net->parameters();  // everything, for best-state copies
    const std::vector<torch::Tensor> sparse = impl->net->encoder().sparse_parameters();
    const std::vector<torch::Tensor> dense = dense_parameters(*impl->net, params, sparse);
    torch::optim::AdamW opt(dense, torch::optim::AdamWOptions(cfg.lr).weight_decay(cfg.weight_decay));
    LazyAdam sparse_opt(sparse, cfg.lr * cfg.embed_lr_scale, cfg.weight_decay);
    BestState best;
    const bool has_val = !ex.val.empty();
    EpochState st{opt, sparse_opt, dense, std::vector<size_t>(ex.train.size()),
                  std::mt19937_64(cfg.seed), std::bernoulli_distribution(cfg.user_dropout)};
    std::iota(st.order.begin(), st.order.end(), size_t{0});
    double train_s = 0.0;
    size_t seen = 0;

    for (int64_t epoch = 1; epoch <= cfg.max_epochs; ++epoch) {
      const auto t_epoch = std::chrono::steady_clock::now();
      seen += train_epoch(*impl, cfg, ex.train, st);
      train_s += seconds_since(t_epoch);
      rep.epochs_run = epoch;

      const EvalResult ev = evaluate(*impl, ex.val);
      keep_if_best(ev, has_val, epoch, params, best, rep);
      peakcast::log(LogLevel::kDebug, fmt::format("code_model[{}] epoch {}: val loss {:.5f}, mae mem {:.4f} vram {:.4f}",
                                        cfg.encoder, epoch, ev.loss, ev.mae[0], ev.mae[1]));
      if (progress) progress("code_model[" + cfg.encoder + "] epoch", static_cast<size_t>(epoch), static_cast<size_t>(cfg.max_epochs));
      if (has_val && best.since_best >= cfg.patience) break;
    }
    if (auto st = check_finite(best, has_val); !st) return st;
    {
      torch::NoGradGuard no_grad;
      for (size_t i = 0; i < params.size(); ++i) params[i].copy_(best.weights[i]);
    }
    impl->net->eval();
    rep.jobs_per_s = train_s > 0 ? static_cast<double>(seen) / train_s : 0.0;
    rep.seconds = seconds_since(t_start);
  } catch (const c10::Error& e) {
    return Status::internal(std::string("code model: torch: ") + e.what_without_backtrace());
  }
  return CodeModel(std::move(impl));
}

Result<std::vector<CodeModel>> train_code_models(const std::vector<const Job*>& train,
                                                 const std::vector<const Job*>& val,
                                                 const CodeModelConfig& cfg,
                                                 const ProgressFn& progress) {
  std::vector<CodeModel> out;
  for (int64_t s = 0; s < cfg.seeds; ++s) {
    CodeModelConfig c = cfg;
    c.seed = cfg.seed + static_cast<uint64_t>(s);
    c.seeds = 1;
    auto m = CodeModel::train(train, val, c, progress);
    if (!m) return m.status();
    out.push_back(std::move(m).value());
  }
  return out;
}

// ---- prediction ----

namespace {
const CodeModel::Impl& require(const std::unique_ptr<CodeModel::Impl>& impl) {
  if (!impl) throw std::logic_error("CodeModel used before train() or load()");
  return *impl;
}
}  // namespace

CodePrediction CodeModel::predict(const Job& job) const {
  auto out = predict_batch({&job});
  return out.front();
}

std::vector<CodePrediction> CodeModel::predict_batch(const std::vector<const Job*>& jobs) const {
  const Impl& m = require(impl_);
  std::vector<CodePrediction> out;
  out.reserve(jobs.size());
  torch::NoGradGuard no_grad;
  for (size_t start = 0; start < jobs.size(); start += kPredictChunk) {
    const size_t end = std::min(jobs.size(), start + kPredictChunk);
    std::vector<Example> ex;  // per-call scratch
    ex.reserve(end - start);
    for (size_t i = start; i < end; ++i) ex.push_back(m.example(*jobs[i], false));
    std::vector<const Example*> ptrs;
    for (const auto& e : ex) ptrs.push_back(&e);
    auto pred = m.forward(ptrs).contiguous();  // [B, 2]
    auto a = pred.accessor<float, 2>();
    for (size_t i = 0; i < ex.size(); ++i) {
      const auto ii = static_cast<int64_t>(i);
      out.push_back({{a[ii][0], a[ii][1]}, ex[i].script_absent});
    }
  }
  return out;
}

std::vector<float> CodeModel::encode(const Job& job) const {
  const Impl& m = require(impl_);
  torch::NoGradGuard no_grad;
  Example e = m.example(job, false);
  auto v = m.net->encoder().encode({&e.text}).contiguous();  // [1, D]
  const float* p = v.data_ptr<float>();
  return {p, p + v.numel()};
}

const CodeModelConfig& CodeModel::config() const { return require(impl_).cfg; }
const CodeTrainReport& CodeModel::report() const { return require(impl_).report; }

// ---- the model directory ----

namespace {

nlohmann::json report_json(const CodeTrainReport& r) {
  auto num = [](double v) { return std::isnan(v) ? nlohmann::json(nullptr) : nlohmann::json(v); };
  return {{"train_jobs", r.train_jobs}, {"val_jobs", r.val_jobs}, {"users", r.users},
          {"script_share", r.script_share}, {"epochs_run", r.epochs_run},
          {"best_epoch", r.best_epoch}, {"best_val_loss", num(r.best_val_loss)},
          {"val_mae", {{"mem", num(r.val_mae[0])}, {"vram", num(r.val_mae[1])}}},
          {"seconds", r.seconds}, {"jobs_per_s", r.jobs_per_s}};
}

CodeTrainReport report_from_json(const nlohmann::json& j) {
  auto num = [](const nlohmann::json& v) {
    return v.is_number() ? v.get<double>() : std::numeric_limits<double>::quiet_NaN();
  };
  // A count or epoch the report shows: a whole number within 0 to 2^53, else 0. nlohmann converts
  // a float to an integer with a cast, undefined out of the type's range ("train_jobs": 1e300).
  auto whole = [&](const char* key) -> int64_t {
    const nlohmann::json v = j.value(key, nlohmann::json());
    if (!v.is_number()) return j.value(key, int64_t{0});  // another type: nlohmann's type_error, reported as such
    return static_cast<int64_t>(json_count(v).value_or(0));
  };
  CodeTrainReport r;
  r.train_jobs = static_cast<size_t>(whole("train_jobs"));
  r.val_jobs = static_cast<size_t>(whole("val_jobs"));
  r.users = static_cast<size_t>(whole("users"));
  r.script_share = j.value("script_share", 0.0);
  r.epochs_run = whole("epochs_run");
  r.best_epoch = whole("best_epoch");
  r.best_val_loss = num(j.value("best_val_loss", nlohmann::json()));
  if (j.contains("val_mae")) {
    r.val_mae[0] = num(j["val_mae"].value("mem", nlohmann::json()));
    r.val_mae[1] = num(j["val_mae"].value("vram", nlohmann::json()));
  }
  r.seconds = j.value("seconds", 0.0);
  r.jobs_per_s = j.value("jobs_per_s", 0.0);
  return r;
}

// Manifests written before the hash was recorded have none: nothing to check.
Status check_weights_hash(const nlohmann::json& manifest, const std::string& weights) {
  if (!manifest.contains("weights_sha256")) return Status::ok();
  const auto& want = manifest["weights_sha256"];
  if (!want.is_string()) return Status::invalid("manifest.json: weights_sha256: not a string");
  if (want.get<std::string>() != sha256_hex(weights))
    return Status::invalid(
        "weights.pt: its SHA-256 is not the manifest's weights_sha256 (the files come from two "
        "saves: an interrupted save, or a copied weights.pt); save the model again");
  return Status::ok();
}

}  // namespace

Status CodeModel::save(const std::string& dir) const {
  const Impl& m = require(impl_);
  std::error_code ec;
  std::filesystem::create_directories(dir, ec);
  if (ec) return Status::io(fmt::format("{}: cannot create directory: {}", dir, ec.message()));
  nlohmann::json manifest = {{"format", kFormatName},
                             {"format_version", kFormatVersion},
                             {"config", to_json(m.cfg)},
                             {"request_standardizer", m.standardizer.to_json()},
                             {"users", m.users.to_json()},
                             {"report", report_json(m.report)},
                             {"weights", "weights.pt"}};
  std::ostringstream weights;
  try {
    torch::serialize::OutputArchive archive;
    m.net->save(archive);
    archive.save_to(weights);
  } catch (const c10::Error& e) {
    return Status::internal(std::string("code model: saving weights: ") + e.what_without_backtrace());
  }
  // The two files are each replaced atomically, not together: the hash ties them, so weights
  // from another save (an interrupted one, a copy) are refused instead of being read with this
  // manifest's user rows and request statistics.
  manifest["weights_sha256"] = sha256_hex(weights.str());
  const std::string base = (std::filesystem::path(dir) / "").string();
  if (auto st = write_file_atomic(base + "weights.pt", weights.str()); !st) return st;
  return write_file_atomic(base + "manifest.json", manifest.dump(2) + "\n");
}

Result<CodeModel> CodeModel::load(const std::string& dir, const EncoderRegistry* registry) {
  const std::string base = (std::filesystem::path(dir) / "").string();
  auto manifest = read_file(base + "manifest.json");
  if (!manifest) return manifest.status();
  auto weights = read_file(base + "weights.pt");
  if (!weights) return weights.status();
  std::istringstream ms(*manifest), ws(*weights);
  auto m = load(ms, ws, registry);
  if (!m) return m.status().with_context(dir);
  return m;
}

Result<CodeModel> CodeModel::load(std::istream& manifest_in, std::istream& weights,
                                  const EncoderRegistry* registry) {
  auto j = nlohmann::json::parse(manifest_in, nullptr, /*allow_exceptions=*/false);
  if (j.is_discarded() || !j.is_object()) return Status::invalid("manifest.json: not a JSON object");
  // A value of another JSON type than a reader expects (nlohmann throws type_error) is a bad
  // manifest, not an internal error.
  try {
    return load_checked(j, weights, registry);
  } catch (const nlohmann::json::exception& e) {
    return Status::invalid(std::string("manifest.json: a field has the wrong JSON type (") + e.what() + ")");
  }
}

Result<CodeModel> CodeModel::load_checked(const nlohmann::json& j, std::istream& weights,
                                          const EncoderRegistry* registry) {
  if (j.value("format", std::string()) != kFormatName)
    return Status::invalid(fmt::format("manifest.json: format: expected '{}'", kFormatName));
  if (!j.contains("format_version") || !j["format_version"].is_number_integer())
    return Status::invalid("manifest.json: format_version: missing or not an integer");
  // Read whole: get<int>() would wrap 4294967297 to 1 and take it for format 1.
  const int64_t version = j["format_version"].get<int64_t>();
  if (version > kFormatVersion)
    return Status::unsupported(fmt::format(
        "manifest.json: format_version: model format {} is newer than this build reads ({}); "
        "use a newer peakcast or retrain", version, kFormatVersion));
  if (version < 1) return Status::invalid(fmt::format("manifest.json: format_version: {} is invalid", version));
  if (version < kOldestFormatVersion)
    return Status::unsupported(fmt::format(
        "manifest.json: format_version: model format {} was trained on scripts and job names as the "
        "trace held them; this build reads them redacted (format {}), as peakcastd stores them, so "
        "its predictions would differ: retrain with `peakcast train`", version, kFormatVersion));
  for (const char* key : {"config", "request_standardizer", "users"})
    if (!j.contains(key)) return Status::invalid(fmt::format("manifest.json: {}: missing", key));

  auto impl = std::make_unique<Impl>();
  auto cfg = code_config_from_json(j["config"]);
  if (!cfg) return cfg.status().with_context("manifest.json: config");
  impl->cfg = *cfg;
  auto stdz = features::RequestStandardizer::from_json(j["request_standardizer"]);
  if (!stdz) return stdz.status().with_context("manifest.json: request_standardizer");
  impl->standardizer = *stdz;
  auto users = UserVocab::from_json(j["users"]);
  if (!users) return users.status().with_context("manifest.json");
  impl->users = std::move(users).value();
  if (j.contains("report")) impl->report = report_from_json(j["report"]);

  auto net = build_net(impl->cfg, impl->users.rows(), registry);
  if (!net) return net.status();
  impl->net = std::move(net).value();
  try {
    // Module::load replaces tensors whole, shape included: check the shapes the manifest implies.
    std::vector<std::pair<std::string, std::vector<int64_t>>> expected;
    for (const auto& p : impl->net->named_parameters())
      expected.emplace_back(p.key(), p.value().sizes().vec());
    std::string bytes{std::istreambuf_iterator<char>(weights), std::istreambuf_iterator<char>()};
    if (auto st = check_weights_hash(j, bytes); !st) return st;
    std::istringstream weights_in(std::move(bytes));
    torch::serialize::InputArchive archive;
    archive.load_from(weights_in);
    impl->net->load(archive);
    auto loaded = impl->net->named_parameters();
    for (const auto& [name, shape] : expected) {
      if (loaded[name].sizes().vec() != shape)
        return Status::invalid(fmt::format("weights.pt: {}: shape [{}] does not match the manifest's [{}]",
                                           name, fmt::join(loaded[name].sizes().vec(), ", "),
                                           fmt::join(shape, ", ")));
    }
  } catch (const c10::Error& e) {
    return Status::invalid(std::string("weights.pt: does not match the manifest: ") +
                           e.what_without_backtrace());
  }
  impl->net->eval();
  return CodeModel(std::move(impl));
}

}  // namespace peakcast::models::code
