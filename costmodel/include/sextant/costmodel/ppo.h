// Chameleon's adaptive exploration (ICLR'20): a PPO actor-critic that walks the knob space over
// the cost model. State: the candidate's knob indices, each divided by its knob's number of
// values. Action: per knob one of {decrement, stay, increment} (a multi-discrete head, one 3-way
// softmax per knob), clipped at the ends; a move to an invalid point stays put. Reward: the cost
// model's predicted score of the point reached. Defaults are the reference code's
// hyperparameters (../shared/notes/algorithms.md). LibTorch lives only in ppo.cpp.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <vector>

namespace sextant {

struct PpoConfig {
  int hidden = 20;          // policy: Dense(20,tanh) x2 -> per-knob Dense(3); value: 3 x Dense(20,tanh) -> Dense(1)
  double lr = 1e-3;         // Adam
  int epochs = 3;
  int batch = 32;
  double gamma = 0.9, lambda = 0.99, clip = 0.2, value_coef = 1.0, entropy_coef = 0.3;
  int starts = 128;         // episodes per round, run side by side
  int max_steps = 500;
  double stay_fraction = 0.75;  // an episode ends when this share of knobs stays or pushes at a bound
  // Our deviation (documented in the README): a round trains on at most this many of its
  // transitions (uniformly sampled), so that a round stays well under 2 s on 2 cores.
  int max_train_transitions = 4096;
};

class PpoExplorer {
 public:
  using Point = std::vector<int>;
  PpoExplorer(std::vector<int> knob_sizes, uint64_t seed, PpoConfig cfg = {});
  ~PpoExplorer();
  PpoExplorer(const PpoExplorer&) = delete;
  PpoExplorer& operator=(const PpoExplorer&) = delete;

  struct Visit {
    Point point;
    float reward;
  };
  struct RoundStats {
    int steps = 0;            // environment steps taken (all episodes)
    double mean_reward = 0;   // over those steps
    double best_reward = 0;
    int trained_on = 0;       // transitions used for the update
  };
  // One round: episodes from `starts` (each valid), rewards from `reward` (called once per step
  // with every active episode's point), `valid` filters moves. Trains the agent on the round's
  // transitions and returns every point visited with its reward.
  std::vector<Visit> explore(const std::vector<Point>& starts,
                             const std::function<std::vector<float>(const std::vector<Point>&)>& reward,
                             const std::function<bool(const Point&)>& valid, RoundStats* stats = nullptr);

 private:
  struct Impl;
  std::unique_ptr<Impl> p_;
};

}  // namespace sextant
