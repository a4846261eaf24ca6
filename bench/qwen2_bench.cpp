// The qwen2 encoder's transformer on this machine (CPU) or a GPU (bench/gpu/run.sh):
//   (1) --reference DIR: the forward of a checkpoint folder against its reference.json (the
//       fixtures' format; bench/gpu/hf_reference.py writes the same from transformers itself);
//   (2) batch-1 forward latency of the Qwen2.5-Coder-1.5B shape with random weights at each
//       --tokens length, beside the compute floor 2 * params * tokens at the measured matrix rate,
//       the study's 31.31 ms, and (main build only) the `bag` encoder on a text of that length;
//   (3) LoRA training throughput (tokens/s: forward + backward + AdamW on the adapters).
//
//   qwen2_bench [--device cpu|cuda] [--dtype float32|bfloat16] [--tokens 512,4096]
//               [--reference DIR]... [--runs N] [--lora-tokens N] [--lora-steps N]
//               [--threads N] [--no-shape]
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>
#include <torch/cuda.h>
#include <torch/torch.h>
#include <torch/version.h>

#include "peakcast/models/qwen2/model.h"

#ifdef PEAKCAST_BENCH_BAG
#include "peakcast/models/code/encoder.h"
#endif

using namespace peakcast::models::qwen2;
using Clock = std::chrono::steady_clock;

