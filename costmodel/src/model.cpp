// The only translation unit that includes LibTorch.
#include "sextant/costmodel/model.h"

#include <algorithm>
#include <cmath>
#include <fstream>
#include <map>
#include <random>

#include <torch/torch.h>

namespace sextant {

namespace {

struct MlpImpl : torch::nn::Module {
  MlpImpl(int in, int hidden) {
    l1 = register_module("l1", torch::nn::Linear(in, hidden));
    l2 = register_module("l2", torch::nn::Linear(hidden, hidden));
    out = register_module("out", torch::nn::Linear(hidden, 2));  // [score, failure logit]
  }
  torch::Tensor forward(torch::Tensor x) {
    x = torch::relu(l1(x));
    x = torch::relu(l2(x));
    return out(x);
  }
  torch::nn::Linear l1{nullptr}, l2{nullptr}, out{nullptr};
};
TORCH_MODULE(Mlp);

torch::Tensor toTensor(const std::vector<std::vector<float>>& x, int nf) {
  auto t = torch::empty({int64_t(x.size()), nf}, torch::kFloat32);
  auto acc = t.accessor<float, 2>();
  for (size_t i = 0; i < x.size(); ++i)
    for (int j = 0; j < nf; ++j) acc[int64_t(i)][j] = x[i][size_t(j)];
  return t;
}

}  // namespace

struct CostModel::Impl {
  int nf = 0;
  CostModelOptions o;
  std::vector<Mlp> members;
  std::vector<std::unique_ptr<torch::optim::Adam>> optims;
  torch::Tensor mean, scale;
  bool trained = false;

  void build() {
    members.clear();
    optims.clear();
    for (int m = 0; m < o.members; ++m) {
      torch::manual_seed(o.seed * 1000 + uint64_t(m));
      members.emplace_back(nf, o.hidden);
      optims.push_back(std::make_unique<torch::optim::Adam>(members.back()->parameters(),
                                                            torch::optim::AdamOptions(o.lr)));
    }
  }

