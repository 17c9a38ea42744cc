//===- ReuseTests.cpp - a reused cache gives what a fresh run gives -------===//
//
// The property every form of cache reuse promises (docs/serving.md, "What a
// request reuses"): whatever a session's slots went through before (tokens
// consumed, rewinds, rewinds after rewinds, resets, new slots, batched
// steps, speculative steps, the batch scheduler's prefix reuse and its
// cancels), every logits row it returns equals, bit for bit, the row a
// fresh session gives for the same tokens.
//
// Random programs of such operations run on bundles whose sliding rings
// wrap often (window 4, prefill rows 4: rings of 7 slots in a context of
// 64), with attention on the NPU and on the host, and on a bundle without
// sliding layers. Each program is seeded; a failure names its seed, the
// command that runs it alone and the operations that led to it.
//
// PCCX_REUSE_PROGRAMS (programs per bundle and suite) and PCCX_REUSE_SEED
// (the first seed) set the amount; bench/reuse-property.sh runs a long
// mode.
//
//===----------------------------------------------------------------------===//

#include "runtime/app/Batch.h"
#include "runtime/devices/SimDevice.h"

#include <nlohmann/json.hpp>

#include <gtest/gtest.h>

#include <cstdlib>
#include <fstream>
#include <map>
#include <random>
#include <sstream>
#include <unistd.h>

using namespace pccx;

namespace {

std::string scratch() {
  return testing::TempDir() + "pccx-reuse-" + std::to_string(::getpid());
}

struct Cleanup : testing::Environment {
  void TearDown() override {
    (void)std::system(("rm -rf " + scratch()).c_str());
  }
};
testing::Environment *const cleanup =
    testing::AddGlobalTestEnvironment(new Cleanup);

uint64_t envCount(const char *name, uint64_t fallback) {
  const char *v = std::getenv(name);
  return v && *v ? std::strtoull(v, nullptr, 10) : fallback;
}

uint64_t programs() { return envCount("PCCX_REUSE_PROGRAMS", 20); }
uint64_t firstSeed() { return envCount("PCCX_REUSE_SEED", 1); }

/// The tiny model's checkpoint with `edit` applied to its config, compiled
/// with the rings small: prefill rows 4, a batch program of 4 rows.
std::string makeBundle(const std::string &name,
                       const std::function<void(nlohmann::json &)> &edit,
                       const std::string &extra) {
  const std::string dir = PCCX_BIN_DIR, tmp = scratch() + "/" + name;
  const std::string mk = "mkdir -p " + tmp + " && " + dir +
                         "/pccx-make-checkpoint --preset tiny --print-config >" +
                         tmp + "/preset.json";
  EXPECT_EQ(std::system(mk.c_str()), 0);
  nlohmann::json config;
  std::ifstream(tmp + "/preset.json") >> config;
  edit(config);
  std::ofstream(tmp + "/config.json") << config.dump();
  const std::string cmd = dir + "/pccx-make-checkpoint --config " + tmp +
                          "/config.json -o " + tmp + "/ckpt >/dev/null && " +
                          dir + "/pccx-compile " + tmp +
                          "/ckpt --max-seq-len 64 --prefill-rows 4 "
                          "--decode-batch 4 " +
                          extra + " -o " + tmp + "/model.pccx";
  EXPECT_EQ(std::system(cmd.c_str()), 0) << cmd;
  return tmp + "/model.pccx";
}

enum class Kind { NpuAttention, HostAttention, NoSlidingLayers };

const char *kindName(Kind k) {
  switch (k) {
  case Kind::NpuAttention:
    return "NpuAttention";
  case Kind::HostAttention:
    return "HostAttention";
  case Kind::NoSlidingLayers:
    return "NoSlidingLayers";
  }
  return "?";
}

const exec::Model &model(Kind kind) {
  static std::map<Kind, std::unique_ptr<exec::Model>> models;
  std::unique_ptr<exec::Model> &m = models[kind];
  if (!m) {
    auto window4 = [](nlohmann::json &c) { c["sliding_window"] = 4; };
    std::string path;
    if (kind == Kind::NpuAttention)
      path = makeBundle("npu", window4, "");
    else if (kind == Kind::HostAttention)
      path = makeBundle("host", window4, "--attention host");
    else
      path = makeBundle(
          "global",
          [](nlohmann::json &c) {
            for (auto &t : c["layer_types"])
              t = "full_attention";
          },
          "");
    std::string error;
    m = exec::Model::load(path, &error);
    EXPECT_NE(m, nullptr) << error;
  }
  return *m;
}

std::unique_ptr<exec::Session> newSession(const exec::Model &m) {
  return std::make_unique<exec::Session>(
      m, std::make_unique<device::SimDevice>(sim::Numerics::Hardware,
                                             m.target()));
}

/// Logits rows of fresh sessions, by the tokens that lead to them: one fresh
/// run of a sequence gives the rows of all its prefixes.
class Oracle {
public:
  explicit Oracle(const exec::Model &m) : model_(m) {}

