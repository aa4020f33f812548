#!/usr/bin/python3
"""Makes the small ONNX models of tune model's tests, with their inputs and the outputs NumPy
computes for them (raw little-endian f32 files beside each model: NAME.in0.f32, NAME.out0.f32).

Needs Debian's python3-onnx and python3-numpy (run with /usr/bin/python3). Deterministic: seed 7.
Run from anywhere: python3 tests/data/models/make_models.py  (writes next to this script).
"""
import math
import os

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

HERE = os.path.dirname(os.path.abspath(__file__))
rng = np.random.default_rng(7)


def rnd(*shape, scale=0.5):
    return (rng.standard_normal(shape) * scale).astype(np.float32)


# ---- NumPy reference ops (NCHW, as ONNX defines them) ----
def conv(x, w, b=None, stride=1, pad=(0, 0, 0, 0), group=1, dil=1):
    n, c, h, wd = x.shape
    f, cg, kh, kw = w.shape
    xp = np.pad(x, ((0, 0), (0, 0), (pad[0], pad[2]), (pad[1], pad[3])))
    oh = (xp.shape[2] - dil * (kh - 1) - 1) // stride + 1
    ow = (xp.shape[3] - dil * (kw - 1) - 1) // stride + 1
    y = np.zeros((n, f, oh, ow), np.float64)
    fg = f // group
    for g in range(group):
        xs = xp[:, g * cg:(g + 1) * cg]
        for i in range(kh):
            for j in range(kw):
                patch = xs[:, :, i * dil:i * dil + stride * (oh - 1) + 1:stride, j * dil:j * dil + stride * (ow - 1) + 1:stride]
                y[:, g * fg:(g + 1) * fg] += np.einsum("nchw,fc->nfhw", patch, w[g * fg:(g + 1) * fg, :, i, j])
    if b is not None:
        y += b.reshape(1, -1, 1, 1)
    return y.astype(np.float32)


def maxpool(x, k, s, pad=(0, 0, 0, 0)):
    xp = np.pad(x, ((0, 0), (0, 0), (pad[0], pad[2]), (pad[1], pad[3])), constant_values=-np.inf)
    oh = (xp.shape[2] - k) // s + 1
    ow = (xp.shape[3] - k) // s + 1
    y = np.full(x.shape[:2] + (oh, ow), -np.inf, np.float32)
    for i in range(k):
        for j in range(k):
            y = np.maximum(y, xp[:, :, i:i + s * (oh - 1) + 1:s, j:j + s * (ow - 1) + 1:s])
    return y


def avgpool(x, k, s):
    oh = (x.shape[2] - k) // s + 1
    ow = (x.shape[3] - k) // s + 1
    y = np.zeros(x.shape[:2] + (oh, ow), np.float64)
    for i in range(k):
        for j in range(k):
            y += x[:, :, i:i + s * (oh - 1) + 1:s, j:j + s * (ow - 1) + 1:s]
    return (y / (k * k)).astype(np.float32)


def softmax(x, axis=-1):
    e = np.exp(x - x.max(axis=axis, keepdims=True))
    return e / e.sum(axis=axis, keepdims=True)


def layernorm(x, g, b, eps=1e-5):
    m = x.mean(-1, keepdims=True)
    v = ((x - m) ** 2).mean(-1, keepdims=True)
    return (x - m) / np.sqrt(v + eps) * g + b


def erf(x):
    return np.vectorize(math.erf)(x.astype(np.float64)).astype(np.float32)


def save(name, graph, inputs, outputs, opset=13):
    model = helper.make_model(graph, producer_name="sextant-tests", opset_imports=[helper.make_opsetid("", opset)])
    model.ir_version = 8
    onnx.checker.check_model(model)
    onnx.save(model, os.path.join(HERE, name + ".onnx"))
    for i, a in enumerate(inputs):
        np.ascontiguousarray(a, np.float32).tofile(os.path.join(HERE, f"{name}.in{i}.f32"))
    for i, a in enumerate(outputs):
        np.ascontiguousarray(a, np.float32).tofile(os.path.join(HERE, f"{name}.out{i}.f32"))


