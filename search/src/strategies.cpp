#include <algorithm>
#include <random>

#include "sextant/common/strings.h"
#include "sextant/search/strategy.h"

namespace sextant {
namespace {

// Uniform random sampling without replacement over the valid candidates.
class RandomSearch : public SearchStrategy {
 public:
  explicit RandomSearch(uint64_t seed) : rng_(seed) {}
  std::string name() const override { return "random"; }
  std::vector<Candidate> propose(const Space& space, const std::unordered_set<uint64_t>& tried, size_t n) override {
    std::vector<Candidate> out;
    std::unordered_set<uint64_t> taken;
    const uint64_t untried = space.size() > tried.size() ? space.size() - tried.size() : 0;
    n = size_t(std::min<uint64_t>(n, untried));
    if (n == 0) return out;
    if (tried.size() * 2 < space.size()) {
      // Mostly unexplored: rejection sampling is uniform and cheap.
      while (out.size() < n) {
        Candidate c = space.sample(rng_);
        uint64_t id = space.encode(c);
        if (tried.count(id) || !taken.insert(id).second) continue;
        out.push_back(std::move(c));
      }
      return out;
    }
    // Mostly explored: draw from the list of what is left.
    std::vector<uint64_t> left;
    for (uint64_t i = 0; i < space.size(); ++i) {
      uint64_t id = space.encode(space.at(i));
      if (!tried.count(id)) left.push_back(i);
    }
    for (size_t i = 0; i < n && !left.empty(); ++i) {
      std::uniform_int_distribution<size_t> d(0, left.size() - 1);
      size_t j = d(rng_);
      out.push_back(space.at(left[j]));
      left[j] = left.back();
      left.pop_back();
    }
    return out;
  }

 private:
  std::mt19937_64 rng_;
};

// Every valid candidate in enumeration order (for small spaces, or to record whole spaces).
class ExhaustiveSearch : public SearchStrategy {
 public:
  std::string name() const override { return "exhaustive"; }
  std::vector<Candidate> propose(const Space& space, const std::unordered_set<uint64_t>& tried, size_t n) override {
    std::vector<Candidate> out;
    for (; next_ < space.size() && out.size() < n; ++next_) {
      Candidate c = space.at(next_);
      if (!tried.count(space.encode(c))) out.push_back(std::move(c));
    }
    return out;
  }

 private:
  uint64_t next_ = 0;
};

}  // namespace

std::vector<std::string> strategyNames() { return {"random", "exhaustive"}; }

Result<std::unique_ptr<SearchStrategy>> makeStrategy(const std::string& name, uint64_t seed) {
  if (name == "random") return std::unique_ptr<SearchStrategy>(new RandomSearch(seed));
  if (name == "exhaustive") return std::unique_ptr<SearchStrategy>(new ExhaustiveSearch());
  return Error{"unknown strategy '" + name + "' (known: " + join(strategyNames(), ", ") + ")"};
}

}  // namespace sextant
