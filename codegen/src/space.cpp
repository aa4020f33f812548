#include "sextant/codegen/space.h"

#include <algorithm>
#include <stdexcept>

#include "sextant/common/strings.h"

namespace sextant {

// Enumerating is exact and cheap up to this many raw points; larger spaces must be split.
static constexpr uint64_t kMaxRawSize = uint64_t(1) << 28;

Space::Space(std::string name, std::vector<Knob> knobs, std::vector<Constraint> constraints)
    : name_(std::move(name)), knobs_(std::move(knobs)), constraints_(std::move(constraints)) {
  by_last_knob_.assign(knobs_.size(), {});
  for (size_t ci = 0; ci < constraints_.size(); ++ci) {
    int last = 0;
    for (int k : constraints_[ci].knobs) last = std::max(last, k);
    by_last_knob_[last].push_back(int(ci));
  }
  raw_size_ = 1;
  for (auto& k : knobs_) {
    if (k.values.empty()) throw std::invalid_argument("knob '" + k.name + "' has no values");
    raw_size_ *= k.values.size();
    if (raw_size_ > kMaxRawSize) throw std::invalid_argument("space '" + name_ + "' is too large to enumerate");
  }
  enumerate();
}

int Space::knobIndex(const std::string& name) const {
  for (size_t i = 0; i < knobs_.size(); ++i)
    if (knobs_[i].name == name) return int(i);
  return -1;
}

int64_t Space::valueOr(const Candidate& c, const std::string& name, int64_t absent) const {
  const int i = knobIndex(name);
  return i >= 0 ? knobs_[size_t(i)].values[size_t(c[size_t(i)])] : absent;
}

void Space::enumerate() {
  valid_.clear();
  const size_t n = knobs_.size();
  if (n == 0) return;
  std::vector<int> idx(n, 0);
  std::vector<int64_t> vals(n, 0);
  // Depth-first over knobs; a constraint is checked as soon as its last knob is assigned.
  std::function<void(size_t)> rec = [&](size_t d) {
    for (size_t v = 0; v < knobs_[d].values.size(); ++v) {
      idx[d] = int(v);
      vals[d] = knobs_[d].values[v];
      bool ok = true;
      for (int ci : by_last_knob_[d])
        if (!constraints_[ci].ok(vals)) { ok = false; break; }
      if (!ok) continue;
      if (d + 1 == n) valid_.push_back(encode(idx));
      else rec(d + 1);
    }
  };
  rec(0);
}

std::string Space::fingerprint() const {
  std::string s = name_ + "|";
  for (auto& k : knobs_) {
    s += k.name + "=";
    for (auto v : k.values) s += std::to_string(v) + ",";
    s += ";";
  }
  for (auto& c : constraints_) s += c.name + ";";
  // FNV-1a, printed in hex: short and stable.
  uint64_t h = 1469598103934665603ull;
  for (unsigned char ch : s) h = (h ^ ch) * 1099511628211ull;
  char buf[17];
  snprintf(buf, sizeof buf, "%016llx", (unsigned long long)h);
  return buf;
}

bool Space::isValid(const Candidate& c) const {
  if (c.size() != knobs_.size()) return false;
  for (size_t i = 0; i < c.size(); ++i)
    if (c[i] < 0 || size_t(c[i]) >= knobs_[i].values.size()) return false;
  return std::binary_search(valid_.begin(), valid_.end(), encode(c));
}

std::vector<std::string> Space::violations(const Candidate& c) const {
  std::vector<std::string> out;
  if (c.size() != knobs_.size()) return out;
  auto v = values(c);
  for (auto& con : constraints_)
    if (!con.ok(v)) out.push_back(con.name);
  return out;
}

Candidate Space::sample(std::mt19937_64& rng) const {
  if (valid_.empty()) return {};
  std::uniform_int_distribution<uint64_t> d(0, valid_.size() - 1);
  return decode(valid_[d(rng)]);
}

Candidate Space::at(uint64_t i) const { return decode(valid_.at(i)); }

uint64_t Space::encode(const Candidate& c) const {
  uint64_t id = 0;
  for (size_t i = 0; i < knobs_.size(); ++i) id = id * knobs_[i].values.size() + uint64_t(c[i]);
  return id;
}

Candidate Space::decode(uint64_t id) const {
  Candidate c(knobs_.size());
  for (size_t i = knobs_.size(); i-- > 0;) {
    c[i] = int(id % knobs_[i].values.size());
    id /= knobs_[i].values.size();
  }
  return c;
}

std::vector<int64_t> Space::values(const Candidate& c) const {
  std::vector<int64_t> v(c.size());
  for (size_t i = 0; i < c.size(); ++i) v[i] = knobs_[i].values[c[i]];
  return v;
}

std::map<std::string, int64_t> Space::knobMap(const Candidate& c) const {
  std::map<std::string, int64_t> m;
  for (size_t i = 0; i < c.size(); ++i) m[knobs_[i].name] = knobs_[i].values[c[i]];
  return m;
}

std::string Space::keyOf(const Candidate& c) const {
  std::string s;
  for (size_t i = 0; i < c.size(); ++i) {
    if (i) s += ",";
    s += knobs_[i].name + "=" + std::to_string(knobs_[i].values[c[i]]);
  }
  return s;
}

Result<Candidate> Space::fromMap(const std::map<std::string, int64_t>& m) const {
  Candidate c(knobs_.size(), -1);
  for (auto& [name, value] : m) {
    int ki = knobIndex(name);
    if (ki < 0) return Error{"unknown knob '" + name + "' for space " + name_};
    auto& vs = knobs_[ki].values;
    auto it = std::find(vs.begin(), vs.end(), value);
    if (it == vs.end())
      return Error{"value " + std::to_string(value) + " is not an option of knob '" + name + "'"};
    c[ki] = int(it - vs.begin());
  }
  for (size_t i = 0; i < c.size(); ++i) {
    if (c[i] >= 0) continue;
    const auto& k = knobs_[i];
    auto it = k.if_absent ? std::find(k.values.begin(), k.values.end(), *k.if_absent) : k.values.end();
    if (it == k.values.end()) return Error{"knob '" + k.name + "' has no value"};
    c[i] = int(it - k.values.begin());
  }
  return c;
}

Result<Candidate> Space::fromKey(const std::string& key) const {
  std::map<std::string, int64_t> m;
  for (auto& part : split(key, ',')) {
    auto eq = part.find('=');
    int64_t v = 0;
    if (eq == std::string::npos || !parseInt64(part.substr(eq + 1), v))
      return Error{"malformed candidate key '" + key + "'"};
    m[part.substr(0, eq)] = v;
  }
  return fromMap(m);
}

std::vector<Candidate> Space::neighbours(const Candidate& c) const {
  std::vector<Candidate> out;
  for (size_t i = 0; i < c.size(); ++i) {
    for (int d : {-1, 1}) {
      Candidate n = c;
      n[i] += d;
      if (n[i] < 0 || size_t(n[i]) >= knobs_[i].values.size()) continue;
      if (isValid(n)) out.push_back(n);
    }
  }
  return out;
}

}  // namespace sextant
