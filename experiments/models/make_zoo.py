#!/usr/bin/python3
"""The model zoo of experiments/models_vs_peers.sh (issue #32), from real modules with random
weights (fixed seed; batch norms given trained-like statistics; nothing downloaded), exported to ONNX with Debian's python3-torch 1.13 /
python3-torchvision 0.14 (run with /usr/bin/python3):

  resnet50        torchvision ResNet-50, batch 1, 3x224x224
  mobilenet_v2    torchvision MobileNetV2, batch 1, 3x224x224
  bert_layer      a BERT-base encoder layer (d 768, 12 heads, FFN 3072, GELU), sequence 128
  llama_prefill   a Llama-style decoder block at TinyLlama-1.1B sizes (d 2048, 32 heads, FFN 5632,
                  RMSNorm, SwiGLU, rotary embeddings, causal mask), 128 tokens
  llama_decode    the same block, one token (no KV cache: the token attends to itself)

Writes OUT/NAME.onnx and OUT/NAME.in0.f32 / NAME.out0.f32 (PyTorch's output for a fixed input,
raw little-endian f32) for each. Usage: make_zoo.py OUT_DIR [NAME ...]
"""
import math
import os
import sys

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F
import torchvision


class BertLayer(nn.Module):
    def __init__(self, d=768, heads=12, ff=3072):
        super().__init__()
        self.h, self.dh = heads, d // heads
        self.q, self.k, self.v, self.o = (nn.Linear(d, d) for _ in range(4))
        self.ln1, self.ln2 = nn.LayerNorm(d), nn.LayerNorm(d)
        self.f1, self.f2 = nn.Linear(d, ff), nn.Linear(ff, d)

    def forward(self, x):
        b, s, d = x.shape
        split = lambda t: t.view(b, s, self.h, self.dh).transpose(1, 2)
        q, k, v = split(self.q(x)), split(self.k(x)), split(self.v(x))
        p = torch.softmax(q @ k.transpose(-1, -2) / math.sqrt(self.dh), dim=-1)
        a = (p @ v).transpose(1, 2).reshape(b, s, d)
        x = self.ln1(x + self.o(a))
        return self.ln2(x + self.f2(F.gelu(self.f1(x))))


class RMSNorm(nn.Module):
    def __init__(self, d, eps=1e-5):
        super().__init__()
        self.w, self.eps = nn.Parameter(torch.ones(d) + 0.1 * torch.randn(d)), eps

    def forward(self, x):
        return x / torch.sqrt(x.pow(2).mean(-1, keepdim=True) + self.eps) * self.w


class LlamaBlock(nn.Module):
    def __init__(self, seq, d=2048, heads=32, ff=5632):
        super().__init__()
        self.h, self.dh = heads, d // heads
        self.q, self.k, self.v, self.o = (nn.Linear(d, d, bias=False) for _ in range(4))
        self.gate, self.up = nn.Linear(d, ff, bias=False), nn.Linear(d, ff, bias=False)
        self.down = nn.Linear(ff, d, bias=False)
        self.n1, self.n2 = RMSNorm(d), RMSNorm(d)
        inv = 1.0 / (10000 ** (torch.arange(0, self.dh, 2).float() / self.dh))
        ang = torch.arange(seq).float()[:, None] * inv[None, :]
        self.register_buffer("cos", torch.cat([ang.cos(), ang.cos()], -1))
        self.register_buffer("sin", torch.cat([ang.sin(), ang.sin()], -1))
        self.register_buffer("mask", torch.triu(torch.full((seq, seq), -1e9), 1))

    def rope(self, t):
        half = self.dh // 2
        rot = torch.cat([-t[..., half:], t[..., :half]], -1)
        return t * self.cos + rot * self.sin

    def forward(self, x):
        b, s, d = x.shape
        split = lambda t: t.view(b, s, self.h, self.dh).transpose(1, 2)
        y = self.n1(x)
        q, k, v = self.rope(split(self.q(y))), self.rope(split(self.k(y))), split(self.v(y))
        p = torch.softmax(q @ k.transpose(-1, -2) / math.sqrt(self.dh) + self.mask, dim=-1)
        x = x + self.o((p @ v).transpose(1, 2).reshape(b, s, d))
        y = self.n2(x)
        return x + self.down(F.silu(self.gate(y)) * self.up(y))


def trained_like(m):
    """Batch-norm statistics and affine parameters as a trained network has them (fresh ones are
    the identity, and MobileNetV2's output then collapses to ~1e-9: nothing to check against)."""
    g = torch.Generator().manual_seed(1)
    for mod in m.modules():
        if isinstance(mod, nn.BatchNorm2d):
            c = mod.num_features
            mod.weight.data = 0.5 + torch.rand(c, generator=g)
            mod.bias.data = 0.1 * torch.randn(c, generator=g)
            mod.running_mean.data = 0.1 * torch.randn(c, generator=g)
            mod.running_var.data = 0.5 + torch.rand(c, generator=g)
    return m


def models():
    return {
        "resnet50": (lambda: trained_like(torchvision.models.resnet50(weights=None)), (1, 3, 224, 224)),
        "mobilenet_v2": (lambda: trained_like(torchvision.models.mobilenet_v2(weights=None)), (1, 3, 224, 224)),
        "bert_layer": (lambda: BertLayer(), (1, 128, 768)),
        "llama_prefill": (lambda: LlamaBlock(128), (1, 128, 2048)),
        "llama_decode": (lambda: LlamaBlock(1), (1, 1, 2048)),
    }


def main():
    out = sys.argv[1]
    names = sys.argv[2:] or list(models())
    os.makedirs(out, exist_ok=True)
    for name in names:
        torch.manual_seed(0)
        make, shape = models()[name]
        m = make().eval()
        x = torch.randn(*shape)
        with torch.no_grad():
            y = m(x)
            torch.onnx.export(m, (x,), os.path.join(out, name + ".onnx"), opset_version=14,
                              input_names=["x"], output_names=["y"], do_constant_folding=True)
        x.numpy().astype(np.float32).tofile(os.path.join(out, name + ".in0.f32"))
        y.numpy().astype(np.float32).tofile(os.path.join(out, name + ".out0.f32"))
        print(f"{name}: input {tuple(x.shape)} -> output {tuple(y.shape)}", flush=True)


if __name__ == "__main__":
    main()
