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

# Attention's batched matmuls (issue #31), batch 1 x heads: scores S = Q.K^T (B x S x S, K = head
# dim; K is stored S x head_dim, so B is transposed: NT) and the context P.V (B x S x head_dim,
# K = S; NN). BERT-base: 12 heads of 64, sequences 128 and 512; Llama-2-7B: 32 heads of 128,
# sequence 512.
def bmm(b, m, n, k, layout):
    return f"batch_matmul:{layout}:{b}x{m}x{n}x{k}:f32*f32->f32"

attn = []
for model, heads, dh, seqs in (("bert-base", 12, 64, (128, 512)), ("llama2-7b", 32, 128, (512,))):
    for s in seqs:
        attn.append({"name": f"{model}-qkt-s{s}", "key": bmm(heads, s, s, dh, "NT")})
        attn.append({"name": f"{model}-pv-s{s}", "key": bmm(heads, s, dh, s, "NN")})
write("attention_bmm", "Attention batched matmuls (Q.K^T NT and P.V NN) of BERT-base and Llama-2-7B, f32.",
      "BERT-base (Devlin et al. 2019: 12 heads x 64), Llama 2 7B (32 heads x 128); batch 1", attn)

# ResNet-50 v1.5's 23 distinct convolutions (224x224, batch 1; issue #31) as benchdnn descriptors,
# each with its number of occurrences in the network (53 convolutions in all): torchvision's
# bottleneck (1x1, 3x3 with the stage's stride, 1x1) and the 1x1 strided downsample of each
# stage's first block. The first block of layer1 has a 1x1 64->256 downsample of the same shape
# as its third conv, hence the count 4.
def conv(desc):
    return f"conv2d:NHWC:{desc}:f32*f32->f32"

r50 = [("conv1-7x7-s2", "mb1ic3ih224oc64kh7sh2ph3", 1),
       ("l1-1x1-64-64", "mb1ic64ih56oc64kh1", 1), ("l1-3x3-64-64", "mb1ic64ih56oc64kh3ph1", 3),
       ("l1-1x1-64-256", "mb1ic64ih56oc256kh1", 4), ("l1-1x1-256-64", "mb1ic256ih56oc64kh1", 2)]
for stage, (c_in, width, out, ih, blocks) in enumerate([(256, 128, 512, 56, 4), (512, 256, 1024, 28, 6),
                                                          (1024, 512, 2048, 14, 3)], start=2):
    o = ih // 2
    r50 += [(f"l{stage}-1x1-{c_in}-{width}", f"mb1ic{c_in}ih{ih}oc{width}kh1", 1),
            (f"l{stage}-3x3-{width}-{width}-s2", f"mb1ic{width}ih{ih}oc{width}kh3sh2ph1", 1),
            (f"l{stage}-1x1-{width}-{out}", f"mb1ic{width}ih{o}oc{out}kh1", blocks),
            (f"l{stage}-down-{c_in}-{out}-s2", f"mb1ic{c_in}ih{ih}oc{out}kh1sh2", 1),
            (f"l{stage}-1x1-{out}-{width}", f"mb1ic{out}ih{o}oc{width}kh1", blocks - 1),
            (f"l{stage}-3x3-{width}-{width}", f"mb1ic{width}ih{o}oc{width}kh3ph1", blocks - 1)]
assert len(r50) == 23 and sum(n for _, _, n in r50) == 53
write("resnet50_conv", "ResNet-50 v1.5 convolutions (224x224, batch 1), f32 NHWC/HWCF, with their counts.",
      "He et al. 2016 (ResNet-50 layer table), torchvision v1.5 (stride in the 3x3); 53 convs, 23 distinct",
      [{"name": f"resnet50-{n}", "key": conv(d), "count": c} for n, d, c in r50])

# MobileNetV2 (224x224, batch 1; Sandler et al. 2018, Table 2: t, c, n, s per bottleneck group),
# its distinct depthwise 3x3 and pointwise 1x1 convolutions with their counts (17 depthwise, 34
# pointwise: the expansions, projections and the final 1x1 320->1280). The stem (3x3/2, 3->32) is
# a plain convolution and is left out.
dw, pw = {}, {}
def add(d, key, name):
    if key in d:
        d[key][1] += 1
    else:
        d[key] = [name, 1]
cin, size = 32, 112
for t, c, n, s in [(1, 16, 1, 1), (6, 24, 2, 2), (6, 32, 3, 2), (6, 64, 4, 2), (6, 96, 3, 1), (6, 160, 3, 2),
                   (6, 320, 1, 1)]:
    for i in range(n):
        stride = s if i == 0 else 1
        hidden = cin * t
        if t != 1:
            add(pw, f"mb1ic{cin}ih{size}oc{hidden}kh1", f"pw-{cin}-{hidden}-{size}")
        add(dw, f"mb1g{hidden}ic{hidden}oc{hidden}ih{size}kh3sh{stride}ph1", f"dw-{hidden}-{size}-s{stride}")
        size = size // stride
        add(pw, f"mb1ic{hidden}ih{size}oc{c}kh1", f"pw-{hidden}-{c}-{size}")
        cin = c
add(pw, f"mb1ic{cin}ih{size}oc1280kh1", f"pw-{cin}-1280-{size}")
assert sum(v[1] for v in dw.values()) == 17 and sum(v[1] for v in pw.values()) == 34
write("mobilenetv2_conv", "MobileNetV2 depthwise and pointwise convolutions (224x224, batch 1), f32 NHWC, with their counts.",
      "Sandler et al. 2018 (MobileNetV2, Table 2); 17 depthwise 3x3 and 34 pointwise 1x1 convolutions",
      [{"name": f"mobilenetv2-{v[0]}", "key": conv(k), "count": v[1]} for d in (dw, pw) for k, v in d.items()])
