// A schedule space: knobs with finite value lists and constraints between them. MLIR-free; the
// search strategies, the cost model and the database work on this alone.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <random>
#include <optional>
#include <string>
#include <vector>

#include "sextant/common/result.h"

namespace sextant {

struct Knob {
  std::string name;
  std::vector<int64_t> values;
  std::string doc;  // what the knob means, for --help / reports
  // The value a candidate that does not name this knob has (records and datasets from before the
  // knob existed: "as before"); none: the knob is required.
  std::optional<int64_t> if_absent = std::nullopt;
};

// One value index per knob (index into Knob::values).
using Candidate = std::vector<int>;

struct Constraint {
  std::string name;                 // shown when a candidate violates it
  std::vector<int> knobs;           // knob indices it reads
  std::function<bool(const std::vector<int64_t>& values)> ok;  // values of all knobs
};

class Space {
 public:
  Space() = default;
  Space(std::string name, std::vector<Knob> knobs, std::vector<Constraint> constraints);

  const std::string& name() const { return name_; }
  const std::vector<Knob>& knobs() const { return knobs_; }
  const std::vector<Constraint>& constraints() const { return constraints_; }
  int knobIndex(const std::string& name) const;  // -1 if absent

  // Number of valid candidates (exact: the space is enumerated up front).
  uint64_t size() const { return valid_.size(); }
  // Product of the knobs' value counts, before constraints.
  uint64_t rawSize() const { return raw_size_; }
  // A stable fingerprint of knobs, values and constraint names (stored with runs).
  std::string fingerprint() const;

  bool isValid(const Candidate& c) const;
  // Names of the constraints a candidate violates (empty if valid or malformed).
  std::vector<std::string> violations(const Candidate& c) const;
  Candidate sample(std::mt19937_64& rng) const;  // uniform over valid candidates
  Candidate at(uint64_t i) const;                 // i-th valid candidate, i < size()

  // Mixed-radix flat id over the raw product (stable for a given space).
  uint64_t encode(const Candidate& c) const;
  Candidate decode(uint64_t id) const;

  std::vector<int64_t> values(const Candidate& c) const;
  // The value of knob `name` in c, or `absent` when the space has no such knob.
  int64_t valueOr(const Candidate& c, const std::string& name, int64_t absent) const;
  std::map<std::string, int64_t> knobMap(const Candidate& c) const;
  // "tile_m=128,tile_n=256,..." in knob order: the canonical candidate key.
  std::string keyOf(const Candidate& c) const;
  // Inverse of knobMap/keyOf: errors name the unknown knob or value.
  Result<Candidate> fromMap(const std::map<std::string, int64_t>& m) const;
  Result<Candidate> fromKey(const std::string& key) const;
  // Valid candidates that differ from c by one step (+-1 index) in one knob.
  std::vector<Candidate> neighbours(const Candidate& c) const;

 private:
  void enumerate();
  std::string name_;
  std::vector<Knob> knobs_;
  std::vector<Constraint> constraints_;
  std::vector<std::vector<int>> by_last_knob_;  // constraint ids keyed by their last knob
  std::vector<uint64_t> valid_;                  // flat ids of valid candidates, ascending
  uint64_t raw_size_ = 1;
};

}  // namespace sextant
