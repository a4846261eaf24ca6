// Slurm batch scripts for the synthetic families, in each user's style (mail lines, memory
// notation, environment, pasted tokens). What the script says is what the job requested.
#include <cmath>
#include <string>

#include <fmt/format.h>

#include "synth/families_tables.h"
#include "synth/model.h"

namespace peakcast::synth {
namespace {

std::string slurm_time(int64_t s) {
  const int64_t days = s / 86400, h = (s % 86400) / 3600, m = (s % 3600) / 60, sec = s % 60;
  if (days > 0) return fmt::format("{}-{:02}:{:02}:{:02}", days, h, m, sec);
  return fmt::format("{:02}:{:02}:{:02}", h, m, sec);
}

std::string mem_text(double gib, const User& u) {
  const auto g = static_cast<long>(std::lround(gib));
  if (u.mem_style == 1) return fmt::format("{}000M", g);
  return fmt::format("{}G", g);
}

std::string header(const Args& a, const Request& r, const User& u) {
  std::string s = "#!/bin/bash\n";
  s += fmt::format("#SBATCH --job-name={}\n", job_name_for(a));
  s += fmt::format("#SBATCH --account={}\n", u.account);
  s += fmt::format("#SBATCH --partition={}\n", r.partition);
  s += "#SBATCH --nodes=1\n";
  if (a.family == Family::kMolecularDynamics) {
    s += fmt::format("#SBATCH --ntasks={}\n#SBATCH --cpus-per-task=1\n", r.cpus);
  } else {
    s += fmt::format("#SBATCH --ntasks=1\n#SBATCH --cpus-per-task={}\n", r.cpus);
  }
  if (r.gpus > 0) s += fmt::format("#SBATCH --gres=gpu:a100:{}\n", r.gpus);
  if (r.mem_per_cpu) {
    s += fmt::format("#SBATCH --mem-per-cpu={}\n", mem_text(r.mem_gib / r.cpus, u));
  } else {
    s += fmt::format("#SBATCH --mem={}\n", mem_text(r.mem_gib, u));
  }
  s += fmt::format("#SBATCH --time={}\n", slurm_time(r.time_s));
  if (a.family == Family::kAlignment) s += "#SBATCH --array=1-24%8\n";
  s += fmt::format("#SBATCH --output=/home/{}/logs/%x-%j.out\n", u.name);
  if (u.mail) s += fmt::format("#SBATCH --mail-user={}\n#SBATCH --mail-type=END,FAIL\n", u.email);
  return s + "\n";
}

// The body of each family's script, after the #SBATCH header.
std::string image_training(const Args& a, const User& u, int variant) {
  const std::string home = "/home/" + u.name;
  const std::string scratch = "/scratch/" + u.name;
  const auto& m = kImageModels[static_cast<size_t>(a.model)];
  const auto ds = kImageDatasets[static_cast<size_t>(a.dataset)];
  std::string s = "module purge\nmodule load cuda/12.1 python/3.11\n";
  s += fmt::format("source {}/envs/{}/bin/activate\n", home, u.env);
  s += fmt::format("export OMP_NUM_THREADS={}\n\n", a.threads);
  s += fmt::format("cd {}/projects/vision\n", home);
  if (a.gpus > 1) {
    s += fmt::format("srun torchrun --standalone --nproc_per_node={} train.py \\\n", a.gpus);
  } else {
    s += "srun python train.py \\\n";
  }
  s += fmt::format("    --model {} --batch-size {} --image-size {} --epochs {} \\\n", m.name,
                   a.batch, a.image_size, a.epochs);
  s += fmt::format("    --workers {}{} --lr {} \\\n", a.threads, a.amp ? " --amp" : "",
                   variant % 2 == 0 ? "0.1" : "0.05");
  s += fmt::format("    --data {}/datasets/{} --output {}/runs/{}-bs{}\n", scratch, ds, scratch,
                   m.name, a.batch);
  return s;
}

std::string llm_finetune(const Args& a, const User& u, int variant) {
  const std::string home = "/home/" + u.name;
  const std::string scratch = "/scratch/" + u.name;
  const auto& m = kLlmModels[static_cast<size_t>(a.model)];
  std::string s = "module load cuda/12.1\n";
  s += fmt::format("source {}/miniconda3/bin/activate {}\n", home, u.env);
  s += fmt::format("export HF_HOME={}/hf-cache\n", scratch);
  if (!u.hf_token.empty()) s += fmt::format("export HF_TOKEN={}\n", u.hf_token);
  s += "export TOKENIZERS_PARALLELISM=false\n\n";
  s += fmt::format("accelerate launch --num_processes {} --mixed_precision bf16 finetune.py \\\n",
                   a.gpus);
  s += fmt::format("    --model_name_or_path {} \\\n", m.name);
  s += fmt::format("    --dataset {} --max_seq_length {} \\\n",
                   kLlmDatasets[static_cast<size_t>(a.dataset)], a.seq_len);
  s += fmt::format("    --per_device_train_batch_size {} --gradient_accumulation_steps {} \\\n",
                   a.batch, std::max(1, 16 / a.batch));
  if (a.lora) s += "    --use_lora --lora_r 16 --lora_alpha 32 \\\n";
  if (a.checkpointing) s += "    --gradient_checkpointing \\\n";
  s += fmt::format("    --num_train_epochs {} --output_dir {}/ckpt/{}\n", 1 + variant % 3, scratch,
                   job_name_for(a));
  return s;
}

std::string alignment(const Args& a, const User& u) {
  const auto& ref = kReferences[static_cast<size_t>(a.model)];
  const auto ds = kAlignDatasets[static_cast<size_t>(a.dataset)].name;
  std::string s = "module load bwa/0.7.17 samtools/1.17\n\n";
  s += fmt::format("cd /scratch/{}/{}\n", u.name, ds);
  s += "SAMPLE=$(sed -n \"${SLURM_ARRAY_TASK_ID}p\" samples.txt)\n";
  s += fmt::format("REF=/shared/references/{0}/{0}.fa\n\n", ref.name);
  s += fmt::format("bwa mem -t {} -R \"@RG\\tID:${{SAMPLE}}\\tSM:${{SAMPLE}}\" $REF \\\n",
                   a.threads);
  s += "    fastq/${SAMPLE}_R1.fastq.gz fastq/${SAMPLE}_R2.fastq.gz \\\n";
  s += fmt::format("  | samtools sort -@ {} -m {}M -o bam/${{SAMPLE}}.bam -\n", a.threads,
                   a.sort_mem_mib);
  s += "samtools index bam/${SAMPLE}.bam\n";
  return s;
}

std::string molecular_dynamics(const Args& a, const Request& r, const User& u) {
  const auto sys = kMdSystems[static_cast<size_t>(a.model)].name;
  std::string s = "module load gromacs/2023.3-mpi\n";
  s += "export OMP_NUM_THREADS=1\n\n";
  s += fmt::format("cd /home/{}/md/{}\n", u.name, sys);
  s += fmt::format("srun gmx_mpi mdrun -s {0}.tpr -deffnm {0}_prod -nsteps {1}000 -ntomp 1 "
                   "-maxh {2}\n",
                   sys, a.nsteps_k, std::max<int64_t>(1, r.time_s / 3600 - 1));
  return s;
}

std::string feature_etl(const Args& a, const User& u) {
  const std::string home = "/home/" + u.name;
  const auto ds = kEtlDatasets[static_cast<size_t>(a.dataset)].name;
  std::string s = "module load python/3.11\n";
  s += fmt::format("source {}/envs/{}/bin/activate\n\n", home, u.env);
  s += fmt::format("python {}/projects/features/build_features.py \\\n", home);
  s += fmt::format("    --input /project/{}/data/{}_{}.parquet \\\n", u.account, ds, 2019 + a.year);
  s += fmt::format("    --engine {} --threads {} \\\n", a.polars ? "polars" : "pandas", a.threads);
  s += fmt::format("    --output /scratch/{}/features/{}_{}.parquet\n", u.name, ds, 2019 + a.year);
  return s;
}

}  // namespace

std::string job_name_for(const Args& a) {
  switch (a.family) {
    case Family::kImageTraining:
      return fmt::format("{}-{}", kImageModels[static_cast<size_t>(a.model)].name,
                         kImageDatasets[static_cast<size_t>(a.dataset)]);
    case Family::kLlmFinetune: {
      std::string_view m = kLlmModels[static_cast<size_t>(a.model)].name;
      m.remove_prefix(m.find('/') + 1);
      return fmt::format("ft-{}-{}", m, a.lora ? "lora" : "full");
    }
    case Family::kAlignment:
      return fmt::format("bwa-{}", kAlignDatasets[static_cast<size_t>(a.dataset)].name);
    case Family::kMolecularDynamics:
      return fmt::format("md-{}", kMdSystems[static_cast<size_t>(a.model)].name);
    case Family::kFeatureEtl:
      return fmt::format("features-{}", kEtlDatasets[static_cast<size_t>(a.dataset)].name);
  }
  return "job";
}

std::string render_script(const Args& a, const Request& r, const User& u, int variant) {
  std::string s = header(a, r, u);
  switch (a.family) {
    case Family::kImageTraining: return s + image_training(a, u, variant);
    case Family::kLlmFinetune: return s + llm_finetune(a, u, variant);
    case Family::kAlignment: return s + alignment(a, u);
    case Family::kMolecularDynamics: return s + molecular_dynamics(a, r, u);
    case Family::kFeatureEtl: return s + feature_etl(a, u);
  }
  return s;
}

}  // namespace peakcast::synth
