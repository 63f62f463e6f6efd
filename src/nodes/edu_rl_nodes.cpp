// The teaching nodes of CodefyUI's `rl` plugin pack (rl:Edu-*): policy-gradient
// objectives (REINFORCE, GRPO, PPO-clip, a preference loss) written out step
// by step, with their intermediate tensors in verbose runs, computed with the
// same PyTorch operations in the same order as CodefyUI's plugin nodes.
#include "nodes/edu_support.h"
#include "nodes/library.h"
#include "nodes/step_trace.h"

#include <torch/torch.h>

#include <string>

namespace codefy::nodes {
namespace edu_rl {
namespace {

using namespace edu;

/// Policy logits [B, A], the action taken per row [B] (int64, in range) and
/// a per-row tensor [B] (rewards or advantages), checked as CodefyUI checks them.
struct PolicyBatch {
  Tensor logits, actions, per_row;
  int64_t batch = 0, num_actions = 0;
};

PolicyBatch policy_batch(const NodeContext& ctx, const std::string& logits_port, const std::string& row_port) {
  PolicyBatch p;
  p.logits = edu_tensor(ctx, logits_port);
  p.actions = edu_tensor(ctx, "actions", torch::kInt64);
  p.per_row = edu_tensor(ctx, row_port);
  if (p.logits.dim() != 2) bad_input(logits_port, "must have shape [B, A]; got " + shape_of(p.logits));
  p.batch = p.logits.size(0);
  p.num_actions = p.logits.size(1);
  if (p.actions.dim() != 1 || p.actions.size(0) != p.batch)
    bad_input("actions", "must have shape [" + num(p.batch) + "] (one per row of " + logits_port + " " +
                             shape_of(p.logits) + "); got " + shape_of(p.actions));
  if (p.per_row.dim() != 1 || p.per_row.size(0) != p.batch)
    bad_input(row_port, "must have shape [" + num(p.batch) + "] (one per row of " + logits_port + " " +
                            shape_of(p.logits) + "); got " + shape_of(p.per_row));
  if (p.batch > 0 && ((p.actions < 0).any().item<bool>() || (p.actions >= p.num_actions).any().item<bool>()))
    bad_input("actions", "out of range [0, " + num(p.num_actions) + ") for logits " + shape_of(p.logits) +
                             ". Got min=" + num(p.actions.min().item<int64_t>()) +
                             ", max=" + num(p.actions.max().item<int64_t>()) + ".");
  return p;
}

double temperature_param(const NodeContext& ctx) {
  const double t = ctx.param_float("temperature");
  if (!(t > 0)) bad_param("temperature", "must be positive; got " + py_float(t));
  return t;
}

void register_policy_gradient(NodeRegistry& r) {
  r.add({"rl:Edu-PolicyGradient",
         "RL",
         "Loss for one REINFORCE step, plus every intermediate",
         {def::in("logits", DataType::kTensor, "Policy logits, shape [batch, num_actions]."),
          def::in("actions", DataType::kTensor, "Integer indices of the actions actually taken, shape [batch]."),
          def::in("rewards", DataType::kTensor, "Per-trajectory return for each action, shape [batch].")},
         {def::out("log_probs", DataType::kTensor, "log π(a|s) for the action taken in each item, shape [batch]."),
          def::out("advantages", DataType::kTensor, "rewards − baseline, shape [batch]."),
          def::out("loss", DataType::kTensor, "Scalar policy-gradient loss. Backward through it to get ∇θ."),
          def::out("probs", DataType::kTensor, "Full softmax distribution, shape [batch, num_actions].")},
         {def::select("baseline", "mean", {"none", "mean"},
                      "How to compute the variance-reduction baseline. 'mean' subtracts the batch-average reward; "
                      "'none' uses raw rewards as advantages."),
          def::number("temperature", 1.0,
                      "Softmax temperature. Higher = more exploratory distribution; the lesson shows what happens at "
                      "T → 0 (greedy) and T → ∞ (uniform).",
                      0.01)}},
        [](NodeContext& ctx) {
          const PolicyBatch p = policy_batch(ctx, "logits", "rewards");
          const double temperature = temperature_param(ctx);
          const std::string baseline_mode = ctx.param_string("baseline");
          StepRecorder rec(ctx);
          const Tensor scaled = p.logits / temperature;
          const Tensor probs = torch::softmax(scaled, -1);
          rec.record("softmax", "probs = softmax(logits / T)",
                     {{"logits", p.logits}, {"scaled", scaled}, {"probs", probs}},
                     {{"temperature", temperature}, {"num_actions", static_cast<double>(p.num_actions)}});
          const Tensor action_probs = probs.gather(1, p.actions.unsqueeze(1)).squeeze(1);
          rec.record("gather", "Pick the probability of the action actually taken in each item.",
                     {{"actions", p.actions}, {"action_probs", action_probs}});
          const Tensor log_probs = action_probs.clamp_min(1e-12).log();
          rec.record("log", "log of the action probability.", {{"log_probs", log_probs}});
          Tensor baseline, advantages;
          if (baseline_mode == "mean") {
            baseline = p.per_row.mean();
            advantages = p.per_row - baseline;
          } else {
            baseline = torch::zeros({}, p.per_row.options());
            advantages = p.per_row;
          }
          rec.record("advantages", "advantages = rewards − baseline (" + baseline_mode + ").",
                     {{"rewards", p.per_row}, {"advantages", advantages}},
                     {{"baseline", static_cast<double>(baseline.item<float>())}});
          const Tensor loss = -(log_probs * advantages).mean();
          rec.record("loss",
                     "loss = − mean(log_probs · advantages). Gradient descent on this increases probabilities of "
                     "high-advantage actions.",
                     {{"loss", loss}}, {{"loss", static_cast<double>(loss.item<float>())}});
          ValueMap out{{"log_probs", log_probs}, {"advantages", advantages}, {"loss", loss}, {"probs", probs}};
          return rec.add_to(out);
        });
}

void register_grpo(NodeRegistry& r) {
  r.add({"rl:Edu-GRPO",
         "RL",
         "One GRPO (Group Relative Policy Optimization) step, the core change in DeepSeek R1. Sample a GROUP of G "
         "completions and z-score their rewards within the group — advantages = (rewards − group_mean) / (group_std "
         "+ eps) — instead of subtracting a learned value baseline. The ONLY difference from "
         "REINFORCE/Edu-PolicyGradient is this group-normalized advantage; the rest (softmax → gather log-prob → loss "
         "= −mean(log_probs · advantages)) is an ordinary policy-gradient step. Each intermediate is captured in "
         "verbose mode so students see logits + rewards become a loss.",
         {def::in("logits", DataType::kTensor, "Policy logits for the G grouped samples, shape [G, num_actions]."),
          def::in("actions", DataType::kTensor, "Integer index of the action/token taken in each sample, shape [G]."),
          def::in("rewards", DataType::kTensor, "Scalar reward for each sample in the group, shape [G].")},
         {def::out("loss", DataType::kTensor,
                   "Scalar GRPO loss = −mean(log_probs · advantages). Backward through it to get ∇θ."),
          def::out("advantages", DataType::kTensor,
                   "Group-normalized advantages (rewards − group_mean) / (group_std + eps), shape [G]. Display-only."),
          def::out("log_probs", DataType::kTensor,
                   "log π(a|s) for the action taken in each sample, shape [G]. Display-only."),
          def::out("group_mean", DataType::kTensor,
                   "Mean reward over the group — the GRPO baseline (scalar). Display-only."),
          def::out("group_std", DataType::kTensor, "Population std of the group's rewards (scalar). Display-only.")},
         {def::number("temperature", 1.0,
                      "Softmax temperature. Higher = more exploratory distribution; the lesson shows what happens at "
                      "T → 0 (greedy) and T → ∞ (uniform).",
                      0.01),
          def::number("std_eps", 1e-6,
                      "Epsilon added to the group standard deviation before dividing, for numerical stability. Keeps "
                      "advantages finite when every sample in the group earned the same reward (group_std = 0).",
                      0.0)}},
        [](NodeContext& ctx) {
          const Tensor logits = edu_tensor(ctx, "logits");
          if (logits.dim() == 2 && logits.size(0) < 2)
            bad_input("logits", "a group needs at least two samples to normalize rewards within it; got G=" +
                                    num(logits.size(0)) + " (shape " + shape_of(logits) + ")");
          const PolicyBatch p = policy_batch(ctx, "logits", "rewards");
          const double temperature = temperature_param(ctx);
          const double std_eps = ctx.param_float("std_eps");
          StepRecorder rec(ctx);
          const Tensor scaled = p.logits / temperature;
          const Tensor probs = torch::softmax(scaled, -1);
          rec.record("softmax", "probs = softmax(logits / T) for each of the G grouped samples.",
                     {{"logits", p.logits}, {"scaled", scaled}, {"probs", probs}},
                     {{"temperature", temperature}, {"group_size", static_cast<double>(p.batch)}});
          const Tensor action_probs = probs.gather(1, p.actions.unsqueeze(1)).squeeze(1);
          const Tensor log_probs = action_probs.clamp_min(1e-12).log();
          rec.record("log_probs", "log π(a|s): gather the probability of the action taken, then log.",
                     {{"actions", p.actions}, {"action_probs", action_probs}, {"log_probs", log_probs}});
          // The group's mean is the baseline; its population std rescales the advantage.
          const Tensor group_mean = p.per_row.mean();
          const Tensor group_std = torch::std(p.per_row, /*unbiased=*/false);
          rec.record("group_stats",
                     "Group baseline statistics: mean (the baseline) and population std of the rewards within this "
                     "group.",
                     {{"rewards", p.per_row}, {"group_mean", group_mean}, {"group_std", group_std}},
                     {{"group_mean", static_cast<double>(group_mean.item<float>())},
                      {"group_std", static_cast<double>(group_std.item<float>())}});
          const Tensor advantages = (p.per_row - group_mean) / (group_std + std_eps);
          rec.record("advantages",
                     "advantages = (rewards − group_mean) / (group_std + std_eps). The group-relative z-score replaces "
                     "a learned value baseline — the single change that defines GRPO.",
                     {{"rewards", p.per_row}, {"advantages", advantages}}, {{"std_eps", std_eps}});
          const Tensor loss = -(log_probs * advantages).mean();
          rec.record("loss",
                     "loss = − mean(log_probs · advantages). Gradient descent on this increases the probability of "
                     "above-group-average completions.",
                     {{"loss", loss}}, {{"loss", static_cast<double>(loss.item<float>())}});
          ValueMap out{{"loss", loss},
                       {"advantages", advantages},
                       {"log_probs", log_probs},
                       {"group_mean", group_mean},
                       {"group_std", group_std}};
          return rec.add_to(out);
        });
}

void register_ppo_clip(NodeRegistry& r) {
  r.add({"rl:Edu-PPOClip",
         "RL",
         "One PPO clipped-surrogate step exposed as: log_softmax(logits/T) gathered at the actions for the new and "
         "old policies → ratio = exp(logp_new − logp_old) → clip ratio to [1−ε, 1+ε] → objective = min(ratio·A, "
         "clip·A) → loss = −mean(objective). The ratio, the clipped ratio and the per-sample surrogate are all "
         "captured in verbose mode so students see exactly when the clip binds.",
         {def::in("logits_new", DataType::kTensor, "Current (new) policy logits, shape [batch, num_actions]."),
          def::in("logits_old", DataType::kTensor, "Behaviour (old) policy logits, shape [batch, num_actions]."),
          def::in("actions", DataType::kTensor, "Integer indices of the actions actually taken, shape [batch]."),
          def::in("advantages", DataType::kTensor, "Per-sample advantage estimates, shape [batch].")},
         {def::out("loss", DataType::kTensor,
                   "Scalar PPO clipped-surrogate loss = −mean(min(ratio·A, clip(ratio,1±ε)·A)). Backward to get ∇θ."),
          def::out("ratio", DataType::kTensor,
                   "Probability ratio exp(logp_new − logp_old), shape [batch] (display-only)."),
          def::out("clipped_ratio", DataType::kTensor, "ratio clamped to [1−ε, 1+ε], shape [batch] (display-only)."),
          def::out("objective", DataType::kTensor,
                   "Per-sample min surrogate min(ratio·A, clip·A), shape [batch] (display-only).")},
         {def::number("clip_epsilon", 0.2,
                      "Clip range ε. The ratio is confined to [1−ε, 1+ε]; outside the trust region the clipped branch "
                      "removes the incentive to move further. ε=0 freezes the ratio at 1.",
                      0.0),
          def::number("temperature", 1.0,
                      "Softmax temperature applied to both policies before gathering log-probabilities. Higher = "
                      "softer distributions.",
                      0.01)}},
        [](NodeContext& ctx) {
          const Tensor logits_old = edu_tensor(ctx, "logits_old");
          const PolicyBatch p = policy_batch(ctx, "logits_new", "advantages");
          if (logits_old.dim() != 2) bad_input("logits_old", "must have shape [B, A]; got " + shape_of(logits_old));
          if (logits_old.sizes() != p.logits.sizes())
            bad_input("logits_old",
                      "must have the shape of logits_new " + shape_of(p.logits) + "; got " + shape_of(logits_old));
          const double clip_epsilon = ctx.param_float("clip_epsilon");
          if (clip_epsilon < 0) bad_param("clip_epsilon", "must be >= 0; got " + py_float(clip_epsilon));
          const double temperature = temperature_param(ctx);
          StepRecorder rec(ctx);
          const Tensor idx = p.actions.unsqueeze(1);
          const Tensor logp_new = torch::log_softmax(p.logits / temperature, -1).gather(1, idx).squeeze(1);
          Tensor logp_old;
          {
            // The behaviour policy is a constant: no gradient flows through it.
            torch::NoGradGuard no_grad;
            logp_old = torch::log_softmax(logits_old / temperature, -1).gather(1, idx).squeeze(1);
          }
          rec.record("log_probs", "log π(a|s) for the action taken, under the new and old policies.",
                     {{"logp_new", logp_new}, {"logp_old", logp_old}},
                     {{"temperature", temperature}, {"num_actions", static_cast<double>(p.num_actions)}});
          const Tensor ratio = torch::exp(logp_new - logp_old);
          rec.record("ratio", "ratio = exp(logp_new − logp_old) = π_new(a|s) / π_old(a|s).", {{"ratio", ratio}},
                     {{"clip_epsilon", clip_epsilon}});
          const Tensor clipped = torch::clamp(ratio, 1.0 - clip_epsilon, 1.0 + clip_epsilon);
          rec.record("clip", "clipped = clamp(ratio, 1 − ε, 1 + ε): confine the ratio to the trust region.",
                     {{"clipped", clipped}});
          const Tensor surr1 = ratio * p.per_row, surr2 = clipped * p.per_row;
          rec.record("surrogates", "surr1 = ratio · A (unclipped); surr2 = clipped · A (clipped).",
                     {{"surr1", surr1}, {"surr2", surr2}});
          const Tensor objective = torch::min(surr1, surr2);
          rec.record("objective", "objective = min(surr1, surr2): the pessimistic (lower) surrogate per sample.",
                     {{"objective", objective}});
          const Tensor loss = -objective.mean();
          rec.record("loss",
                     "loss = − mean(objective). Descending it nudges the policy toward high-advantage actions, but "
                     "only within the clip.",
                     {{"loss", loss}}, {{"loss", static_cast<double>(loss.item<float>())}});
          ValueMap out{{"loss", loss}, {"ratio", ratio}, {"clipped_ratio", clipped}, {"objective", objective}};
          return rec.add_to(out);
        });
}

void register_preference_loss(NodeRegistry& r) {
  r.add({"rl:Edu-PreferenceLoss",
         "RL",
         "Bradley-Terry pairwise preference loss for an RLHF reward model, exposed as: margin = r_chosen − r_rejected "
         "→ scale by β → sigmoid (modeled P(chosen > rejected)) → loss = −mean(logsigmoid(β·margin)). Each "
         "intermediate is captured in verbose mode so students see how preference pairs turn into a scalar "
         "reward-model loss.",
         {def::in("reward_chosen", DataType::kTensor, "Reward-model score of the preferred response, shape [batch]."),
          def::in("reward_rejected", DataType::kTensor,
                  "Reward-model score of the dispreferred response, shape [batch].")},
         {def::out("loss", DataType::kTensor,
                   "Scalar Bradley-Terry preference loss = −mean(logsigmoid(β·(r_chosen − r_rejected))). Backward "
                   "through it to get ∇θ."),
          def::out("prob_preferred", DataType::kTensor,
                   "Modeled P(chosen > rejected) = sigmoid(β·margin), shape [batch]. Display-only."),
          def::out("margin", DataType::kTensor, "r_chosen − r_rejected for each pair, shape [batch]. Display-only."),
          def::out("accuracy", DataType::kTensor,
                   "Scalar fraction of pairs already ranked correctly (r_chosen > r_rejected). Display-only.")},
         {def::number("beta", 1.0,
                      "Logistic temperature / scale on the reward margin. Larger β sharpens the modeled preference "
                      "probability toward 0/1; β = 0 makes every pair look like a coin flip.",
                      0.0)}},
        [](NodeContext& ctx) {
          const Tensor chosen = edu_tensor(ctx, "reward_chosen");
          const Tensor rejected = edu_tensor(ctx, "reward_rejected");
          need_rank("reward_chosen", chosen, 1, "[B]");
          need_rank("reward_rejected", rejected, 1, "[B]");
          if (chosen.sizes() != rejected.sizes())
            bad_input("reward_rejected", "must have the length of reward_chosen: shapes " + shape_of(chosen) +
                                             " (reward_chosen) and " + shape_of(rejected) + " (reward_rejected)");
          const double beta = ctx.param_float("beta");
          if (beta < 0) bad_param("beta", "must be >= 0; got " + py_float(beta));
          StepRecorder rec(ctx);
          const Tensor margin = chosen - rejected;
          rec.record("margin",
                     "margin = reward_chosen − reward_rejected. Positive means the model already scores the preferred "
                     "response higher.",
                     {{"reward_chosen", chosen}, {"reward_rejected", rejected}, {"margin", margin}}, {{"beta", beta}});
          const Tensor scaled = beta * margin;
          rec.record("scaled",
                     "scaled = β · margin. β controls how sharply the margin maps to a preference probability.",
                     {{"margin", margin}, {"scaled", scaled}});
          const Tensor prob_preferred = torch::sigmoid(scaled);
          rec.record("sigmoid", "prob_preferred = sigmoid(β·margin) — the modeled P(chosen > rejected).",
                     {{"scaled", scaled}, {"prob_preferred", prob_preferred}});
          const Tensor loss = -torch::log_sigmoid(scaled).mean();
          const Tensor accuracy = (chosen > rejected).to(torch::kFloat32).mean();
          rec.record("loss",
                     "loss = −mean(logsigmoid(β·margin)). Descending it raises chosen scores above rejected ones; "
                     "accuracy is the fraction of pairs already ordered correctly.",
                     {{"loss", loss}, {"accuracy", accuracy}},
                     {{"loss", static_cast<double>(loss.item<float>())},
                      {"accuracy", static_cast<double>(accuracy.item<float>())}});
          ValueMap out{{"loss", loss}, {"prob_preferred", prob_preferred}, {"margin", margin}, {"accuracy", accuracy}};
          return rec.add_to(out);
        });
}

}  // namespace
}  // namespace edu_rl

void register_edu_rl_nodes(NodeRegistry& r) {
  using namespace edu_rl;
  register_policy_gradient(r);
  register_grpo(r);
  register_ppo_clip(r);
  register_preference_loss(r);
}

}  // namespace codefy::nodes