def init(name, a):
    return numpy_helper.from_array(np.asarray(a), name)


def vi(name, shape, t=TensorProto.FLOAT):
    return helper.make_tensor_value_info(name, t, shape)


# ---- 1. A small CNN: conv + bias + relu, max pool, batch norm, residual add, depthwise, 1x1,
# grouped conv, strided conv with asymmetric padding, strided 1x1 conv, average pool, global average
# pool, FC. ----
def cnn():
    x = rnd(1, 3, 16, 16, scale=1.0)
    w1, b1 = rnd(8, 3, 3, 3), rnd(8)
    w2 = rnd(8, 8, 3, 3, scale=0.2)
    bn_s, bn_b, bn_m, bn_v = rnd(8) + 1, rnd(8), rnd(8), np.abs(rnd(8)) + 0.5
    wd, bd = rnd(8, 1, 3, 3), rnd(8)
    wp = rnd(16, 8, 1, 1, scale=0.3)
    wg, bg = rnd(16, 8, 3, 3, scale=0.2), rnd(16)
    ws = rnd(16, 16, 3, 3, scale=0.2)
    wds = rnd(16, 16, 1, 1, scale=0.3)
    wfc, bfc = rnd(10, 16), rnd(10)
    nodes = [
        helper.make_node("Conv", ["x", "w1", "b1"], ["c1"], pads=[1, 1, 1, 1], kernel_shape=[3, 3]),
        helper.make_node("Relu", ["c1"], ["r1"]),
        helper.make_node("MaxPool", ["r1"], ["p1"], kernel_shape=[2, 2], strides=[2, 2]),
        helper.make_node("Conv", ["p1", "w2"], ["c2"], pads=[1, 1, 1, 1]),
        helper.make_node("BatchNormalization", ["c2", "bn_s", "bn_b", "bn_m", "bn_v"], ["n2"], epsilon=1e-5),
        helper.make_node("Add", ["n2", "p1"], ["a2"]),
        helper.make_node("Relu", ["a2"], ["r2"]),
        helper.make_node("Conv", ["r2", "wd", "bd"], ["c3"], pads=[1, 1, 1, 1], group=8),
        helper.make_node("Clip", ["c3", "lo", "hi"], ["r3"]),
        helper.make_node("Conv", ["r3", "wp"], ["c4"]),
        helper.make_node("Conv", ["c4", "wg", "bg"], ["c5"], pads=[1, 1, 1, 1], group=2),
        helper.make_node("Sigmoid", ["c5"], ["s5"]),
        helper.make_node("Mul", ["c5", "s5"], ["m5"]),
        helper.make_node("Conv", ["m5", "ws"], ["c6"], pads=[1, 1, 0, 0], strides=[2, 2]),
        helper.make_node("Conv", ["m5", "wds"], ["ds"], strides=[2, 2]),
        helper.make_node("Add", ["c6", "ds"], ["c6b"]),
        helper.make_node("AveragePool", ["c6b"], ["p6"], kernel_shape=[2, 2], strides=[1, 1]),
        helper.make_node("GlobalAveragePool", ["p6"], ["g"]),
        helper.make_node("Flatten", ["g"], ["f"], axis=1),
        helper.make_node("Gemm", ["f", "wfc", "bfc"], ["y"], transB=1),
    ]
    inits = [init("w1", w1), init("b1", b1), init("w2", w2), init("bn_s", bn_s), init("bn_b", bn_b),
             init("bn_m", bn_m), init("bn_v", bn_v), init("wd", wd), init("bd", bd), init("wp", wp),
             init("wg", wg), init("bg", bg), init("ws", ws), init("wds", wds), init("wfc", wfc), init("bfc", bfc),
             init("lo", np.float32(0)), init("hi", np.float32(6))]
    g = helper.make_graph(nodes, "cnn", [vi("x", [1, 3, 16, 16])], [vi("y", [1, 10])], inits)
    # NumPy
    r1 = np.maximum(conv(x, w1, b1, pad=(1, 1, 1, 1)), 0)
    p1 = maxpool(r1, 2, 2)
    c2 = conv(p1, w2, pad=(1, 1, 1, 1))
    n2 = (c2 - bn_m.reshape(1, -1, 1, 1)) / np.sqrt(bn_v.reshape(1, -1, 1, 1) + 1e-5) * bn_s.reshape(1, -1, 1, 1) \
        + bn_b.reshape(1, -1, 1, 1)
    r2 = np.maximum(n2 + p1, 0)
    r3 = np.clip(conv(r2, wd, bd, pad=(1, 1, 1, 1), group=8), 0, 6)
    c4 = conv(r3, wp)
    c5 = conv(c4, wg, bg, pad=(1, 1, 1, 1), group=2)
    m5 = c5 * (1 / (1 + np.exp(-c5)))
    c6 = conv(m5, ws, stride=2, pad=(1, 1, 0, 0))
    c6 = c6 + conv(m5, wds, stride=2)
    p6 = avgpool(c6, 2, 1)
    f = p6.mean(axis=(2, 3))
    y = f @ wfc.T + bfc
    save("cnn", g, [x], [y])