namespace {

struct Args {
  std::string device = "cpu";
  std::string dtype;  // default: float32 on cpu, bfloat16 on cuda
  std::vector<int64_t> tokens = {512, 4096};
  std::vector<std::string> references;
  int runs = 0;  // default: 1 on cpu, 10 on cuda
  int64_t lora_tokens = 0;
  int lora_steps = 0;
  int threads = 0;
  bool shape = true;
  double study_ms = 31.31;
};

torch::ScalarType parse_dtype(const std::string& s) {
  if (s == "bfloat16") return torch::kBFloat16;
  if (s == "float16") return torch::kFloat16;
  return torch::kFloat32;
}

void sync(const torch::Device& d) {
  if (d.is_cuda()) torch::cuda::synchronize();
}

double max_abs(const torch::Tensor& got, const nlohmann::json& want) {
  auto w = torch::tensor(want.get<std::vector<double>>(), torch::kFloat64);
  return (got.to(torch::kCPU, torch::kFloat64).flatten() - w).abs().max().item<double>();
}

// Worst |diff| per kind over every input of a reference "inputs" list.
bool check_outputs(const Qwen2Model& m, const nlohmann::json& inputs, const nlohmann::json& tol,
                   const std::string& label) {
  double hid = 0, pooled = 0, logits = 0;
  torch::NoGradGuard no_grad;
  for (const auto& in : inputs) {
    const auto ids = in["input_ids"].get<std::vector<int64_t>>();
    auto h = m.forward(ids);
    const auto pos = in["hidden_positions"].get<std::vector<int64_t>>();
    for (size_t i = 0; i < pos.size(); ++i) hid = std::max(hid, max_abs(h[pos[i]], in["final_hidden"][i]));
    auto [mean, last] = pool_hidden(h.unsqueeze(0), torch::tensor({static_cast<int64_t>(ids.size())}));
    pooled = std::max(pooled, max_abs(mean[0], in["mean_pooled"]));
    hid = std::max(hid, max_abs(last[0], in["last_token"]));
    logits = std::max(logits, max_abs(m.logits(h[-1]).slice(0, 0, 16), in["logits_last_first16"]));
  }
  const bool ok = hid <= tol["hidden"].get<double>() && pooled <= tol["pooled"].get<double>() &&
                  logits <= tol["logits16"].get<double>();
  std::printf("  %-44s hidden %.2e (tol %.0e)  pooled %.2e (tol %.0e)  logits16 %.2e (tol %.0e)  %s\n",
              label.c_str(), hid, tol["hidden"].get<double>(), pooled, tol["pooled"].get<double>(),
              logits, tol["logits16"].get<double>(), ok ? "PASS" : "FAIL");
  return ok;
}

bool check_reference(const std::string& dir, const torch::Device& device) {
  std::ifstream in(dir + "/reference.json");
  if (!in) {
    std::printf("  %s: no reference.json\n", dir.c_str());
    return false;
  }
  const auto ref = nlohmann::json::parse(in);
  std::ifstream cin(dir + "/config.json");
  const auto cfg = nlohmann::json::parse(cin);
  const auto ckpt_dtype = parse_dtype(cfg.value("torch_dtype", "float32"));
  const auto& tol = ref["tolerance"];
  bool ok = true;
  auto run = [&](torch::ScalarType dt, const nlohmann::json& inputs, const nlohmann::json& t, const char* what) {
    auto m = Qwen2Model::load(dir, dt, device);
    if (!m) {
      std::printf("  %s: %s\n", dir.c_str(), m.status().message().c_str());
      ok = false;
      return;
    }
    ok &= check_outputs(*m, inputs, t, dir.substr(dir.find_last_of('/') + 1) + " " + what);
  };
  run(ckpt_dtype, ref["inputs"], tol.contains("recommended_atol") ? tol["recommended_atol"] : tol["recommended_atol_vs_inputs"],
      ckpt_dtype == torch::kBFloat16 ? "bf16 vs inputs" : "f32 vs inputs");
  if (ref.contains("outputs_f32_compute"))
    run(torch::kFloat32, ref["outputs_f32_compute"]["inputs"], tol["recommended_atol_vs_outputs_f32_compute"],
        "f32 compute vs outputs_f32_compute");
  return ok;
}

// Dense matrix rate of this device in the dtype (TFLOP/s), from a square matmul.
double matmul_tflops(const torch::Device& d, torch::ScalarType dt) {
  const int64_t n = d.is_cuda() ? 8192 : 1024;
  auto a = torch::randn({n, n}, torch::TensorOptions().device(d)).to(dt);
  auto b = torch::randn({n, n}, torch::TensorOptions().device(d)).to(dt);
  torch::NoGradGuard ng;
  torch::matmul(a, b);
  sync(d);
  const int reps = d.is_cuda() ? 20 : 3;
  auto t0 = Clock::now();
  for (int i = 0; i < reps; ++i) torch::matmul(a, b);
  sync(d);
  const double s = std::chrono::duration<double>(Clock::now() - t0).count() / reps;
  return 2.0 * n * n * n / s / 1e12;
}

#ifdef PEAKCAST_BENCH_BAG
// The default `bag` encoder's batch-1 forward on a script of about `tokens` shell tokens (ms).
double bag_ms(int64_t tokens) {
  peakcast::models::code::CodeModelConfig cfg;
  auto enc = peakcast::models::code::EncoderRegistry::builtin().create(cfg);
  std::string text = "#!/bin/bash\n#SBATCH --mem=32G\n";
  for (int64_t i = 0; i < tokens / 4; ++i) text += "python train.py --batch-size " + std::to_string(i % 512) + "\n";
  torch::NoGradGuard ng;
  const int reps = 50;
  auto t0 = Clock::now();
  for (int i = 0; i < reps; ++i) {
    auto p = (*enc)->prepare({text, true});
    (*enc)->encode({&p});
  }
  return std::chrono::duration<double, std::milli>(Clock::now() - t0).count() / reps;
}
#endif

void latency(const Args& a, const torch::Device& d, torch::ScalarType dt) {
  const auto cfg = qwen25_coder_1p5b_config();
  std::printf("\n(2) batch-1 forward, Qwen2.5-Coder-1.5B shape (%.3f B parameters), random weights, %s, %s\n",
              cfg.parameter_count() / 1e9, d.str().c_str(), c10::toString(dt));
  auto t0 = Clock::now();
  auto m = Qwen2Model::random(cfg, dt, d, 1);
  std::printf("  built in %.1f s\n", std::chrono::duration<double>(Clock::now() - t0).count());
  const double rate = matmul_tflops(d, dt);
  std::printf("  measured %s matmul rate: %.3f TFLOP/s\n", c10::toString(dt), rate);
  std::printf("  %7s %12s %12s %14s %10s\n", "tokens", "median ms", "floor ms", "study ms", "bag ms");
  const int runs = a.runs > 0 ? a.runs : (d.is_cuda() ? 10 : 1);
  torch::NoGradGuard ng;
  for (int64_t t : a.tokens) {
    std::vector<int64_t> ids(static_cast<size_t>(t));
    for (int64_t i = 0; i < t; ++i) ids[static_cast<size_t>(i)] = (i * 7919) % cfg.vocab_size;
    if (d.is_cuda()) { m.forward(ids); m.forward(ids); }  // warm-up (kernels, allocator)
    sync(d);
    std::vector<double> ms;
    for (int r = 0; r < runs; ++r) {
      auto s = Clock::now();
      auto h = m.forward(ids);
      sync(d);
      ms.push_back(std::chrono::duration<double, std::milli>(Clock::now() - s).count());
    }
    std::sort(ms.begin(), ms.end());
    const double floor_ms = 2.0 * static_cast<double>(cfg.parameter_count()) * t / (rate * 1e12) * 1e3;
    std::string bag = "-";
#ifdef PEAKCAST_BENCH_BAG
    bag = std::to_string(bag_ms(t)).substr(0, 6);
#endif
    std::printf("  %7lld %12.1f %12.1f %14.2f %10s\n", static_cast<long long>(t), ms[ms.size() / 2], floor_ms,
                a.study_ms, bag.c_str());
    std::fflush(stdout);
  }
}

void lora_throughput(const Args& a, const torch::Device& d, torch::ScalarType dt) {
  const auto cfg = qwen25_coder_1p5b_config();
  const int64_t t = a.lora_tokens > 0 ? a.lora_tokens : (d.is_cuda() ? 1024 : 128);
  const int steps = a.lora_steps > 0 ? a.lora_steps : (d.is_cuda() ? 10 : 2);
  std::printf("\n(3) LoRA training (rank 8, all 7 targets, AdamW), 1.5B shape, %lld tokens per step, %s %s\n",
              static_cast<long long>(t), d.str().c_str(), c10::toString(dt));
  auto m = Qwen2Model::random(cfg, dt, d, 2);
  Lora lora(cfg, LoraOptions{});
  lora.to(d);
  lora.train();
  torch::optim::AdamW opt(lora.parameters(), torch::optim::AdamWOptions(1e-4));
  std::vector<int64_t> ids(static_cast<size_t>(t));
  for (int64_t i = 0; i < t; ++i) ids[static_cast<size_t>(i)] = (i * 104729) % cfg.vocab_size;
  auto step = [&] {
    auto h = m.forward(ids, &lora).to(torch::kFloat32);
    auto loss = h.mean(0).pow(2).mean();
    opt.zero_grad();
    loss.backward();
    opt.step();
  };
  step();  // warm-up
  sync(d);
  auto s = Clock::now();
  for (int i = 0; i < steps; ++i) step();
  sync(d);
  const double sec = std::chrono::duration<double>(Clock::now() - s).count();
  std::printf("  %d steps in %.2f s: %.0f tokens/s (%.1f ms per step)\n", steps, sec, steps * t / sec,
              sec / steps * 1e3);
}

std::vector<int64_t> parse_list(const std::string& s) {
  std::vector<int64_t> out;
  std::stringstream ss(s);
  std::string item;
  while (std::getline(ss, item, ',')) out.push_back(std::stoll(item));
  return out;
}

}  // namespace

