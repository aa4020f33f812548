// The GEMM family's ops, workload level (ops.h): `gemm`, C[M,N] = A[M,K] * B[K,N] (linalg.matmul),
// and `batch_matmul`, `batch` independent GEMMs of the same sizes and layout (linalg.batch_matmul,
// every operand with a leading batch dimension; issue #31). Layouts NN, NT (B stored N x K), TN (A
// stored K x M). Verified against OpenBLAS, one sgemm per batch element. Their schedules:
// matmul_cpu.cpp.
#include <sstream>
#include <vector>

#include "payload_text.h"
#include "sextant/codegen/ops.h"
#include "sextant/common/strings.h"

namespace sextant {
using ops_detail::shapedType;

namespace {

// A GEMM operand's type: r x c, with a leading batch dimension when b > 0.
std::string tensorType(int64_t b, int64_t r, int64_t c, DType t) {
  return b > 0 ? shapedType({b, r, c}, t) : shapedType({r, c}, t);
}

// n positive integers separated by 'x'; `syntax` and `example` for the error.
Result<std::vector<int64_t>> parseDims(const std::string& shape, size_t n, const char* syntax, const char* example) {
  auto parts = split(shape, 'x');
  if (parts.size() != n) return Error{"malformed shape '" + shape + "': expected " + syntax + ", e.g. " + example};
  std::vector<int64_t> v(n);
  for (size_t i = 0; i < n; ++i) {
    if (!parseInt64(parts[i], v[i])) return Error{"malformed shape '" + shape + "': '" + parts[i] + "' is not an integer"};
    if (v[i] <= 0) return Error{"invalid shape '" + shape + "': every dimension must be positive"};
    if (v[i] > (int64_t(1) << 20))
      return Error{"invalid shape '" + shape + "': dimension " + parts[i] + " exceeds 1048576"};
  }
  return v;
}

// gemm and batch_matmul: the same op but for the batch dimension.
class MatmulOp : public OpDef {
 public:
  explicit MatmulOp(bool batched) : batched_(batched) {}
  OpKind kind() const override { return batched_ ? OpKind::BatchMatmul : OpKind::Gemm; }
  const char* name() const override { return batched_ ? "batch_matmul" : "gemm"; }
  const char* defaultShape() const override { return batched_ ? "32x256x256x128" : "512x512x512"; }
  const char* shapeSyntax() const override { return batched_ ? "BxMxNxK" : "MxNxK"; }
  const char* summary() const override {
    return batched_ ? "C[b,M,N] = A[b,M,K] * B[b,K,N] for b < B (linalg.batch_matmul); --layout NN, NT (attention's Q.K^T), TN"
                    : "C[M,N] = A[M,K] * B[K,N] (linalg.matmul); --layout NN, NT, TN";
  }
  bool tunesOnGpu() const override { return !batched_; }

  // (The shape's error first, then the dtype's, then the layout's.)
  Result<GemmWorkload> make(const std::string& shape, const std::string& dtype, const std::string& layout) const override {
    if (auto w = parseShape(shape); !w) return w;
    auto dt = parseDType(dtype);
    if (!dt) return Error{dt.error()};
    if (*dt == DType::S32) return Error{"--dtype s32 is an output type: s8 inputs give s32 sums (--dtype s8)"};
    // s8 inputs accumulate into s32 (issue #37), the floating-point ones into f32.
    return fromKey(layout, shape, *dt, *dt, *dt == DType::S8 ? DType::S32 : DType::F32);
  }

  std::string layoutField(const GemmWorkload& w) const override { return layoutName(w.layout); }
  std::string shapeString(const GemmWorkload& w) const override {
    return (batched_ ? std::to_string(w.batch) + "x" : std::string()) + w.gemmShapeString();
  }
  Result<GemmWorkload> fromKey(const std::string& layout, const std::string& shape, DType a, DType b,
                               DType c) const override {
    auto w = parseShape(shape);
    if (!w) return w;
    auto l = parseLayout(layout);
    if (!l) return Error{l.error()};
    w->layout = *l;
    w->a_type = a, w->b_type = b, w->c_type = c;
    return w;
  }

  std::vector<OperandDims> operands(const GemmWorkload& w) const override {
    const bool ta = w.layout == Layout::TN, tb = w.layout == Layout::NT;
    OperandDims a = ta ? OperandDims{w.k, w.m} : OperandDims{w.m, w.k};
    OperandDims b = tb ? OperandDims{w.n, w.k} : OperandDims{w.k, w.n};
    OperandDims c = {w.m, w.n};
    if (batched_)
      for (OperandDims* d : {&a, &b, &c}) d->insert(d->begin(), w.batch);
    return {a, b, c};
  }