  /// The row a fresh run gives for the last of `tokens`.
  const std::vector<float> &row(const std::vector<int32_t> &tokens) {
    auto it = rows_.find(tokens);
    if (it != rows_.end())
      return it->second;
    auto fresh = newSession(model_);
    std::vector<float> logits;
    std::string error;
    const bool ok = fresh->consume(tokens, false, &logits, &error);
    EXPECT_TRUE(ok) << error;
    const size_t vocab = size_t(model_.vocabSize());
    if (!ok)
      logits.assign(tokens.size() * vocab, 0.0f);
    ++freshRuns_;
    for (size_t n = 1; n <= tokens.size(); ++n)
      rows_.emplace(std::vector<int32_t>(tokens.begin(), tokens.begin() + long(n)),
                    std::vector<float>(logits.begin() + long((n - 1) * vocab),
                                       logits.begin() + long(n * vocab)));
    return rows_.at(tokens);
  }
  uint64_t freshRuns() const { return freshRuns_; }

private:
  const exec::Model &model_;
  std::map<std::vector<int32_t>, std::vector<float>> rows_;
  uint64_t freshRuns_ = 0;
};

std::string join(const std::vector<int32_t> &v) {
  std::string s;
  for (size_t i = 0; i < v.size(); ++i)
    s += (i ? "," : "") + std::to_string(v[i]);
  return s;
}

/// The first difference of `got` from the fresh row, or "".
std::string compareRow(const float *got, const std::vector<float> &fresh) {
  for (size_t i = 0; i < fresh.size(); ++i)
    if (std::memcmp(&got[i], &fresh[i], sizeof(float)) != 0) {
      float worst = 0;
      for (size_t j = 0; j < fresh.size(); ++j)
        worst = std::max(worst, std::abs(got[j] - fresh[j]));
      std::ostringstream out;
      out << "logit " << i << " is " << got[i] << ", a fresh run gives "
          << fresh[i] << " (largest difference in the row " << worst << ")";
      return out.str();
    }
  return "";
}

/// One random program of session operations, checked as it runs.
class SessionProgram {
public:
  SessionProgram(Kind kind, uint64_t seed, Oracle &oracle)
      : kind_(kind), model_(model(kind)), seed_(seed), rng_(seed),
        oracle_(oracle), session_(newSession(model_)), mirror_(1),
        forgotten_(1) {}

  /// Runs `ops` operations; false (with a failure reported) at the first
  /// row or state that differs.
  bool run(int ops) {
    for (int i = 0; i < ops && !failed_; ++i) {
      const int pick = int(rng_() % 100);
      if (pick < 30)
        consume();
      else if (pick < 52)
        rewind();
      else if (pick < 56)
        resetSlot();
      else if (pick < 59)
        reserve();
      else if (pick < 82)
        step();
      else
        draft();
      checkState();
    }
    return !failed_;
  }
  uint64_t checkedRows() const { return rows_; }

private:
  int64_t room(int slot) const {
    return session_->capacity() - int64_t(mirror_[size_t(slot)].size());
  }
  int randomSlot() { return int(rng_() % mirror_.size()); }
  /// Half the time what stood there before the last rewind (a regenerate),
  /// else random ids from a small alphabet (so prompt lookup finds drafts).
  int32_t nextToken(int slot) {
    std::vector<int32_t> &f = forgotten_[size_t(slot)];
    if (!f.empty() && rng_() % 2) {
      const int32_t t = f.front();
      f.erase(f.begin());
      return t;
    }
    f.clear();
    return int32_t(2 + rng_() % 12);
  }