int main(int argc, char** argv) {
  std::setvbuf(stdout, nullptr, _IOLBF, 0);  // progress lines as they come (long CPU runs)
  Args a;
  for (int i = 1; i < argc; ++i) {
    const std::string k = argv[i];
    auto next = [&]() -> std::string {
      if (i + 1 >= argc) { std::fprintf(stderr, "%s needs a value\n", k.c_str()); std::exit(2); }
      return argv[++i];
    };
    if (k == "--device") a.device = next();
    else if (k == "--dtype") a.dtype = next();
    else if (k == "--tokens") a.tokens = parse_list(next());
    else if (k == "--reference") a.references.push_back(next());
    else if (k == "--runs") a.runs = std::stoi(next());
    else if (k == "--lora-tokens") a.lora_tokens = std::stoll(next());
    else if (k == "--lora-steps") a.lora_steps = std::stoi(next());
    else if (k == "--threads") a.threads = std::stoi(next());
    else if (k == "--no-shape") a.shape = false;
    else { std::fprintf(stderr, "unknown option %s (see the comment at the top of qwen2_bench.cpp)\n", k.c_str()); return 2; }
  }
  if (a.threads > 0) torch::set_num_threads(a.threads);
  const torch::Device d(a.device);
  if (d.is_cuda() && !torch::cuda::is_available()) {
    std::fprintf(stderr, "--device %s: no CUDA device visible to this LibTorch\n", a.device.c_str());
    return 2;
  }
  const auto dt = parse_dtype(a.dtype.empty() ? (d.is_cuda() ? "bfloat16" : "float32") : a.dtype);
  std::printf("qwen2_bench: LibTorch %s, device %s, %d CPU threads\n", TORCH_VERSION, d.str().c_str(),
              torch::get_num_threads());
  bool ok = true;
  if (!a.references.empty()) {
    std::printf("\n(1) forward against reference.json\n");
    for (const auto& r : a.references) ok &= check_reference(r, d);
  }
  if (a.shape) {
    latency(a, d, dt);
    lora_throughput(a, d, dt);
  }
  return ok ? 0 : 1;
}
