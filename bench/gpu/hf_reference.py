#!/usr/bin/env python3
"""Writes a random Qwen2 checkpoint with transformers' own Qwen2ForCausalLM and its outputs in the
fixtures' reference.json format, so qwen2_bench --reference DIR compares peakcast's forward with
transformers itself (bench/gpu/run.sh step 2). Shapes differ from the fixtures on purpose: other
hidden size, 3 layers, 8 query / 2 kv heads, untied lm_head, rope_theta 1e6.

    python3 bench/gpu/hf_reference.py --out DIR
"""
import argparse
import json
import os


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--out", required=True, help="directory for the checkpoint and reference.json")
    args = ap.parse_args()
    # After the arguments: --help (and a usage error) need neither torch nor transformers.
    import torch
    from transformers import Qwen2Config, Qwen2ForCausalLM

    torch.manual_seed(20261130)
    torch.backends.cuda.matmul.allow_tf32 = False
    cfg = Qwen2Config(vocab_size=3000, hidden_size=256, intermediate_size=688, num_hidden_layers=3,
                      num_attention_heads=8, num_key_value_heads=2, max_position_embeddings=4096,
                      rope_theta=1e6, rms_norm_eps=1e-6, tie_word_embeddings=False,
                      attn_implementation="eager", torch_dtype="float32")
    model = Qwen2ForCausalLM(cfg).float().eval()
    with torch.no_grad():  # biases and norms away from their init values
        for name, p in model.named_parameters():
            if name.endswith("bias"):
                p.normal_(0.0, 0.02)
            elif "norm" in name:
                p.copy_(1.0 + 0.1 * torch.randn_like(p))
    os.makedirs(args.out, exist_ok=True)
    model.save_pretrained(args.out, safe_serialization=True)
    gen = torch.Generator().manual_seed(7)
    inputs = []
    for n in (1, 9, 130):
        ids = torch.randint(0, cfg.vocab_size, (1, n), generator=gen)
        with torch.no_grad():
            out = model.model(input_ids=ids)
            h = out.last_hidden_state[0]
            logits = model.lm_head(h[-1])
        pos = sorted({p for p in (0, 1, 2, n - 1) if p < n})
        inputs.append({"name": f"len{n}", "seq_len": n, "input_ids": ids[0].tolist(),
                       "hidden_positions": pos, "final_hidden": [h[p].tolist() for p in pos],
                       "mean_pooled": h.mean(0).tolist(), "last_token": h[-1].tolist(),
                       "logits_last_first16": logits[:16].tolist()})
    ref = {"format": "peakcast-qwen2-reference", "compute": "transformers Qwen2ForCausalLM float32 eager",
           "inputs": inputs,
           "tolerance": {"recommended_atol": {"hidden": 1e-4, "pooled": 1e-4, "logits16": 1e-5}}}
    with open(os.path.join(args.out, "reference.json"), "w") as f:
        json.dump(ref, f)
    print(f"wrote {args.out} (transformers {__import__('transformers').__version__})")


if __name__ == "__main__":
    main()