  void fail(const std::string &what) {
    std::ostringstream out;
    out << kindName(kind_) << " program seed " << seed_ << ": " << what
        << "\nreproduce: PCCX_REUSE_SEED=" << seed_
        << " PCCX_REUSE_PROGRAMS=1 PccxAppTests --gtest_filter='*"
        << kindName(kind_) << "*Session*'\noperations:\n";
    for (const std::string &op : log_)
      out << "  " << op << "\n";
    ADD_FAILURE() << out.str();
    failed_ = true;
  }

  /// Row `r` of `logits` is the one after mirror position `position`.
  void expectRow(int slot, int64_t position, const float *got) {
    std::vector<int32_t> prefix(mirror_[size_t(slot)].begin(),
                                mirror_[size_t(slot)].begin() + position + 1);
    const std::string diff = compareRow(got, oracle_.row(prefix));
    ++rows_;
    if (!diff.empty())
      fail("slot " + std::to_string(slot) + ", position " +
           std::to_string(position) + ": " + diff);
  }

  void checkState() {
    if (failed_)
      return;
    for (int slot = 0; slot < int(mirror_.size()); ++slot) {
      if (session_->position(slot) != int64_t(mirror_[size_t(slot)].size()) ||
          session_->tokens(slot) != mirror_[size_t(slot)]) {
        fail("slot " + std::to_string(slot) + " holds [" +
             join(session_->tokens(slot)) + "] at position " +
             std::to_string(session_->position(slot)) + ", expected [" +
             join(mirror_[size_t(slot)]) + "]");
        return;
      }
    }
  }

  void consume() {
    const int slot = randomSlot();
    const int64_t n = std::min<int64_t>(1 + int64_t(rng_() % 10), room(slot));
    if (n <= 0)
      return resetSlot(slot);
    std::vector<int32_t> tokens;
    for (int64_t i = 0; i < n; ++i)
      tokens.push_back(nextToken(slot));
    const bool decodeOnly = rng_() % 4 == 0;
    const bool last = rng_() % 3 == 0;
    log_.push_back("consume slot " + std::to_string(slot) + " [" +
                   join(tokens) + "]" + (decodeOnly ? " decode-only" : "") +
                   (last ? " last-row" : ""));
    std::vector<float> logits;
    std::string error;
    if (!session_->consume(slot, tokens, decodeOnly, &logits, &error,
                           last ? exec::LogitsRows::Last
                                : exec::LogitsRows::Every))
      return fail("consume: " + error);
    std::vector<int32_t> &m = mirror_[size_t(slot)];
    const int64_t first = int64_t(m.size());
    m.insert(m.end(), tokens.begin(), tokens.end());
    oracle_.row(m); // one fresh run for every row below
    const size_t vocab = size_t(model_.vocabSize());
    if (last)
      return expectRow(slot, first + n - 1, logits.data());
    for (int64_t r = 0; r < n && !failed_; ++r)
      expectRow(slot, first + r, logits.data() + r * long(vocab));
  }

  void rewind() {
    const int slot = randomSlot();
    std::vector<int32_t> &m = mirror_[size_t(slot)];
    const int64_t at = int64_t(m.size());
    // Mostly a few positions back (a rejected draft, a regenerate), often
    // anywhere, sometimes the end itself.
    int64_t to = at;
    const int how = int(rng_() % 3);
    if (how == 0)
      to = std::max<int64_t>(0, at - 1 - int64_t(rng_() % 6));
    else if (how == 1)
      to = int64_t(rng_() % uint64_t(at + 1));
    log_.push_back("rewind slot " + std::to_string(slot) + " to " +
                   std::to_string(to) + " (from " + std::to_string(at) + ")");
    std::string error;
    if (!session_->rewind(slot, to, &error)) {
      // What callers do with a refused rewind: start over and feed the
      // kept tokens. (The session itself does that now; a refusal still
      // must not give other rows.)
      log_.back() += " refused (" + error + "), kept tokens fed again";
      session_->reset(slot);
      if (to > 0 &&
          !session_->consume(slot, std::vector<int32_t>(m.begin(), m.begin() + to),
                             false, nullptr, &error))
        return fail("consume after a refused rewind: " + error);
    }
    forgotten_[size_t(slot)].assign(m.begin() + to, m.end());
    m.resize(size_t(to));
  }

  void resetSlot(int slot = -1) {
    if (slot < 0)
      slot = randomSlot();
    log_.push_back("reset slot " + std::to_string(slot));
    session_->reset(slot);
    mirror_[size_t(slot)].clear();
    forgotten_[size_t(slot)].clear();
  }

