#include "sextant/costmodel/ppo.h"

#include <algorithm>
#include <random>

#include <torch/torch.h>

namespace sextant {

namespace {

struct PolicyImpl : torch::nn::Module {
  PolicyImpl(int in, int hidden, int knobs) : knobs(knobs) {
    l1 = register_module("l1", torch::nn::Linear(in, hidden));
    l2 = register_module("l2", torch::nn::Linear(hidden, hidden));
    head = register_module("head", torch::nn::Linear(hidden, knobs * 3));  // per-knob 3-way heads
  }
  torch::Tensor forward(const torch::Tensor& x) {  // -> logits [B, K, 3]
    auto h = torch::tanh(l2->forward(torch::tanh(l1->forward(x))));
    return head->forward(h).view({x.size(0), knobs, 3});
  }
  int knobs;
  torch::nn::Linear l1{nullptr}, l2{nullptr}, head{nullptr};
};
TORCH_MODULE(Policy);

struct ValueImpl : torch::nn::Module {
  ValueImpl(int in, int hidden) {
    l1 = register_module("l1", torch::nn::Linear(in, hidden));
    l2 = register_module("l2", torch::nn::Linear(hidden, hidden));
    l3 = register_module("l3", torch::nn::Linear(hidden, hidden));
    out = register_module("out", torch::nn::Linear(hidden, 1));
  }
  torch::Tensor forward(const torch::Tensor& x) {
    auto h = torch::tanh(l3->forward(torch::tanh(l2->forward(torch::tanh(l1->forward(x))))));
    return out->forward(h).squeeze(-1);
  }
  torch::nn::Linear l1{nullptr}, l2{nullptr}, l3{nullptr}, out{nullptr};
};
TORCH_MODULE(Value);

}  // namespace

struct PpoExplorer::Impl {
  std::vector<int> sizes;
  PpoConfig cfg;
  std::mt19937_64 rng;
  Policy policy{nullptr};
  Value value{nullptr};
  std::unique_ptr<torch::optim::Adam> opt;
  torch::Generator gen;
};

PpoExplorer::PpoExplorer(std::vector<int> knob_sizes, uint64_t seed, PpoConfig cfg) : p_(std::make_unique<Impl>()) {
  p_->sizes = std::move(knob_sizes);
  p_->cfg = cfg;
  p_->rng.seed(seed);
  torch::manual_seed(seed);
  const int k = int(p_->sizes.size());
  p_->policy = Policy(k, cfg.hidden, k);
  p_->value = Value(k, cfg.hidden);
  std::vector<torch::Tensor> params = p_->policy->parameters();
  for (auto& t : p_->value->parameters()) params.push_back(t);
  p_->opt = std::make_unique<torch::optim::Adam>(params, torch::optim::AdamOptions(cfg.lr));
  p_->gen = at::make_generator<at::CPUGeneratorImpl>(seed);
}

PpoExplorer::~PpoExplorer() = default;

std::vector<PpoExplorer::Visit> PpoExplorer::explore(
    const std::vector<Point>& starts, const std::function<std::vector<float>(const std::vector<Point>&)>& reward,
    const std::function<bool(const Point&)>& valid, RoundStats* stats) {
  const PpoConfig& c = p_->cfg;
  const int K = int(p_->sizes.size());
  const int B = int(starts.size());
  std::vector<Visit> visits;
  if (B == 0 || K == 0) return visits;
  auto stateOf = [&](const std::vector<Point>& pts) {
    auto t = torch::empty({int64_t(pts.size()), K});
    auto a = t.accessor<float, 2>();
    for (size_t i = 0; i < pts.size(); ++i)
      for (int k = 0; k < K; ++k) a[i][k] = float(pts[i][k]) / float(std::max(1, p_->sizes[k]));
    return t;
  };

  // Rollout: all episodes step together; finished ones are masked out.
  std::vector<Point> cur = starts;
  std::vector<bool> active(B, true);
  // Per step: states [B,K], actions [B,K], log-probs [B], values [B], rewards [B], alive mask.
  std::vector<torch::Tensor> S, A, LP, V;
  std::vector<std::vector<float>> R;
  std::vector<std::vector<char>> alive, done_after;
  int steps = 0;
  double reward_sum = 0, best = -1e30;
  for (int t = 0; t < c.max_steps; ++t) {
    if (std::none_of(active.begin(), active.end(), [](bool b) { return b; })) break;
    torch::Tensor s = stateOf(cur), logits, v;
    {
      torch::NoGradGuard g;
      logits = p_->policy->forward(s);
      v = p_->value->forward(s);
    }
    auto probs = torch::softmax(logits, -1).view({B * K, 3});
    auto act = torch::multinomial(probs, 1, true, p_->gen).view({B, K});
    auto logp = torch::log_softmax(logits, -1).gather(2, act.unsqueeze(-1)).squeeze(-1).sum(1);
    auto aa = act.accessor<int64_t, 2>();
    std::vector<Point> next = cur;
    std::vector<char> ended(B, 0);
    for (int i = 0; i < B; ++i) {
      if (!active[i]) continue;
      int still = 0;
      for (int k = 0; k < K; ++k) {
        int d = int(aa[i][k]) - 1;
        int nv = std::clamp(cur[i][k] + d, 0, p_->sizes[k] - 1);
        if (d == 0 || nv == cur[i][k]) ++still;
        next[i][k] = nv;
      }
      if (!valid(next[i])) next[i] = cur[i];
      if (double(still) >= c.stay_fraction * K) ended[i] = 1;
    }
    std::vector<Point> query;
    std::vector<int> idx;
    for (int i = 0; i < B; ++i)
      if (active[i]) query.push_back(next[i]), idx.push_back(i);
    std::vector<float> r = reward(query);
    std::vector<float> rr(B, 0.f);
    for (size_t j = 0; j < idx.size(); ++j) {
      rr[idx[j]] = r[j];
      visits.push_back({next[idx[j]], r[j]});
      reward_sum += r[j];
      best = std::max(best, double(r[j]));
      ++steps;
    }
    S.push_back(s), A.push_back(act), LP.push_back(logp), V.push_back(v), R.push_back(rr);
    alive.push_back(std::vector<char>(active.begin(), active.end()));
    done_after.push_back(ended);
    cur = next;
    for (int i = 0; i < B; ++i)
      if (ended[i]) active[i] = false;
  }

  // Advantages (GAE) per episode, backwards in time.
  const int T = int(S.size());
  std::vector<std::vector<float>> adv(T, std::vector<float>(B, 0.f)), ret(T, std::vector<float>(B, 0.f));
  for (int i = 0; i < B; ++i) {
    float gae = 0, next_v = 0;
    for (int t = T - 1; t >= 0; --t) {
      if (!alive[t][i]) continue;
      float vt = V[t][i].item<float>();
      bool terminal = done_after[t][i] || t == T - 1;
      float nv = terminal ? 0.f : next_v;
      float delta = R[t][i] + float(c.gamma) * nv - vt;
      gae = delta + float(c.gamma * c.lambda) * (terminal ? 0.f : gae);
      adv[t][i] = gae;
      ret[t][i] = gae + vt;
      next_v = vt;
    }
  }
  // Flatten the alive transitions, subsample, normalise advantages.
  std::vector<std::pair<int, int>> tr;
  for (int t = 0; t < T; ++t)
    for (int i = 0; i < B; ++i)
      if (alive[t][i]) tr.push_back({t, i});
  std::shuffle(tr.begin(), tr.end(), p_->rng);
  if (int(tr.size()) > c.max_train_transitions) tr.resize(size_t(c.max_train_transitions));
  const int N = int(tr.size());
  if (N > 1) {
    auto st = torch::empty({N, K});
    auto ac = torch::empty({N, K}, torch::kLong);
    auto olp = torch::empty({N});
    auto ad = torch::empty({N});
    auto rt = torch::empty({N});
    for (int j = 0; j < N; ++j) {
      auto [t, i] = tr[size_t(j)];
      st[j] = S[t][i];
      ac[j] = A[t][i];
      olp[j] = LP[t][i];
      ad[j] = adv[t][i];
      rt[j] = ret[t][i];
    }
    ad = (ad - ad.mean()) / (ad.std() + 1e-8);
    for (int e = 0; e < c.epochs; ++e) {
      std::vector<int64_t> perm(N);
      for (int j = 0; j < N; ++j) perm[j] = j;
      std::shuffle(perm.begin(), perm.end(), p_->rng);
      auto pt = torch::tensor(perm);
      for (int s0 = 0; s0 < N; s0 += c.batch) {
        auto ix = pt.slice(0, s0, std::min(N, s0 + c.batch));
        auto x = st.index_select(0, ix);
        auto logits = p_->policy->forward(x);
        auto logsm = torch::log_softmax(logits, -1);
        auto lp = logsm.gather(2, ac.index_select(0, ix).unsqueeze(-1)).squeeze(-1).sum(1);
        auto ratio = torch::exp(lp - olp.index_select(0, ix));
        auto a = ad.index_select(0, ix);
        auto s1 = ratio * a, s2 = torch::clamp(ratio, 1 - c.clip, 1 + c.clip) * a;
        auto policy_loss = -torch::min(s1, s2).mean();
        auto value_loss = (p_->value->forward(x) - rt.index_select(0, ix)).pow(2).mean();
        auto entropy = -(torch::softmax(logits, -1) * logsm).sum(-1).mean();
        auto loss = policy_loss + c.value_coef * value_loss - c.entropy_coef * entropy;
        p_->opt->zero_grad();
        loss.backward();
        p_->opt->step();
      }
    }
  }
  if (stats) {
    stats->steps = steps;
    stats->mean_reward = steps ? reward_sum / steps : 0;
    stats->best_reward = best;
    stats->trained_on = N;
  }
  return visits;
}

}  // namespace sextant
