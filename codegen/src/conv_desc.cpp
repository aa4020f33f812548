#include "sextant/codegen/conv.h"

#include <cctype>
#include <map>

namespace sextant {

std::string ConvDesc::str() const {
  auto f = [](const char* n, int64_t v) { return std::string(n) + std::to_string(v); };
  return f("mb", mb) + (g > 1 ? f("g", g) : std::string()) + f("ic", ic) + f("ih", ih) + f("iw", iw) + f("oc", oc) +
         f("oh", oh) + f("ow", ow) + f("kh", kh) + f("kw", kw) + f("sh", sh) + f("sw", sw) + f("ph", ph) + f("pw", pw) +
         f("dh", dh) + f("dw", dw);
}

// The output size along one dimension (benchdnn: dilation d means a gap of d between taps).
static int64_t outSize(int64_t in, int64_t k, int64_t s, int64_t p, int64_t d) {
  const int64_t span = (k - 1) * (d + 1) + 1;
  return (in + 2 * p - span) / s + 1;
}

Result<ConvDesc> parseConvDesc(const std::string& text) {
  static const char* const known[] = {"mb", "g", "ic", "ih", "iw", "oc", "oh", "ow", "kh", "kw",
                                      "sh", "sw", "ph", "pw", "dh", "dw"};
  auto bad = [&](const std::string& why) {
    return Error{"malformed convolution descriptor '" + text + "': " + why +
                 " (benchdnn form, e.g. mb1ic64ih56oc64kh3ph1)"};
  };
  std::map<std::string, int64_t> v;
  size_t i = 0;
  while (i < text.size()) {
    if (text[i] == '_') {
      ++i;
      continue;
    }
    size_t j = i;
    while (j < text.size() && std::isalpha(static_cast<unsigned char>(text[j]))) ++j;
    const std::string name = text.substr(i, j - i);
    if (name.empty()) return bad("expected a field name at '" + text.substr(i) + "'");
    size_t e = j;
    while (e < text.size() && std::isdigit(static_cast<unsigned char>(text[e]))) ++e;
    if (e == j) return bad("field '" + name + "' has no value");
    if (e - j > 7) return bad("field '" + name + "' is too large");
    bool ok = false;
    for (const char* k : known) ok |= name == k;
    if (!ok) {
      if (name == "id" || name == "od" || name == "kd" || name == "sd" || name == "pd" || name == "dd")
        return bad("3-D convolutions (" + name + ") are not supported; conv2d is 2-D");
      return bad("unknown field '" + name + "'");
    }
    if (v.count(name)) return bad("field '" + name + "' given twice");
    v[name] = std::stoll(text.substr(j, e - j));
    i = e;
  }
  for (const char* need : {"ic", "oc", "ih", "kh"})
    if (!v.count(need)) return bad(std::string("'") + need + "' is required");
  ConvDesc d;
  auto get = [&](const char* n, int64_t def) { return v.count(n) ? v[n] : def; };
  d.mb = get("mb", 1), d.g = get("g", 1), d.ic = v["ic"], d.oc = v["oc"];
  d.ih = v["ih"], d.iw = get("iw", d.ih), d.kh = v["kh"], d.kw = get("kw", d.kh);
  d.sh = get("sh", 1), d.sw = get("sw", d.sh), d.ph = get("ph", 0), d.pw = get("pw", d.ph);
  d.dh = get("dh", 0), d.dw = get("dw", d.dh);
  for (auto [n, x] : {std::pair<const char*, int64_t>{"mb", d.mb}, {"g", d.g}, {"ic", d.ic}, {"oc", d.oc}, {"ih", d.ih},
                      {"iw", d.iw}, {"kh", d.kh}, {"kw", d.kw}, {"sh", d.sh}, {"sw", d.sw}})
    if (x <= 0) return bad(std::string("'") + n + "' must be positive");
  if (d.ic % d.g != 0 || d.oc % d.g != 0) return bad("ic and oc must be multiples of g");
  d.oh = outSize(d.ih, d.kh, d.sh, d.ph, d.dh);
  d.ow = outSize(d.iw, d.kw, d.sw, d.pw, d.dw);
  if (d.oh <= 0 || d.ow <= 0) return bad("the filter does not fit the padded input");
  if (v.count("oh") && v["oh"] != d.oh)
    return bad("oh" + std::to_string(v["oh"]) + " does not match ih, kh, sh, ph, dh (which give oh" +
               std::to_string(d.oh) + ")");
  if (v.count("ow") && v["ow"] != d.ow)
    return bad("ow" + std::to_string(v["ow"]) + " does not match iw, kw, sw, pw, dw (which give ow" +
               std::to_string(d.ow) + ")");
  return d;
}

const char* convOpName(const ConvDesc& d) {
  if (d.depthwise()) return "linalg.depthwise_conv_2d_nhwc_hwc";
  switch (d.layout) {
    case ConvLayout::NchwFchw: return "linalg.conv_2d_nchw_fchw";
    case ConvLayout::NhwcFhwc: return "linalg.conv_2d_nhwc_fhwc";
    case ConvLayout::NhwcHwcf: break;
  }
  return "linalg.conv_2d_nhwc_hwcf";
}

const char* convLayoutKey(ConvLayout l) {
  switch (l) {
    case ConvLayout::NhwcHwcf: return "NHWC";
    case ConvLayout::NchwFchw: return "NCHW";
    case ConvLayout::NhwcFhwc: return "NHWC_FHWC";
  }
  return "?";
}

Result<ConvLayout> parseConvLayout(const std::string& s) {
  if (s == "NN" || s == "NHWC" || s == "nhwc" || s == "NHWC/HWCF") return ConvLayout::NhwcHwcf;
  if (s == "NCHW" || s == "nchw" || s == "NCHW/FCHW") return ConvLayout::NchwFchw;
  if (s == "NHWC/FHWC" || s == "NHWC_FHWC" || s == "nhwc/fhwc") return ConvLayout::NhwcFhwc;
  return Error{"conv2d layout '" + s +
               "' is not supported (supported: NHWC = NHWC/HWCF, the default; NCHW = NCHW/FCHW; NHWC/FHWC)"};
}

}  // namespace sextant
