#include "iss/worker_profile.h"

#include <algorithm>

#include "base/byte_stream.h"

namespace ipu::iss {

void RunTotals::add(uint64_t run_cycles, uint64_t run_instructions, uint64_t run_flops) {
  ++runs;
  cycles += run_cycles;
  instructions += run_instructions;
  flops += run_flops;
  min_cycles = std::min(min_cycles, run_cycles);
  max_cycles = std::max(max_cycles, run_cycles);
}

RunTotals& RunTotals::operator+=(const RunTotals& o) {
  runs += o.runs, cycles += o.cycles, instructions += o.instructions, flops += o.flops;
  min_cycles = std::min(min_cycles, o.min_cycles);
  max_cycles = std::max(max_cycles, o.max_cycles);
  return *this;
}

void WorkerProfile::clear() {
  open_ = {};
  runs_.clear(), batches_.clear(), log_.clear();
  dropped_ = 0, log_sent_ = 0, joins_ = 0;
  batch_first_.reset();
}

void WorkerProfile::started(unsigned worker, uint64_t cycle, uint64_t instret, uint64_t flops,
                            uint32_t function, uint32_t argument) {
  WorkerRun r;
  r.start = cycle;
  r.instructions = instret;  // until it ends: the counts at its start
  r.flops = flops;
  r.function = function, r.argument = argument;
  r.batch = joins_;
  r.worker = worker;
  open_.at(worker) = r;
  if (!batch_first_) {
    batch_first_ = Key{function, argument};
    batch_start_ = batch_end_ = cycle;
    batch_instructions_ = batch_flops_ = 0;
  }
}

void WorkerProfile::finished(unsigned worker, uint64_t end, uint64_t instret, uint64_t flops) {
  std::optional<WorkerRun>& open = open_.at(worker);
  if (!open) return;  // started before profiling began
  WorkerRun r = *open;
  open.reset();
  r.end = end;
  r.instructions = instret - r.instructions;
  r.flops = flops - r.flops;
  runs_[{r.function, r.argument}].add(r.end - r.start, r.instructions, r.flops);
  batch_end_ = std::max(batch_end_, r.end);
  batch_instructions_ += r.instructions;
  batch_flops_ += r.flops;
  if (log_.size() < log_limit_)
    log_.push_back(r);
  else
    ++dropped_;
}

void WorkerProfile::joined() {
  ++joins_;
  if (!batch_first_) return;  // a join with no run since the last
  batches_[*batch_first_].add(batch_end_ - batch_start_, batch_instructions_, batch_flops_);
  batch_first_.reset();
}

std::optional<WorkerRun> WorkerProfile::open_run(unsigned worker, uint64_t issue_end,
                                                 uint64_t instret, uint64_t flops) const {
  if (worker >= open_.size() || !open_[worker]) return std::nullopt;
  WorkerRun r = *open_[worker];
  r.end = issue_end;
  r.instructions = instret - r.instructions;
  r.flops = flops - r.flops;
  return r;
}

namespace {

struct TotalsEntry {  // a map entry as plain bytes
  uint32_t function, argument;
  RunTotals totals;
};

void put_totals(base::ByteWriter& out, const std::map<WorkerProfile::Key, RunTotals>& totals) {
  std::vector<TotalsEntry> entries;
  entries.reserve(totals.size());
  for (const auto& [key, t] : totals) entries.push_back({key.first, key.second, t});
  out.put(entries);
}

void get_totals(base::ByteReader& in, std::map<WorkerProfile::Key, RunTotals>& totals) {
  std::vector<TotalsEntry> entries;
  in.get(entries);
  totals.clear();
  for (const TotalsEntry& e : entries) totals[{e.function, e.argument}] = e.totals;
}

}  // namespace

void WorkerProfile::save(base::ByteWriter& out) const {
  for (const auto& open : open_) {
    out.put(open.has_value());
    out.put(open.value_or(WorkerRun{}));
  }
  put_totals(out, runs_);
  put_totals(out, batches_);
  out.put(
      std::vector<WorkerRun>(log_.begin() + static_cast<std::ptrdiff_t>(log_sent_), log_.end()));
  log_sent_ = log_.size();
  out.put(dropped_), out.put(joins_);
  out.put(batch_first_.has_value());
  const Key first = batch_first_.value_or(Key{});
  out.put(first.first), out.put(first.second);
  out.put(batch_start_), out.put(batch_end_), out.put(batch_instructions_), out.put(batch_flops_);
}

void WorkerProfile::load(base::ByteReader& in) {
  for (auto& open : open_) {
    const bool running = in.get<bool>();
    const auto run = in.get<WorkerRun>();
    open = running ? std::optional<WorkerRun>(run) : std::nullopt;
  }
  get_totals(in, runs_);
  get_totals(in, batches_);
  std::vector<WorkerRun> logged;
  in.get(logged);
  log_.insert(log_.end(), logged.begin(), logged.end());
  in.get(dropped_), in.get(joins_);
  const bool in_batch = in.get<bool>();
  Key first;
  in.get(first.first), in.get(first.second);
  batch_first_ = in_batch ? std::optional<Key>(first) : std::nullopt;
  in.get(batch_start_), in.get(batch_end_), in.get(batch_instructions_), in.get(batch_flops_);
}

}  // namespace ipu::iss