  std::string payloadMlir(const GemmWorkload& w) const override {
    const bool ta = w.layout == Layout::TN, tb = w.layout == Layout::NT;
    const int64_t b = batched_ ? w.batch : 0;  // 0: no batch dimension
    const std::string aT = ta ? tensorType(b, w.k, w.m, w.a_type) : tensorType(b, w.m, w.k, w.a_type);
    const std::string bT = tb ? tensorType(b, w.n, w.k, w.b_type) : tensorType(b, w.k, w.n, w.b_type);
    const std::string cT = tensorType(b, w.m, w.n, w.c_type);
    std::string maps;
    if ((ta || tb) && !batched_) {
      maps = std::string(" indexing_maps = [") +
             (ta ? "affine_map<(d0, d1, d2) -> (d2, d0)>" : "affine_map<(d0, d1, d2) -> (d0, d2)>") + ", " +
             (tb ? "affine_map<(d0, d1, d2) -> (d1, d2)>" : "affine_map<(d0, d1, d2) -> (d2, d1)>") +
             ", affine_map<(d0, d1, d2) -> (d0, d1)>]";
    } else if (ta || tb) {
      // MLIR 22 has no batch_matmul_transpose_b: transposed operands are indexing maps
      // (d0 batch, d1 m, d2 n, d3 k).
      maps = std::string(" indexing_maps = [") +
             (ta ? "affine_map<(d0, d1, d2, d3) -> (d0, d3, d1)>" : "affine_map<(d0, d1, d2, d3) -> (d0, d1, d3)>") +
             ", " +
             (tb ? "affine_map<(d0, d1, d2, d3) -> (d0, d2, d3)>" : "affine_map<(d0, d1, d2, d3) -> (d0, d3, d2)>") +
             ", affine_map<(d0, d1, d2, d3) -> (d0, d1, d2)>]";
    }
    const std::string ct = mlirTypeName(w.c_type);
    std::ostringstream o;
    o << ops_detail::payloadHead(w.key(), aT, bT, cT, ct) << "  %z = linalg.fill ins(%zero : " << ct << ") outs(%c : tensor<" << cT << ">) -> tensor<" << cT << ">\n"
      << "  %r = " << (batched_ ? "linalg.batch_matmul" : "linalg.matmul") << maps << " ins(%a, %b : tensor<" << aT
      << ">, tensor<" << bT << ">) outs(%z : tensor<" << cT << ">) -> tensor<" << cT << ">\n"
      << "  bufferization.materialize_in_destination %r in restrict writable %C : (tensor<" << cT << ">, memref<" << cT
      << ">) -> ()\n"
      << "  return\n"
      << "}\n";
    return o.str();
  }

  const char* referenceName(const GemmWorkload&) const override { return "OpenBLAS"; }
  bool blasReference(const GemmWorkload&) const override { return true; }
  void naiveReference(const GemmWorkload& w, const float* a, const float* b, float* c) const override {
    const bool ta = w.layout == Layout::TN, tb = w.layout == Layout::NT;
    const int64_t batches = batched_ ? w.batch : 1;
    for (int64_t e = 0; e < batches; ++e) {
      const float* ae = a + e * w.m * w.k;
      const float* be = b + e * w.k * w.n;
      float* ce = c + e * w.m * w.n;
      for (int64_t i = 0; i < w.m; ++i)
        for (int64_t j = 0; j < w.n; ++j) {
          double acc = 0;
          for (int64_t p = 0; p < w.k; ++p)
            acc += double(ta ? ae[p * w.m + i] : ae[i * w.k + p]) * double(tb ? be[j * w.k + p] : be[p * w.n + j]);
          ce[i * w.n + j] = float(acc);
        }
    }
  }
  std::string elementName(const GemmWorkload& w, int64_t i) const override {
    const int64_t mn = w.m * w.n;
    std::ostringstream o;
    o << "C";
    if (batched_) o << "[" << i / mn << "]";
    o << "[" << i % mn / w.n << "][" << i % w.n << "]";
    return o.str();
  }

 private:
  Result<GemmWorkload> parseShape(const std::string& shape) const {
    return batched_ ? parseBatchMatmulShape(shape) : parseGemmShape(shape);
  }
  bool batched_;
};

}  // namespace

const OpDef& gemmOp() {
  static const MatmulOp op(false);
  return op;
}
const OpDef& batchMatmulOp() {
  static const MatmulOp op(true);
  return op;
}

Result<GemmWorkload> makeGemmWorkload(const std::string& shape, const std::string& dtype, const std::string& layout) {
  return gemmOp().make(shape, dtype, layout);
}
Result<GemmWorkload> makeBatchMatmulWorkload(const std::string& shape, const std::string& dtype,
                                             const std::string& layout) {
  return batchMatmulOp().make(shape, dtype, layout);
}

Result<GemmWorkload> parseGemmShape(const std::string& shape) {
  auto v = parseDims(shape, 3, "MxNxK", "1024x1024x1024");
  if (!v) return Error{v.error()};
  GemmWorkload w;
  w.m = (*v)[0];
  w.n = (*v)[1];
  w.k = (*v)[2];
  return w;
}

Result<GemmWorkload> parseBatchMatmulShape(const std::string& shape) {
  auto v = parseDims(shape, 4, "BxMxNxK (batch, then the GEMM's M, N, K)", "12x128x128x64");
  if (!v) return Error{v.error()};
  GemmWorkload w;
  w.op = OpKind::BatchMatmul;
  w.batch = (*v)[0];
  w.m = (*v)[1];
  w.n = (*v)[2];
  w.k = (*v)[3];
  return w;
}

}  // namespace sextant