  void reserve() {
    const int count = std::min<int>(4, int(mirror_.size()) + 1);
    log_.push_back("reserve " + std::to_string(count) + " slots");
    std::string error;
    if (!session_->reserveSlots(count, &error))
      return fail("reserveSlots: " + error);
    mirror_.resize(size_t(count));
    forgotten_.resize(size_t(count));
  }

  /// Rows of several slots together: 1 to prefill-rows rows each.
  void step() {
    std::vector<exec::Session::StepRow> rows;
    std::vector<std::pair<int, int64_t>> where; // slot, position
    std::vector<int64_t> added(mirror_.size(), 0);
    const int count = 1 + int(rng_() % 6);
    for (int i = 0; i < count; ++i) {
      const int slot = randomSlot();
      if (added[size_t(slot)] >= room(slot))
        continue;
      const int32_t token = nextToken(slot);
      rows.push_back({slot, token});
      where.emplace_back(slot, int64_t(mirror_[size_t(slot)].size()) +
                                   added[size_t(slot)]++);
    }
    if (rows.empty())
      return resetSlot();
    std::string desc = "step";
    for (const auto &r : rows)
      desc += " " + std::to_string(r.slot) + ":" + std::to_string(r.token);
    log_.push_back(desc);
    std::vector<float> logits;
    std::string error;
    if (!session_->step(rows, &logits, &error))
      return fail("step: " + error);
    for (const auto &r : rows)
      mirror_[size_t(r.slot)].push_back(r.token);
    for (size_t slot = 0; slot < added.size(); ++slot)
      if (added[slot])
        oracle_.row(mirror_[slot]);
    const size_t vocab = size_t(model_.vocabSize());
    for (size_t r = 0; r < rows.size() && !failed_; ++r)
      expectRow(where[r].first, where[r].second,
                logits.data() + long(r * vocab));
  }

  /// Speculative decoding's steps (app::decodeStep): a fed token and
  /// prompt-lookup drafts verified together, the rejected rows rewound.
  void draft() {
    const int slot = randomSlot();
    if (room(slot) < 2)
      return resetSlot(slot);
    app::SamplingOptions greedy;
    app::Sampler sampler(greedy);
    std::vector<int32_t> &m = mirror_[size_t(slot)];
    int32_t next = nextToken(slot);
    const int64_t remaining = std::min<int64_t>(room(slot), 1 + rng_() % 8);
    log_.push_back("draft slot " + std::to_string(slot) + " feeding " +
                   std::to_string(next) + " for up to " +
                   std::to_string(remaining) + " tokens");
    int64_t produced = 0;
    bool more = true;
    app::DraftStats stats;
    while (more && !failed_) {
      const int64_t first = int64_t(m.size());
      std::vector<float> kept;
      std::string error;
      auto emit = [&](int32_t) {
        ++produced;
        return produced < remaining && int64_t(m.size()) < session_->capacity();
      };
      if (!app::decodeStep(*session_, slot, sampler, 3, remaining - produced,
                           m, &next, &kept, emit, &more, &stats, &error))
        return fail("decodeStep: " + error);
      const size_t vocab = size_t(model_.vocabSize());
      if (int64_t(m.size()) > first)
        oracle_.row(m);
      for (int64_t p = first; p < int64_t(m.size()) && !failed_; ++p)
        expectRow(slot, p, kept.data() + (p - first) * long(vocab));
      if (int64_t(m.size()) >= session_->capacity())
        break;
    }
    log_.back() += " (" + std::to_string(stats.drafted) + " drafted, " +
                   std::to_string(stats.accepted) + " accepted)";
  }

