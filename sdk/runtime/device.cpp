// sc_spawn (the gateways' host links run at once) needs SystemC's dynamic processes.
#define SC_INCLUDE_DYNAMIC_PROCESSES
#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <cerrno>  // program_invocation_short_name
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>
#include <utility>

#include "hw/gateway/gateway.h"
#include "report/html_report.h"
#include "report/run_statistics.h"
#include "sdk/compiler/executable_io.h"
#include "sdk/image/program.h"
#include "sdk/image/symbolizer.h"
#include "sdk/runtime/control_walk.h"
#include "sdk/runtime/device_impl.h"
#include "sdk/runtime/superstep_labels.h"
#include "sdk/tools/output_path.h"

namespace ipu::sdk {

namespace {

// SystemC elaborates one design per process, and has no way to start another.
bool claim_the_process() {
  static bool claimed = false;
  if (claimed) return false;
  claimed = true;
  return true;
}

}  // namespace

DeviceImpl::DeviceImpl(Executable executable, DeviceOptions options)
    : exe_(std::move(executable)), options_(std::move(options)) {
  setenv("SYSTEMC_DISABLE_COPYRIGHT_MESSAGE", "1", 0);  // the program's output is its own
  try {
    hw::validate(static_cast<const hw::RunOptions&>(options_));
    validate(static_cast<const DebugOptions&>(options_));
  } catch (const std::invalid_argument& e) {
    throw DeviceError(fmt::format("DeviceOptions: {}", e.what()));
  }
  if (const unsigned ranks = hw::MpiJob::launched_ranks(); ranks > 1)
    throw DeviceError(fmt::format(
        "started as one of {} MPI ranks: the SDK runtime drives a machine from one process and "
        "cannot split it over ranks yet; run the program without mpirun (ipu-sim run can split a "
        "saved image's machine over ranks)",
        ranks));
  if (!claim_the_process())
    throw DeviceError(
        "a second Device in this process: SystemC simulates one design per process, so each "
        "Device needs a process of its own (one Device can run its executable's programs any "
        "number of times)");
  // The files written after each run: a path that cannot be is an error now, not after a run.
  for (const auto& [path, what] :
       {std::pair{&options_.stats, "the statistics"}, std::pair{&options_.trace, "the trace"},
        std::pair{&options_.report, "the report"}})
    if (!path->empty() && !can_write_file(*path))
      throw DeviceError(fmt::format("cannot write {} to {}", what, *path));
  hw::PlatformOptions run;
  run.machine = exe_.machine;
  static_cast<hw::RunOptions&>(run) = options_;
  run.load_and_start = false;  // the host driver loads the image over PCIe, then starts the tiles
  run.keep_records = options_.keep_records || profiling();
  symbolizer_ = std::make_shared<const Symbolizer>(exe_.image);
  run.locate_pc = [symbolizer = symbolizer_](uint32_t pc) { return symbolizer->locate(pc); };
  run.locate_data = [symbolizer = symbolizer_](uint32_t address) {
    return symbolizer->data(address);
  };
  run.profile_workers = profiling();
  if (!options_.trace.empty() && options_.trace_workers) run.worker_run_log = hw::kTraceWorkerRuns;
  if (!options_.trace.empty()) run.trace_flows = hw::kTraceFlows;
  if (options_.gdb_port) {
    gdb_ = std::make_unique<debug::GdbServer>(static_cast<uint16_t>(*options_.gdb_port));
    gdb_->set_worker_entry_from(exe_.image.symbols);
    run.debugger = gdb_.get();
  }
  sc_core::sc_set_time_resolution(1, sc_core::SC_FS);
  // sc_stop() (a failed load or host sync) prints "Simulation stopped by user." as an info: the
  // run's own failure says why it stopped.
  sc_core::sc_report_handler::set_actions("/OSCI/SystemC", sc_core::SC_INFO,
                                          sc_core::SC_DO_NOTHING);
  image_checksum_ = image_checksum(exe_.image);
  platform_ =
      std::make_unique<hw::Platform>(run, load_program(exe_.image, run.machine), console_, trace_);
  // The platform holds the segments' bytes now: a POD's are gigabytes, kept once.
  for (ElfSegment& s : exe_.image.segments) std::vector<uint8_t>().swap(s.data);
  if (gdb_)
    for (const unsigned tile : platform_->machine().active_tiles())
      gdb_->add_core(platform_->machine().tile(tile).core());
  if (options_.rtl.any())
    rtl_ = std::make_unique<tlm_rtl::RtlPlatform>("rtl", exe_.machine.chip, options_.rtl,
                                                  options_.rtl_trace);
  driver_ = std::make_unique<HostDriver>("host", platform_->machine());
  driver_->boot(platform_->program(), platform_->max_cycles());
  platform_->machine().sync_network().on_host_sync(
      [this](unsigned transfer, uint64_t cycle) { return serve_host_sync(transfer, cycle); });
}

DeviceImpl::~DeviceImpl() {
  if (gdb_ && failure_.empty()) gdb_->finish({});  // exited, status 0
}

void DeviceImpl::check_replica(const char* what, const std::string& name, unsigned replica) const {
  if (replica >= exe_.replicas)
    throw DeviceError(fmt::format("{} '{}': replica {}, but the executable has {} replica{}", what,
                                  name, replica, exe_.replicas, exe_.replicas == 1 ? "" : "s"));
}

size_t DeviceImpl::tensor_bytes(const std::string& name, size_t bytes, unsigned replica,
                                const char* what) const {
  const auto info = exe_.tensor_info.find(name);
  if (info == exe_.tensor_info.end())
    throw DeviceError(fmt::format("{}: no tensor named '{}'", what, name));
  check_replica(what, name, replica);
  const size_t expected = info->second.elements * dtype_size(info->second.type);
  if (bytes != expected)
    throw DeviceError(
        fmt::format("{} '{}': {} bytes given, the tensor has {}", what, name, bytes, expected));
  return dtype_size(info->second.type);
}

void DeviceImpl::connect_stream(const std::string& name, void* buffer, size_t bytes) {
  const auto s = exe_.streams.find(name);
  if (s == exe_.streams.end())
    throw DeviceError(fmt::format("connect_stream: no stream named '{}'", name));
  const size_t each = s->second.elements * dtype_size(s->second.type);
  if (bytes != each * exe_.replicas)
    throw DeviceError(fmt::format(
        "stream '{}': buffer of {} bytes, the stream carries {}{}", name, bytes,
        each * exe_.replicas,
        exe_.replicas == 1 ? std::string()
                           : fmt::format(" ({} replicas of {} bytes)", exe_.replicas, each)));
  for (unsigned r = 0; r < exe_.replicas; ++r)
    connect_stream(name, r, static_cast<uint8_t*>(buffer) + r * each, each);
}

void DeviceImpl::connect_stream(const std::string& name, unsigned replica, void* buffer,
                                size_t bytes) {
  const auto s = exe_.streams.find(name);
  if (s == exe_.streams.end())
    throw DeviceError(fmt::format("connect_stream: no stream named '{}'", name));
  check_replica("stream", name, replica);
  const size_t expected = s->second.elements * dtype_size(s->second.type);
  if (bytes != expected)
    throw DeviceError(fmt::format("stream '{}': buffer of {} bytes, the stream carries {}{}", name,
                                  bytes, expected, exe_.replicas == 1 ? "" : " per replica"));
  auto& buffers = streams_[name];
  buffers.resize(exe_.replicas, nullptr);
  buffers[replica] = static_cast<uint8_t*>(buffer);
}

void DeviceImpl::write_tensor(const std::string& name, const void* data, size_t bytes) {
  for (unsigned r = 0; r < exe_.replicas; ++r) write_tensor(name, r, data, bytes);
}

void DeviceImpl::write_tensor(const std::string& name, unsigned replica, const void* data,
                              size_t bytes) {
  const size_t size = tensor_bytes(name, bytes, replica, "write_tensor");
  for (const Placement& p : exe_.tensors.at(name))
    platform_->machine()
        .tile(machine_tile(replica, p.tile))
        .load(p.address, static_cast<const uint8_t*>(data) + p.begin * size,
              (p.end - p.begin) * size);
}

void DeviceImpl::read_tensor(const std::string& name, void* data, size_t bytes) const {
  read_tensor(name, 0, data, bytes);
}

void DeviceImpl::read_tensor(const std::string& name, unsigned replica, void* data,
                             size_t bytes) const {
  const size_t size = tensor_bytes(name, bytes, replica, "read_tensor");
  for (const Placement& p : exe_.tensors.at(name))
    platform_->machine()
        .tile(machine_tile(replica, p.tile))
        .read(p.address, static_cast<uint8_t*>(data) + p.begin * size, (p.end - p.begin) * size);
}

std::pair<unsigned, uint64_t> DeviceImpl::remote_entry(const std::string& name, unsigned replica,
                                                       unsigned entry, size_t bytes,
                                                       const char* what) const {
  const auto b = exe_.remote_buffers.find(name);
  if (b == exe_.remote_buffers.end())
    throw DeviceError(fmt::format("{}: no remote buffer named '{}'", what, name));
  check_replica(what, name, replica);
  if (entry >= b->second.info.entries)
    throw DeviceError(fmt::format("{} '{}': entry {} is out of range (it has {})", what, name,
                                  entry, b->second.info.entries));
  if (bytes != b->second.entry_bytes)
    throw DeviceError(fmt::format("{} '{}': {} bytes given, an entry has {}", what, name, bytes,
                                  b->second.entry_bytes));
  const ReplicaMemory& m = exe_.replica_memory.at(replica);
  return {m.gateway, m.base + b->second.offset + entry * b->second.entry_bytes};
}

void DeviceImpl::write_remote(const std::string& name, unsigned replica, unsigned entry,
                              const void* data, size_t bytes) {
  const auto [gateway, address] = remote_entry(name, replica, entry, bytes, "write_remote");
  platform_->machine().gateways().all().at(gateway)->memory().write(address, data, bytes);
}

void DeviceImpl::read_remote(const std::string& name, unsigned replica, unsigned entry, void* data,
                             size_t bytes) const {
  const auto [gateway, address] = remote_entry(name, replica, entry, bytes, "read_remote");
  platform_->machine().gateways().all().at(gateway)->memory().read(address, data, bytes);
}

uint64_t DeviceImpl::dispatch() {
  if (!command_) {
    // The program ended: hand control back to the host until run() names the next one.
    at_dispatch_ = true;
    sc_core::sc_pause();
    sc_core::wait(resume_);
    at_dispatch_ = false;
  }
  uint32_t command = *command_;
  command_.reset();
  running_ = command;
  // NOLINTNEXTLINE(performance-unnecessary-copy-initialization): the kernel's clock moves on
  const sc_core::sc_time begin = sc_core::sc_time_stamp();
  std::vector<HostDriver::Piece> pieces;
  for (const auto& [tile, segments] : platform_->program().tiles)
    pieces.push_back({reinterpret_cast<uint8_t*>(&command), 4, tile, exe_.command_address});
  if (!driver_->dma(true, pieces))
    throw DeviceError(
        fmt::format("starting program '{}': {}", exe_.programs.at(command).name, driver_->error()));
  return host_cycles_since(begin);
}

uint64_t DeviceImpl::host_cycles_since(const sc_core::sc_time& begin) {
  const double seconds = (sc_core::sc_time_stamp() - begin).to_seconds();
  const auto cycles = static_cast<uint64_t>(std::ceil(seconds * exe_.machine.chip.tile.clock_hz));
  report_.host_transfer_cycles += cycles;
  return cycles;
}

uint64_t DeviceImpl::serve_host_sync(unsigned transfer, uint64_t cycle) {
  try {
    return host_sync(transfer, cycle);
  } catch (const std::exception& e) {
    if (failure_.empty()) failure_ = e.what(), host_failure_ = std::current_exception();
    sc_core::sc_stop();
    return 0;
  }
}

uint64_t DeviceImpl::gateway_host_sync(const HostTransfer& t, uint64_t cycle) {
  // Over each gateway's RoCE ports into (or out of) the replicas' staging buffers, on the chips'
  // clock: every replica's transfer at once (their messages share the ports), on the DIMMs'
  // schedule with the tiles' transfers. A stream to the device with two buffers takes them in
  // turn; while the tiles read this use's, the host fills the other with the next use's, if
  // the run makes one, and that use waits only for what is left of it.
  const size_t each =
      exe_.streams.at(t.stream).elements * dtype_size(exe_.streams.at(t.stream).type);
  const unsigned buffers = exe_.remote_buffers.at(t.staging).info.entries;
  hw::Gateways& gateways = platform_->machine().gateways();
  StreamTurns& turns = stream_turns_[t.stream];
  const auto start = [&](uint64_t use, uint64_t at) {
    std::vector<std::pair<unsigned, hw::Gateway::HostTransfer>> flights;
    for (unsigned r = 0; r < exe_.replicas; ++r) {
      const auto [gateway, address] =
          remote_entry(t.staging, r, static_cast<unsigned>(use % buffers), each, "host stream");
      flights.emplace_back(gateway, gateways.all().at(gateway)->host_start(
                                        t.to_device, address, streams_.at(t.stream)[r], each, at));
    }
    return flights;
  };
  if (turns.next.empty()) turns.next = start(turns.uses, cycle);
  uint64_t done = cycle;
  for (const auto& [gateway, flight] : turns.next)
    done = std::max(done, gateways.all().at(gateway)->host_finish(flight));
  turns.next.clear();
  ++turns.uses;
  if (turns.left_in_run > 0) --turns.left_in_run;
  if (t.to_device && buffers > 1 && turns.left_in_run > 0) {
    turns.next = start(turns.uses, done);
    report_.prefetched_bytes += each * exe_.replicas;
  }
  (t.to_device ? report_.host_to_device_bytes : report_.device_to_host_bytes) +=
      each * exe_.replicas;
  report_.host_transfer_cycles += done - cycle;
  return done - cycle;
}

uint64_t DeviceImpl::host_sync(unsigned transfer, uint64_t cycle) {
  if (transfer == hw::SyncNetwork::kHostCommand) return dispatch();
  // The firmware asks for transfers by number: one its program does not list means the image's
  // firmware and its .ipu.runtime section disagree.
  const ProgramInfo& program = exe_.programs.at(running_);
  if (std::find(program.host_transfers.begin(), program.host_transfers.end(), transfer) ==
      program.host_transfers.end())
    throw ImageError(
        fmt::format("{}: program '{}' asked the host for transfer {}, which it does not list ({} "
                    "transfers{}): the image's firmware and its {} section disagree",
                    exe_.image.path, program.name, transfer, program.host_transfers.size(),
                    program.host_transfers.empty()
                        ? ""
                        : fmt::format(": {}", fmt::join(program.host_transfers, ", ")),
                    kRuntimeSection));
  const HostTransfer& t = exe_.host_transfers.at(transfer);
  const auto s = streams_.find(t.stream);
  if (s == streams_.end())
    throw DeviceError(fmt::format("stream '{}' was never connected", t.stream));
  if (!t.staging.empty()) return gateway_host_sync(t, cycle);
  const size_t size = dtype_size(exe_.tensor_info.at(t.tensor).type);
  // A copy on purpose: sc_time_stamp() refers to the kernel's clock, which the DMA advances.
  // NOLINTNEXTLINE(performance-unnecessary-copy-initialization)
  const sc_core::sc_time begin = sc_core::sc_time_stamp();
  size_t bytes = 0;
  // Every piece of every replica at once: the driver keeps each chip's DMA queue full.
  std::vector<HostDriver::Piece> pieces;
  for (unsigned r = 0; r < exe_.replicas; ++r)
    for (const Placement& p : exe_.tensors.at(t.tensor)) {
      const size_t n = (p.end - p.begin) * size;
      pieces.push_back({s->second[r] + p.begin * size, n, machine_tile(r, p.tile), p.address});
      bytes += n;
    }
  if (!driver_->dma(t.to_device, pieces))
    throw DeviceError(fmt::format("stream '{}': {}", t.stream, driver_->error()));

  (t.to_device ? report_.host_to_device_bytes : report_.device_to_host_bytes) += bytes;
  // The tiles wait for the DMA: its simulated time delays the sync's release.
  return host_cycles_since(begin);
}

namespace {

// What happened between two of the platform's cumulative reports.
hw::RunReport since(const hw::RunReport& now, const hw::RunReport& before) {
  hw::RunReport r = now;
  r.cycles -= before.cycles;
  r.instructions -= before.instructions;
  r.flops -= before.flops;
  r.supersteps -= before.supersteps;
  r.exchange_words -= before.exchange_words;
  r.inter_chip_words -= before.inter_chip_words;
  r.ipulink_bytes -= before.ipulink_bytes;
  r.streaming_bytes_written -= before.streaming_bytes_written;
  r.streaming_bytes_read -= before.streaming_bytes_read;
  r.streaming_phase_cycles -= before.streaming_phase_cycles;
  r.cross_chip_phase_cycles -= before.cross_chip_phase_cycles;
  for (size_t i = 0; i < r.chip_actions.size() && i < before.chip_actions.size(); ++i)
    r.chip_actions[i] -= before.chip_actions[i];
  for (size_t i = 0; i < r.gateway_actions.size() && i < before.gateway_actions.size(); ++i)
    r.gateway_actions[i] -= before.gateway_actions[i];
  // Each tile's contexts (the same active tiles, in the same order, every run). The supervisor
  // started once, in the first run, and runs in each: its runs stay 1.
  for (size_t t = 0; t < r.per_tile.size() && t < before.per_tile.size(); ++t) {
    std::vector<hw::ContextCounts>& contexts = r.per_tile[t].contexts;
    const std::vector<hw::ContextCounts>& earlier = before.per_tile[t].contexts;
    for (size_t c = 0; c < contexts.size() && c < earlier.size(); ++c) {
      const uint64_t runs = contexts[c].runs;
      contexts[c] -= earlier[c];
      if (c == 0) contexts[c].runs = runs;
    }
  }
  r.shares -= before.shares;
  r.burst_seconds -= before.burst_seconds;
  r.share_seconds -= before.share_seconds;
  return r;
}

}  // namespace

const DeviceReport& DeviceImpl::run() {
  if (exe_.programs.size() != 1) {
    std::vector<std::string> names;
    for (const ProgramInfo& p : exe_.programs) names.push_back("'" + p.name + "'");
    throw DeviceError(fmt::format("run(): the executable has {} programs ({}); name one",
                                  exe_.programs.size(), fmt::join(names, ", ")));
  }
  return run(exe_.programs.front().name);
}

void DeviceImpl::count_stream_uses(unsigned program) {
  // A use is prefetched only if the run makes another: the host does not know the data of a
  // later run. Counted once a program, by following its control steps.
  auto [uses, first] = stream_uses_per_run_.try_emplace(program);
  if (first) {
    const auto syncs = host_syncs_per_run(exe_, program, kMaxHostSyncsCounted);
    if (syncs)
      for (const auto& [id, n] : *syncs)
        if (id < exe_.host_transfers.size()) uses->second[exe_.host_transfers[id].stream] += n;
  }
  for (auto& [stream, turns] : stream_turns_) turns.left_in_run = 0;
  for (const auto& [stream, n] : uses->second) stream_turns_[stream].left_in_run = n;
}

const DeviceReport& DeviceImpl::run(const std::string& name) {
  if (!failure_.empty())
    throw DeviceError(
        fmt::format("run('{}'): the device stopped in an earlier run and runs nothing more; it "
                    "stopped with: {}",
                    name, failure_));
  const auto program = std::find_if(exe_.programs.begin(), exe_.programs.end(),
                                    [&](const ProgramInfo& p) { return p.name == name; });
  if (program == exe_.programs.end()) {
    std::vector<std::string> names;
    for (const ProgramInfo& p : exe_.programs) names.push_back("'" + p.name + "'");
    throw DeviceError(
        fmt::format("run('{}'): the executable has no program of that name (it has {})", name,
                    fmt::join(names, ", ")));
  }
  for (unsigned id : program->host_transfers) {
    const HostTransfer& t = exe_.host_transfers.at(id);
    const auto s = streams_.find(t.stream);
    for (unsigned r = 0; r < exe_.replicas; ++r)
      if (s == streams_.end() || s->second.at(r) == nullptr)
        throw DeviceError(fmt::format(
            "run('{}'): stream '{}' is used by the program but was never connected{}", name,
            t.stream, exe_.replicas == 1 ? "" : fmt::format(" for replica {}", r)));
  }
  report_ = DeviceReport{};
  report_.program = name;
  command_ = static_cast<uint32_t>(program - exe_.programs.begin());
  count_stream_uses(*command_);
  run_programs_.push_back(*command_);
  if (runs_++ > 0) resume_.notify(sc_core::SC_ZERO_TIME);
  const hw::RunReport total = tlm_rtl::run_platform(*platform_, rtl_.get());
  report_.run = since(total, total_);
  report_.energy = hw::price_energy(exe_.machine, report_.run);
  total_ = total;
  for (const auto& [tile, segments] : platform_->program().tiles)
    for (const auto& s : segments) report_.image_bytes += s.bytes.size();
  if (rtl_) {
    report_.rtl = rtl_->stats();
    report_.rtl_trace_files = rtl_->trace_files();
  }
  report_.load_seconds = driver_->load_seconds();
  console_text_ = console_.str();
  if (!failure_.empty()) {
    // A host sync stopped the run (serve_host_sync): failure_ says why.
  } else if (!driver_->error().empty()) {
    failure_ = driver_->error();
  } else if (!at_dispatch_) {
    // The simulation ran out before the program came back to its dispatch sync.
    const hw::ChipOutcome& o = report_.run.outcome;
    failure_ =
        fmt::format("the program failed: {}{}\n{}", o.message.empty() ? "exit status " : "",
                    o.message.empty() ? std::to_string(o.exit_status) : o.message, console_text_);
  }
  if (profiling()) report_.profile = profile();
  write_output(options_.stats, "the statistics", [this](std::ostream& out) { write_stats(out); });
  write_output(options_.trace, "the trace", [this](std::ostream& out) {
    report::TraceOptions trace;
    trace.worker_lanes = options_.trace_workers;
    trace.tiles_per_track = std::max(1u, options_.trace_tiles_per_track);
    trace.function_name = [this](uint32_t pc) { return symbolizer_->function(pc); };
    trace.labels = superstep_labels();
    report::write_trace_json(out, platform_->machine(), trace);
  });
  write_output(options_.report, "the report", [this](std::ostream& out) {
    std::ostringstream stats;
    write_stats(stats);
    report::write_html_report(out, stats.str(),
                              fmt::format("{} on the virtual IPU", program_invocation_short_name));
  });
  if (!failure_.empty()) {
    const hw::ChipOutcome outcome{report_.run.outcome.result, report_.run.outcome.exit_status,
                                  failure_};
    if (gdb_) gdb_->finish(outcome);
    if (host_failure_) std::rethrow_exception(std::exchange(host_failure_, nullptr));
    throw DeviceError(failure_, outcome);
  }
  report_.run.outcome = {};  // every tile is back at its dispatch sync: the program ended
  return report_;
}

// ---- Device: the public face ----
// A host program has an ordinary main(). SystemC's library still refers to sc_main (its own
// main() calls it), so the SDK supplies one; a program that defines sc_main, and lets
// SystemC's main() call it, replaces this weak definition.
extern "C" __attribute__((weak)) int sc_main(int, char**) {
  std::fputs("this program defines neither main() nor sc_main()\n", stderr);
  return 1;
}

Device::Device(const Executable& executable, DeviceOptions options)
    : impl_(std::make_unique<DeviceImpl>(Executable(executable), std::move(options))) {}
Device::Device(Executable&& executable, DeviceOptions options)
    : impl_(std::make_unique<DeviceImpl>(std::move(executable), std::move(options))) {}
Device::~Device() = default;

void Device::connect_stream(const std::string& name, void* buffer, size_t bytes) {
  impl_->connect_stream(name, buffer, bytes);
}
void Device::connect_stream(const std::string& name, unsigned replica, void* buffer, size_t bytes) {
  impl_->connect_stream(name, replica, buffer, bytes);
}
void Device::write_tensor(const std::string& name, const void* data, size_t bytes) {
  impl_->write_tensor(name, data, bytes);
}
void Device::write_tensor(const std::string& name, unsigned replica, const void* data,
                          size_t bytes) {
  impl_->write_tensor(name, replica, data, bytes);
}
void Device::read_tensor(const std::string& name, void* data, size_t bytes) const {
  impl_->read_tensor(name, data, bytes);
}
void Device::read_tensor(const std::string& name, unsigned replica, void* data,
                         size_t bytes) const {
  impl_->read_tensor(name, replica, data, bytes);
}
void Device::write_remote(const std::string& name, unsigned replica, unsigned entry,
                          const void* data, size_t bytes) {
  impl_->write_remote(name, replica, entry, data, bytes);
}
void Device::read_remote(const std::string& name, unsigned replica, unsigned entry, void* data,
                         size_t bytes) const {
  impl_->read_remote(name, replica, entry, data, bytes);
}
const DeviceReport& Device::run(const std::string& program) { return impl_->run(program); }
const DeviceReport& Device::run() { return impl_->run(); }
unsigned Device::runs() const { return impl_->runs(); }
unsigned Device::gdb_port() const { return impl_->gdb_port(); }
const std::string& Device::console() const { return impl_->console(); }
const hw::Machine& Device::machine() const { return impl_->machine(); }
void Device::write_stats(std::ostream& out) const { impl_->write_stats(out); }
Profile Device::profile() const { return impl_->profile(); }

void DeviceImpl::write_output(const std::string& path, const char* what,
                              const std::function<void(std::ostream&)>& writer) {
  if (path.empty()) return;
  std::ofstream out(path);
  writer(out);
  if (!out && failure_.empty()) throw DeviceError(fmt::format("cannot write {} to {}", what, path));
}

Profile DeviceImpl::profile() const {
  if (!profiling()) return {};
  return make_profile(exe_, platform_->machine(),
                      [this](uint32_t pc) { return symbolizer_->function(pc); });
}

std::vector<report::SuperstepLabel> DeviceImpl::superstep_labels() const {
  return label_supersteps(exe_, run_programs_, platform_->machine().sync_network().barriers());
}

void DeviceImpl::write_stats(std::ostream& out) const {
  std::ostringstream machine;
  report::StatsSource source{"<executable>",
                             image_checksum_,
                             [this](uint32_t pc) { return symbolizer_->function(pc); },
                             &platform_->program(),
                             std::nullopt,
                             superstep_labels()};
  // A run that came back to its dispatch sync did not end; one that failed says how.
  if (!failure_.empty()) {
    source.outcome = report_.run.outcome;
    if (source.outcome->message.empty()) source.outcome->message = failure_;
  }
  report::write_stats_json(machine, platform_->machine(), source);
  if (!profiling()) {
    out << machine.str();
    return;
  }
  // The machine's statistics, then the program's compute sets, codelets and vertices.
  auto stats = nlohmann::ordered_json::parse(machine.str());
  auto program = nlohmann::ordered_json::parse(profile_json(profile()));
  for (auto& [key, value] : program.items()) stats[key] = std::move(value);
  out << stats.dump(1) << "\n";
}

}  // namespace ipu::sdk
