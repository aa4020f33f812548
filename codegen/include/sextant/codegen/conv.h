// 2-D convolution problems (issue #31), described as oneDNN's benchdnn does: "mb1ic64ih56oc64kh3ph1",
// "mb1_ic3oc64_ih224oh112kh7sh2ph3". Fields (letters then a number, '_' ignored): mb (batch), g
// (groups), ic, oc (channels), ih, iw, oh, ow (spatial sizes), kh, kw (filter), sh, sw (strides),
// ph, pw (padding, both sides), dh, dw (dilation, benchdnn's: 0 = none, d means a gap of d). As in
// benchdnn: iw = ih, kw = kh, sw = sh, pw = ph, dw = dh when absent; stride 1, padding 0, dilation 0
// and g 1 by default (mb 1, where benchdnn's is 2); oh and ow are computed, and checked when given.
#pragma once

#include <cstdint>
#include <string>

#include "sextant/common/result.h"

namespace sextant {

// How the operands are stored (--layout): input / filter, the output as the input. NhwcHwcf is
// the default (and the only one before 2026-11-28); NchwFchw is PyTorch's, NhwcFhwc TOSA's.
enum class ConvLayout { NhwcHwcf, NchwFchw, NhwcFhwc };
// The workload key's layout field: "NHWC", "NCHW", "NHWC_FHWC".
const char* convLayoutKey(ConvLayout l);
// --layout: NHWC, NHWC/HWCF (and NN, tune's default), NCHW, NCHW/FCHW, NHWC/FHWC, NHWC_FHWC; the
// error is one line naming the supported ones.
Result<ConvLayout> parseConvLayout(const std::string& s);

struct ConvDesc {
  int64_t mb = 1, g = 1, ic = 0, ih = 0, iw = 0, oc = 0, oh = 0, ow = 0, kh = 0, kw = 0;
  int64_t sh = 1, sw = 1, ph = 0, pw = 0, dh = 0, dw = 0;
  ConvLayout layout = ConvLayout::NhwcHwcf;  // not part of str(): the key's layout field

  // Canonical text: every field, fixed order ("mb1ic64ih56iw56oc64oh56ow56kh3kw3sh1sw1ph1pw1dh0dw0",
  // "g32" after mb when groups > 1). Two problems are the same iff their texts are.
  std::string str() const;
  // The padded input's spatial sizes (what the kernel reads).
  int64_t paddedH() const { return ih + 2 * ph; }
  int64_t paddedW() const { return iw + 2 * pw; }
  // The implicit GEMM: M = mb*oh*ow output pixels, N = oc, K = kh*kw*ic/g (per group).
  int64_t gemmM() const { return mb * oh * ow; }
  int64_t gemmN() const { return oc; }
  int64_t gemmK() const { return kh * kw * (ic / g); }
  double flops() const { return 2.0 * double(gemmM()) * double(gemmN()) * double(gemmK()); }
  // One channel per group (g = ic = oc): linalg.depthwise_conv_2d_nhwc_hwc, filter kh x kw x c.
  bool depthwise() const { return g > 1 && g == ic && g == oc; }
  int64_t inputElements() const { return mb * ih * iw * ic; }
  int64_t filterElements() const { return kh * kw * (ic / g) * oc; }
  int64_t outputElements() const { return mb * oh * ow * oc; }

  bool operator==(const ConvDesc&) const = default;
};

// The linalg op that computes the problem in its layout: linalg.conv_2d_nhwc_hwcf (also each group
// of a grouped one), linalg.depthwise_conv_2d_nhwc_hwc, linalg.conv_2d_nchw_fchw,
// linalg.conv_2d_nhwc_fhwc.
const char* convOpName(const ConvDesc& d);

// Parses a benchdnn descriptor; the error is one line naming the field or the inconsistency.
// benchdnn's default mb is 2; Sextant's is 1 (inference).
Result<ConvDesc> parseConvDesc(const std::string& text);

}  // namespace sextant
