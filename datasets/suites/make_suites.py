#!/usr/bin/env python3
"""Writes the workload suites (JSON) of this folder. Run it to regenerate them; the shapes and
their sources are in the code below."""
import json

def gemm(m, n, k, dtype="f32", layout="NN"):
    return f"gemm:{layout}:{m}x{n}x{k}:{dtype}*{dtype}->f32"

def write(name, description, source, workloads):
    with open(f"{name}.json", "w") as f:
        json.dump({"format": "sextant-suite", "version": 1, "name": name, "description": description,
                   "source": source, "workloads": workloads}, f, indent=1)
        f.write("\n")

write("square_gemm", "Square f32 and f16 GEMMs, 128 to 8192.", "powers of two",
      [{"name": f"square-{s}-{d}", "key": gemm(s, s, s, d)} for d in ("f32", "f16") for s in
       (128, 256, 512, 1024, 2048, 4096, 8192)])

# Llama-2-7B (hidden 4096, intermediate 11008, vocabulary 32000; weights stored [out, in], so
# the GEMM is tokens x in times in x out with B transposed: NT). Token counts 1..4096.
# q, k, v and o projections share one shape, as do gate and up.
llama = [("qkvo_proj", 4096, 4096), ("gate_up_proj", 11008, 4096), ("down_proj", 4096, 11008),
         ("lm_head", 32000, 4096)]
seen, wl = set(), []
for t in [1 << i for i in range(13)]:
    for name, out, inp in llama:
        key = gemm(t, out, inp, "f16", "NT")
        if key in seen:
            continue
        seen.add(key)
        wl.append({"name": f"llama2-7b-{name}-t{t}", "key": key})
write("llm_projections", "Llama-2-7B projection GEMMs (f16, NT) for 1 to 4096 tokens.",
      "Llama 2 paper, Table/Appendix model configuration (7B: d_model 4096, FFN 11008, vocab 32000)", wl)

# ResNet-50 v1.5 at 224x224, batch 1, as implicit GEMMs: M = output pixels (P*Q), N = output
# channels, K = input channels * R * S. Distinct layer shapes only.
convs = [
    ("conv1-7x7-s2", 112 * 112, 64, 3 * 7 * 7),
    ("l1-1x1-64-64", 56 * 56, 64, 64), ("l1-3x3-64-64", 56 * 56, 64, 64 * 9),
    ("l1-1x1-64-256", 56 * 56, 256, 64), ("l1-1x1-256-64", 56 * 56, 64, 256),
    ("l2-1x1-256-128", 56 * 56, 128, 256), ("l2-3x3-128-128-s2", 28 * 28, 128, 128 * 9),
    ("l2-3x3-128-128", 28 * 28, 128, 128 * 9), ("l2-1x1-128-512", 28 * 28, 512, 128),
    ("l2-1x1-512-128", 28 * 28, 128, 512), ("l2-down-256-512-s2", 28 * 28, 512, 256),
    ("l3-1x1-512-256", 28 * 28, 256, 512), ("l3-3x3-256-256-s2", 14 * 14, 256, 256 * 9),
    ("l3-3x3-256-256", 14 * 14, 256, 256 * 9), ("l3-1x1-256-1024", 14 * 14, 1024, 256),
    ("l3-1x1-1024-256", 14 * 14, 256, 1024), ("l3-down-512-1024-s2", 14 * 14, 1024, 512),
    ("l4-1x1-1024-512", 14 * 14, 512, 1024), ("l4-3x3-512-512-s2", 7 * 7, 512, 512 * 9),
    ("l4-3x3-512-512", 7 * 7, 512, 512 * 9), ("l4-1x1-512-2048", 7 * 7, 2048, 512),
    ("l4-1x1-2048-512", 7 * 7, 512, 2048), ("l4-down-1024-2048-s2", 7 * 7, 2048, 1024),
    ("fc", 1, 1000, 2048),
]
write("resnet50_implicit_gemm", "ResNet-50 v1.5 convolutions (224x224, batch 1) as implicit GEMMs, f32.",
      "He et al. 2016 (ResNet-50 layer table), torchvision v1.5 (stride in the 3x3)",
      [{"name": f"resnet50-{n}", "key": gemm(m, n2, k)} for n, m, n2, k in convs])