# ---- 2. A transformer encoder layer in miniature: projections, Q.K^T, softmax, P.V, residual,
# layer norm, GELU (erf), FFN, with the shape arithmetic exporters emit (Shape, Gather, Unsqueeze,
# Concat, Reshape) and head split / merge by Reshape + Transpose. ----
def encoder():
    s, d, h, ff = 8, 16, 2, 32
    dh = d // h
    x = rnd(1, s, d, scale=1.0)
    wq, wk, wv, wo = (rnd(d, d, scale=0.3) for _ in range(4))
    bq = rnd(d)
    w1, b1, w2, b2 = rnd(d, ff, scale=0.3), rnd(ff), rnd(ff, d, scale=0.3), rnd(d)
    g1, be1 = rnd(d) + 1, rnd(d)
    i64 = lambda v: np.array(v, np.int64)
    nodes = [
        helper.make_node("MatMul", ["x", "wq"], ["q0"]),
        helper.make_node("Add", ["q0", "bq"], ["q"]),
        helper.make_node("MatMul", ["x", "wk"], ["k"]),
        helper.make_node("MatMul", ["x", "wv"], ["v"]),
        # [1, s, d] -> [1, s, h, dh] -> [1, h, s, dh], the target shape computed from Shape(x)
        helper.make_node("Shape", ["x"], ["xs"]),
        helper.make_node("Gather", ["xs", "i0"], ["b_dim"], axis=0),
        helper.make_node("Gather", ["xs", "i1"], ["s_dim"], axis=0),
        helper.make_node("Unsqueeze", ["b_dim", "ax0"], ["b_u"]),
        helper.make_node("Unsqueeze", ["s_dim", "ax0"], ["s_u"]),
        helper.make_node("Concat", ["b_u", "s_u", "hd"], ["split_shape"], axis=0),
        helper.make_node("Reshape", ["q", "split_shape"], ["q4"]),
        helper.make_node("Reshape", ["k", "split_shape"], ["k4"]),
        helper.make_node("Reshape", ["v", "split_shape"], ["v4"]),
        helper.make_node("Transpose", ["q4"], ["qh"], perm=[0, 2, 1, 3]),
        helper.make_node("Transpose", ["k4"], ["kt"], perm=[0, 2, 3, 1]),
        helper.make_node("Transpose", ["v4"], ["vh"], perm=[0, 2, 1, 3]),
        helper.make_node("MatMul", ["qh", "kt"], ["sc"]),
        helper.make_node("Div", ["sc", "sqrt_dh"], ["scs"]),
        helper.make_node("Softmax", ["scs"], ["p"], axis=-1),
        helper.make_node("MatMul", ["p", "vh"], ["o4"]),
        helper.make_node("Transpose", ["o4"], ["o4t"], perm=[0, 2, 1, 3]),
        helper.make_node("Reshape", ["o4t", "merge_shape"], ["o"]),
        helper.make_node("MatMul", ["o", "wo"], ["att"]),
        helper.make_node("Add", ["att", "x"], ["res1"]),
        # layer norm as the exporters of opset 13 write it
        helper.make_node("ReduceMean", ["res1"], ["mu"], axes=[-1]),
        helper.make_node("Sub", ["res1", "mu"], ["dx"]),
        helper.make_node("Pow", ["dx", "two"], ["dx2"]),
        helper.make_node("ReduceMean", ["dx2"], ["var"], axes=[-1]),
        helper.make_node("Add", ["var", "eps"], ["ve"]),
        helper.make_node("Sqrt", ["ve"], ["sd"]),
        helper.make_node("Div", ["dx", "sd"], ["nrm"]),
        helper.make_node("Mul", ["nrm", "g1"], ["nrm_g"]),
        helper.make_node("Add", ["nrm_g", "be1"], ["ln1"]),
        # FFN with GELU(erf)
        helper.make_node("MatMul", ["ln1", "w1"], ["f0"]),
        helper.make_node("Add", ["f0", "b1"], ["f1"]),
        helper.make_node("Div", ["f1", "sqrt2"], ["f1s"]),
        helper.make_node("Erf", ["f1s"], ["f1e"]),
        helper.make_node("Add", ["f1e", "one"], ["f1p"]),
        helper.make_node("Mul", ["f1", "f1p"], ["f1m"]),
        helper.make_node("Mul", ["f1m", "half"], ["gelu"]),
        helper.make_node("MatMul", ["gelu", "w2"], ["f2"]),
        helper.make_node("Add", ["f2", "b2"], ["f3"]),
        helper.make_node("Add", ["f3", "ln1"], ["y"]),
    ]
    inits = [init("wq", wq), init("wk", wk), init("wv", wv), init("wo", wo), init("bq", bq), init("w1", w1),
             init("b1", b1), init("w2", w2), init("b2", b2), init("g1", g1), init("be1", be1),
             init("i0", i64(0)), init("i1", i64(1)), init("ax0", i64([0])), init("hd", i64([h, dh])),
             init("merge_shape", i64([1, s, d])), init("sqrt_dh", np.float32(math.sqrt(dh))),
             init("two", np.float32(2)), init("eps", np.float32(1e-5)), init("sqrt2", np.float32(math.sqrt(2))),
             init("one", np.float32(1)), init("half", np.float32(0.5))]
    g = helper.make_graph(nodes, "encoder", [vi("x", [1, s, d])], [vi("y", [1, s, d])], inits)
    q = (x @ wq + bq).reshape(1, s, h, dh).transpose(0, 2, 1, 3)
    k = (x @ wk).reshape(1, s, h, dh).transpose(0, 2, 3, 1)
    v = (x @ wv).reshape(1, s, h, dh).transpose(0, 2, 1, 3)
    p = softmax((q @ k) / math.sqrt(dh))
    o = (p @ v).transpose(0, 2, 1, 3).reshape(1, s, d)
    ln1 = layernorm(o @ wo + x, g1, be1)
    f1 = ln1 @ w1 + b1
    y = (f1 * (erf(f1 / math.sqrt(2)) + 1) * 0.5) @ w2 + b2 + ln1
    save("encoder", g, [x], [y])


# ---- 3. Models that must be refused, each with one clear line. ----
def refused():
    # an operator the importer does not know
    g = helper.make_graph([helper.make_node("Hardmax", ["x"], ["y"], axis=1)], "unsupported",
                          [vi("x", [1, 4])], [vi("y", [1, 4])])
    save("unsupported_op", g, [], [])
    # a dynamic batch dimension (needs --input-shape)
    g = helper.make_graph([helper.make_node("Relu", ["x"], ["y"])], "dynamic",
                          [vi("x", ["N", 4])], [vi("y", ["N", 4])])
    save("dynamic_batch", g, [], [])
    with open(os.path.join(HERE, "corrupt.onnx"), "wb") as f:
        f.write(b"\x08\x07\x12\x0bnot a model at all")


cnn()
encoder()
refused()
print("wrote the models to", HERE)