  Kind kind_;
  const exec::Model &model_;
  uint64_t seed_;
  std::mt19937_64 rng_;
  Oracle &oracle_;
  std::unique_ptr<exec::Session> session_;
  /// What each slot should hold, and what stood past its last rewind.
  std::vector<std::vector<int32_t>> mirror_, forgotten_;
  std::vector<std::string> log_;
  bool failed_ = false;
  uint64_t rows_ = 0;
};

class Reuse : public testing::TestWithParam<Kind> {};

/// A scheduled request: its prompt and generated tokens, and the logits
/// row each generated token was chosen from.
struct Request {
  std::vector<int32_t> tokens;
  std::vector<std::vector<float>> rows;
};

TEST_P(Reuse, SessionOperationsGiveFreshRows) {
  Oracle oracle(model(GetParam()));
  uint64_t rows = 0;
  for (uint64_t i = 0; i < programs(); ++i) {
    SessionProgram program(GetParam(), firstSeed() + i, oracle);
    if (!program.run(40))
      break;
    rows += program.checkedRows();
  }
  RecordProperty("programs", int(programs()));
  RecordProperty("rows", int(rows));
  std::printf("%s: %llu programs, %llu logits rows compared with %llu fresh "
              "runs\n",
              kindName(GetParam()), (unsigned long long)programs(),
              (unsigned long long)rows,
              (unsigned long long)oracle.freshRuns());
}

/// The batch scheduler (the server's engine) over a stream of requests as a
/// chat front end sends them: edits, regenerates, next turns, new prompts,
/// some cancelled part way.
TEST_P(Reuse, SchedulerRequestsGiveFreshRows) {
  const exec::Model &m = model(GetParam());
  Oracle oracle(m);
  uint64_t rows = 0, requests = 0;
  for (uint64_t i = 0; i < programs(); ++i) {
    const uint64_t seed = firstSeed() + i;
    std::mt19937_64 rng(seed);
    auto session = newSession(m);
    const int parallel = seed % 2 ? 4 : 1;
    app::BatchScheduler scheduler(*session, parallel);
    std::string error;
    ASSERT_TRUE(scheduler.init(&error)) << error;
    struct Conversation {
      std::vector<int32_t> prompt, full; ///< the last request, and its reply
    };
    std::vector<Conversation> conversations(1 + rng() % 3);
    std::vector<std::string> log;
    std::vector<std::pair<std::shared_ptr<Request>, int64_t>> pending;
    bool failed = false;
    for (int round = 0; round < 12 && !failed; ++round) {
      const int count = 1 + int(rng() % uint64_t(parallel + 1));
      for (int k = 0; k < count; ++k) {
        // A front end working on a few conversations: mostly the next turn,
        // a regenerate (of a little less) or an edit near the end, now and
        // then a new conversation.
        const size_t c = size_t(rng() % conversations.size());
        Conversation &conv = conversations[c];
        std::vector<int32_t> prompt;
        const int how = conv.prompt.empty() || conv.full.size() > 40
                            ? 0
                            : int(rng() % 10);
        auto randomTokens = [&](int64_t n) {
          for (int64_t e = 0; e < n; ++e)
            prompt.push_back(int32_t(2 + rng() % 12));
        };
        if (how == 0) { // a new conversation
          randomTokens(1 + int64_t(rng() % 16));
        } else if (how <= 4) { // the next turn
          prompt = conv.full;
          randomTokens(1 + int64_t(rng() % 6));
        } else if (how <= 7) { // regenerate, or of a little less
          prompt = conv.prompt;
          prompt.resize(prompt.size() -
                        std::min<size_t>(prompt.size() - 1, rng() % 4));
        } else { // edit one of the last tokens
          prompt = conv.prompt;
          prompt[prompt.size() - 1 -
                 std::min<size_t>(prompt.size() - 1, rng() % 6)] =
              int32_t(2 + rng() % 12);
        }
        const int64_t maxNew = 1 + int64_t(rng() % 6);
        if (int64_t(prompt.size()) + maxNew > m.maxSeqLen())
          prompt.resize(size_t(m.maxSeqLen() - maxNew));
        auto done = std::make_shared<Request>();
        done->tokens = prompt;
        const int64_t cancelAfter = rng() % 6 == 0 ? int64_t(rng() % 4) : -1;
        auto id = std::make_shared<int64_t>(-1);
        app::BatchRequest r;
        r.prompt = prompt;
        r.options.maxNewTokens = maxNew;
        if (rng() % 3 == 0)
          r.options.sampling.repetitionPenalty = 1.3;
        log.push_back("request [" + join(prompt) + "] max " +
                      std::to_string(maxNew) +
                      (cancelAfter >= 0
                           ? " cancelled after " + std::to_string(cancelAfter)
                           : std::string()));
        r.options.onLogits = [done](const std::vector<float> &got) {
          done->rows.push_back(got);
        };
        const int64_t promptSize = int64_t(prompt.size());
        r.options.onToken = [&scheduler, done, id, cancelAfter,
                             promptSize](int32_t token) {
          done->tokens.push_back(token);
          if (cancelAfter >= 0 &&
              int64_t(done->tokens.size()) - promptSize > cancelAfter)
            scheduler.cancel(*id);
        };
        r.onDone = [&conversations, c, prompt,
                    done](const app::GenerateResult &, const std::string &why) {
          EXPECT_EQ(why, "");
          conversations[c] = {prompt, done->tokens};
        };
        pending.push_back({done, promptSize});
        *id = scheduler.submit(std::move(r));
        ++requests;
      }
      ASSERT_TRUE(scheduler.runAll(&error)) << error;
      // Row k chose generated token k, after the prompt and tokens 0..k-1.
      for (const auto &[done, promptSize] : pending) {
        if (failed)
          break;
        if (!done->rows.empty())
          oracle.row(std::vector<int32_t>(
              done->tokens.begin(),
              done->tokens.begin() + promptSize + long(done->rows.size()) - 1));
        for (size_t k = 0; k < done->rows.size() && !failed; ++k) {
          const std::vector<int32_t> seen(done->tokens.begin(),
                                          done->tokens.begin() + promptSize +
                                              long(k));
          const std::string diff =
              compareRow(done->rows[k].data(), oracle.row(seen));
          ++rows;
          if (diff.empty())
            continue;
          failed = true;
          std::ostringstream out;
          out << kindName(GetParam()) << " scheduler program seed " << seed
              << " (--parallel " << parallel << "), after [" << join(seen)
              << "]: " << diff << "\nreproduce: PCCX_REUSE_SEED=" << seed
              << " PCCX_REUSE_PROGRAMS=1 PccxAppTests --gtest_filter='*"
              << kindName(GetParam()) << "*Scheduler*'\nrequests:\n";
          for (const std::string &l : log)
            out << "  " << l << "\n";
          ADD_FAILURE() << out.str();
        }
      }
      pending.clear();
    }
    if (failed)
      break;
  }
  std::printf("%s: %llu scheduler requests, %llu logits rows compared\n",
              kindName(GetParam()), (unsigned long long)requests,
              (unsigned long long)rows);
}

INSTANTIATE_TEST_SUITE_P(Bundles, Reuse,
                         testing::Values(Kind::NpuAttention,
                                         Kind::HostAttention,
                                         Kind::NoSlidingLayers),
                         [](const testing::TestParamInfo<Kind> &info) {
                           return std::string(kindName(info.param));
                         });

} // namespace