  void train(const std::vector<Sample>& data, int epochs) {
    if (data.empty()) return;
    std::vector<std::vector<float>> xs;
    for (const auto& s : data) xs.push_back(s.x);
    torch::Tensor X = toTensor(xs, nf);
    if (!trained) {
      mean = X.mean(0);
      // A (nearly) constant feature is centred, not scaled (see model.h).
      auto sd = X.size(0) > 1 ? X.std(0) : torch::zeros({nf});
      scale = torch::where(sd < 0.05, torch::ones_like(sd), sd);
      // ... and starts with no weight in the first layer (its input is 0 throughout this fit, so
      // the weight would stay at its random start): the model is neutral about a value it has
      // never seen vary (another workload's size, a knob value absent from the training data)
      // until later updates show its effect.
      torch::NoGradGuard no_grad;
      auto fixed = (sd < 0.05).to(torch::kFloat32);
      for (auto& m : members) m->l1->weight.mul_(1 - fixed.unsqueeze(0));
    }
    X = (X - mean) / scale;
    // Targets: throughput normalised by the best of its workload.
    std::map<int, float> best;
    for (const auto& s : data)
      if (!s.failed) best[s.group] = std::max(best[s.group], s.gflops);
    const int64_t n = int64_t(data.size());
    auto y = torch::zeros({n});
    auto ok = torch::zeros({n});
    auto failed = torch::zeros({n});
    std::vector<int> group(static_cast<size_t>(n));
    std::vector<bool> okv(static_cast<size_t>(n));
    std::vector<double> weight(static_cast<size_t>(n));
    for (int64_t i = 0; i < n; ++i) {
      const Sample& s = data[size_t(i)];
      failed[i] = s.failed ? 1.f : 0.f;
      group[size_t(i)] = s.group;
      weight[size_t(i)] = std::max(0.f, s.weight);
      if (!s.failed && best[s.group] > 0) {
        y[i] = s.gflops / best[s.group];
        ok[i] = 1.f;
        okv[size_t(i)] = true;
      }
    }
    for (size_t m = 0; m < members.size(); ++m) {
      std::mt19937_64 rng(o.seed * 7919 + m * 104729 + uint64_t(n));
      // Bootstrap: each member sees its own resample of the data (drawn in proportion to the
      // samples' weights), for every loss term, the ranking pairs included.
      double wsum = 0;
      for (double w : weight) wsum += w;
      if (wsum <= 0) std::fill(weight.begin(), weight.end(), 1.0);
      std::discrete_distribution<int64_t> pick(weight.begin(), weight.end());
      std::vector<int64_t> boot(static_cast<size_t>(n));
      for (auto& b : boot) b = pick(rng);
      auto bi = torch::tensor(boot, torch::kLong);
      auto Xb = X.index_select(0, bi), yb = y.index_select(0, bi), okb = ok.index_select(0, bi),
           fb = failed.index_select(0, bi);
      members[m]->train();
      for (int e = 0; e < epochs; ++e) {
        // Ranking pairs within a workload, drawn afresh each epoch from the member's resample
        // (positions in it, so that the member's one forward pass serves every loss term).
        auto pairs = rankingPairs(boot, group, okv, rng());
        optims[m]->zero_grad();
        auto out = members[m]->forward(Xb);
        auto score = out.select(1, 0), logit = out.select(1, 1);
        auto okn = okb.sum().clamp_min(1);
        auto loss = o.regression_weight * ((score - yb).pow(2) * okb).sum() / okn +
                    o.failure_weight * torch::binary_cross_entropy_with_logits(logit, fb);
        if (!pairs.empty()) {
          std::vector<int64_t> pi, pj;
          for (auto& [a, b] : pairs) pi.push_back(a), pj.push_back(b);
          auto ti = torch::tensor(pi, torch::kLong), tj = torch::tensor(pj, torch::kLong);
          auto diff = score.index_select(0, ti) - score.index_select(0, tj);
          auto sign = torch::sign(yb.index_select(0, ti) - yb.index_select(0, tj));
          auto w = sign.abs();  // tied pairs carry no order
          loss = loss + o.rank_weight * (torch::softplus(-diff * sign) * w).sum() / w.sum().clamp_min(1e-6);
        }
        loss.backward();
        optims[m]->step();
      }
    }
    trained = true;
  }
};

std::vector<std::pair<int64_t, int64_t>> rankingPairs(const std::vector<int64_t>& rows, const std::vector<int>& group,
                                                      const std::vector<bool>& ok, uint64_t seed) {
  std::map<int, std::vector<int64_t>> by_group;  // group -> positions in `rows`
  for (size_t p = 0; p < rows.size(); ++p) {
    const int64_t r = rows[p];
    if (r >= 0 && size_t(r) < ok.size() && ok[size_t(r)]) by_group[group[size_t(r)]].push_back(int64_t(p));
  }
  std::mt19937_64 rng(seed);
  std::vector<std::pair<int64_t, int64_t>> out;
  for (auto& [g, idx] : by_group) {
    if (idx.size() < 2) continue;
    std::uniform_int_distribution<size_t> d(0, idx.size() - 1);
    const size_t pairs = std::min<size_t>(4 * idx.size(), 4096);
    for (size_t p = 0; p < pairs; ++p) {
      int64_t a = idx[d(rng)], b = idx[d(rng)];
      if (rows[size_t(a)] != rows[size_t(b)]) out.push_back({a, b});
    }
  }
  return out;
}

CostModel::CostModel(int num_features, CostModelOptions o) : impl_(std::make_unique<Impl>()) {
  impl_->nf = num_features;
  impl_->o = o;
  impl_->build();
}
CostModel::CostModel(CostModel&&) noexcept = default;
CostModel& CostModel::operator=(CostModel&&) noexcept = default;
CostModel::~CostModel() = default;

int CostModel::numFeatures() const { return impl_->nf; }
int CostModel::featureVersion() const { return impl_->o.feature_version; }
bool CostModel::trained() const { return impl_->trained; }

void CostModel::fit(const std::vector<Sample>& data) {
  impl_->trained = false;
  impl_->build();
  impl_->train(data, impl_->o.epochs);
}

void CostModel::update(const std::vector<Sample>& data) {
  impl_->train(data, impl_->trained ? impl_->o.update_epochs : impl_->o.epochs);
}

std::vector<Prediction> CostModel::predict(const std::vector<std::vector<float>>& x) const {
  std::vector<Prediction> out(x.size());
  if (x.empty() || !impl_->trained) return out;
  torch::NoGradGuard ng;
  auto X = (toTensor(x, impl_->nf) - impl_->mean) / impl_->scale;
  std::vector<torch::Tensor> scores, fails;
  for (auto& m : impl_->members) {
    m->eval();
    auto o = m->forward(X);
    scores.push_back(o.select(1, 0));
    fails.push_back(torch::sigmoid(o.select(1, 1)));
  }
  auto S = torch::stack(scores), F = torch::stack(fails);
  auto mean = S.mean(0), spread = S.size(0) > 1 ? S.std(0) : torch::zeros_like(mean), pf = F.mean(0);
  auto am = mean.accessor<float, 1>(), as = spread.accessor<float, 1>(), af = pf.accessor<float, 1>();
  for (size_t i = 0; i < x.size(); ++i) out[i] = {am[int64_t(i)], as[int64_t(i)], af[int64_t(i)]};
  return out;
}

Status CostModel::save(const std::string& path) const {
  try {
    torch::serialize::OutputArchive ar;
    ar.write("meta", torch::tensor({int64_t(impl_->nf), int64_t(impl_->o.members), int64_t(impl_->o.hidden),
                                    int64_t(impl_->trained), int64_t(kCostModelFormat),
                                    int64_t(impl_->o.feature_version)}));
    if (impl_->trained) {
      ar.write("mean", impl_->mean);
      ar.write("scale", impl_->scale);
    }
    for (size_t m = 0; m < impl_->members.size(); ++m) {
      torch::serialize::OutputArchive sub;
      impl_->members[m]->save(sub);
      ar.write("member" + std::to_string(m), sub);
    }
    ar.save_to(path);
  } catch (const std::exception& e) {
    return Error{path + ": cannot save the cost model: " + std::string(e.what()).substr(0, 300)};
  }
  return okStatus();
}

Result<CostModel> CostModel::load(const std::string& path) {
  try {
    torch::serialize::InputArchive ar;
    ar.load_from(path);
    torch::Tensor meta;
    ar.read("meta", meta);
    if (meta.numel() == 4)
      return Error{path + ": a cost model of an older format (1; this build reads format " +
                   std::to_string(kCostModelFormat) + "): retrain it (tune costmodel train) or delete it"};
    if (meta.numel() != 6) return Error{path + ": not a Sextant cost model"};
    if (meta[4].item<int64_t>() != kCostModelFormat)
      return Error{path + ": a cost model of format " + std::to_string(meta[4].item<int64_t>()) +
                   " (this build reads format " + std::to_string(kCostModelFormat) + ")"};
    CostModelOptions o;
    o.feature_version = int(meta[5].item<int64_t>());
    o.members = int(meta[1].item<int64_t>());
    o.hidden = int(meta[2].item<int64_t>());
    CostModel model(int(meta[0].item<int64_t>()), o);
    if (meta[3].item<int64_t>()) {
      ar.read("mean", model.impl_->mean);
      ar.read("scale", model.impl_->scale);
      model.impl_->trained = true;
    }
    for (int m = 0; m < o.members; ++m) {
      torch::serialize::InputArchive sub;
      if (!ar.try_read("member" + std::to_string(m), sub)) return Error{path + ": the model file is incomplete"};
      model.impl_->members[size_t(m)]->load(sub);
    }
    return model;
  } catch (const std::exception& e) {
    std::string what = e.what();
    return Error{path + ": not a readable cost model (" + what.substr(0, what.find('\n')) + ")"};
  }
}

Result<CostModel> loadPretrained(const std::string& path, int num_features, int feature_version) {
  {
    std::ifstream f(path, std::ios::binary);
    if (!f) return Error{path + ": no such pretrained model"};
  }
  auto m = CostModel::load(path);
  if (!m) return Error{m.error()};
  if (!m->trained()) return Error{path + ": the model was never trained"};
  if (m->featureVersion() != feature_version || m->numFeatures() != num_features)
    return Error{path + ": trained on features of version " + std::to_string(m->featureVersion()) + " (" +
                 std::to_string(m->numFeatures()) + " features); this build computes version " +
                 std::to_string(feature_version) + " (" + std::to_string(num_features) +
                 "): retrain it with tune costmodel train"};
  return m;
}

void setCostModelThreads(int n) { torch::set_num_threads(std::max(1, n)); }

double learnedThroughput(double flops, const std::vector<double>& times_s, double gflops) {
  double t = 0;
  for (double x : times_s)
    if (x > 0 && (t == 0 || x < t)) t = x;
  return t > 0 && flops > 0 ? flops / t * 1e-9 : gflops;
}

double kendallTau(const std::vector<double>& a, const std::vector<double>& b) {
  const size_t n = std::min(a.size(), b.size());
  double conc = 0, disc = 0, ta = 0, tb = 0;
  for (size_t i = 0; i < n; ++i)
    for (size_t j = i + 1; j < n; ++j) {
      double da = a[i] - a[j], db = b[i] - b[j];
      if (da == 0 && db == 0) continue;
      if (da == 0) ++ta;
      else if (db == 0) ++tb;
      else if ((da > 0) == (db > 0)) ++conc;
      else ++disc;
    }
  double denom = std::sqrt((conc + disc + ta) * (conc + disc + tb));
  return denom > 0 ? (conc - disc) / denom : 0;
}

}  // namespace sextant