namespace {

/// The pattern a chat front end sends: a prompt, a regenerate of a little
/// less, then less again; each rewind is short, together they reach past
/// what the rings hold.
TEST(Reuse, SchedulerRegeneratesTwice) {
  const exec::Model &m = model(Kind::NpuAttention);
  Oracle oracle(m);
  auto session = newSession(m);
  app::BatchScheduler scheduler(*session, 1);
  std::string error;
  ASSERT_TRUE(scheduler.init(&error)) << error;
  std::vector<int32_t> a;
  for (int i = 0; i < 20; ++i)
    a.push_back(int32_t(2 + (i * 7) % 12));
  auto run = [&](const std::vector<int32_t> &prompt, int64_t maxNew) {
    auto done = std::make_shared<Request>();
    done->tokens = prompt;
    app::BatchRequest r;
    r.prompt = prompt;
    r.options.maxNewTokens = maxNew;
    r.options.onLogits = [done](const std::vector<float> &got) {
      done->rows.push_back(got);
    };
    r.options.onToken = [done](int32_t t) { done->tokens.push_back(t); };
    scheduler.submit(std::move(r));
    EXPECT_TRUE(scheduler.runAll(&error)) << error;
    for (size_t k = 0; k < done->rows.size(); ++k)
      EXPECT_EQ(compareRow(done->rows[k].data(),
                           oracle.row(std::vector<int32_t>(
                               done->tokens.begin(),
                               done->tokens.begin() + long(prompt.size() + k)))),
                "")
          << "prompt of " << prompt.size() << ", row " << k;
    return done->tokens;
  };
  const std::vector<int32_t> first = run(a, 8);
  const std::vector<int32_t> second =
      run(std::vector<int32_t>(first.begin(), first.begin() + 24), 1);
  run(std::vector<int32_t>(second.begin(), second.begin() + 22), 4);
  std::printf("positions kept: %lld reused in all\n",
              (long long)scheduler.stats().reusedTokens);
}

} // namespace
