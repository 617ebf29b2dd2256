#include "gdb_server.h"

#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <charconv>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <stdexcept>

#include "iss/csr.h"
#include "remote_connection.h"

namespace ipu::debug {
namespace {

// GDB's own signal numbers (gdb/signals.def), which the remote protocol uses.
constexpr int kSigInt = 2, kSigIll = 4, kSigTrap = 5, kSigAbrt = 6, kSigBus = 10, kSigSegv = 11,
              kSigXcpu = 24;

// Interrupt polls: one socket check per this many issues keeps the cost out of the loop.
constexpr unsigned kInterruptPollInterval = 4096;

// ---- the register file as GDB sees it: one table, in `g` packet order ----

struct RegisterSpec {
  enum class Kind : uint8_t { kX, kPc, kF, kCsr } kind;
  unsigned index;  // x or f register number, or CSR number
  std::string name;
  const char* type;
  const char* feature;
  bool writable = true;  // false: a read-only CSR
};

const std::vector<RegisterSpec>& registers() {
  static const std::vector<RegisterSpec> table = [] {
    static const char* const kXNames[32] = {"zero", "ra", "sp",  "gp",  "tp", "t0", "t1", "t2",
                                            "fp",   "s1", "a0",  "a1",  "a2", "a3", "a4", "a5",
                                            "a6",   "a7", "s2",  "s3",  "s4", "s5", "s6", "s7",
                                            "s8",   "s9", "s10", "s11", "t3", "t4", "t5", "t6"};
    static const char* const kFNames[32] = {
        "ft0", "ft1", "ft2", "ft3", "ft4",  "ft5",  "ft6", "ft7", "fs0",  "fs1", "fa0",
        "fa1", "fa2", "fa3", "fa4", "fa5",  "fa6",  "fa7", "fs2", "fs3",  "fs4", "fs5",
        "fs6", "fs7", "fs8", "fs9", "fs10", "fs11", "ft8", "ft9", "ft10", "ft11"};
    constexpr const char* kCpu = "org.gnu.gdb.riscv.cpu";
    constexpr const char* kFpu = "org.gnu.gdb.riscv.fpu";
    constexpr const char* kCsr = "org.gnu.gdb.riscv.csr";
    std::vector<RegisterSpec> t;
    for (unsigned i = 0; i < 32; ++i)
      t.push_back({RegisterSpec::Kind::kX, i, kXNames[i],
                   i == 1   ? "code_ptr"
                   : i == 2 ? "data_ptr"
                            : "int",
                   kCpu});
    t.push_back({RegisterSpec::Kind::kPc, 0, "pc", "code_ptr", kCpu});
    for (unsigned i = 0; i < 32; ++i)
      t.push_back({RegisterSpec::Kind::kF, i, kFNames[i], "ieee_single", kFpu});
    for (const iss::CsrInfo& csr : iss::kCsrTable) {
      const std::string name(csr.name);
      // The counters' user aliases repeat mcycle/minstret; a console write prints a byte.
      if (name == "cycle" || name == "instret" || name == "cycleh" || name == "instreth" ||
          name == "ipu_console")
        continue;
      const bool fp = csr.number <= 3;  // fflags, frm, fcsr belong to the FPU feature
      t.push_back({RegisterSpec::Kind::kCsr, csr.number, name, "int", fp ? kFpu : kCsr,
                   csr.access == iss::CsrAccess::kReadWrite});
    }
    return t;
  }();
  return table;
}

std::string hex32(uint32_t v) {  // target (little-endian) byte order
  return fmt::format("{:02x}{:02x}{:02x}{:02x}", v & 0xff, (v >> 8) & 0xff, (v >> 16) & 0xff,
                     v >> 24);
}

std::optional<uint32_t> parse_hex32_le(std::string_view hex) {
  const std::optional<std::string> bytes = from_hex(hex);
  if (!bytes || bytes->size() != 4) return std::nullopt;
  uint32_t v = 0;
  for (int i = 3; i >= 0; --i) v = v << 8 | static_cast<unsigned char>((*bytes)[i]);
  return v;
}

// A hex number (GDB sends addresses, lengths and thread ids big-endian, as text); kBad when
// `text` is not one. (Not std::optional: GCC 12 warns of its use after the checks below.)
constexpr uint64_t kBad = ~uint64_t{0};
uint64_t parse_number(std::string_view text, int base = 16) {
  uint64_t v = 0;
  if (text.empty()) return kBad;
  const auto [end, error] = std::from_chars(text.data(), text.data() + text.size(), v, base);
  if (error != std::errc() || end != text.data() + text.size()) return kBad;
  return v;
}

// Thread ids of H and vCont: "-1" (all) and "0" (any) are both 0 here.
std::optional<unsigned> parse_thread(std::string_view text) {
  if (text == "-1") return 0u;
  const uint64_t v = parse_number(text);
  if (v > 0xffffffffu) return std::nullopt;
  return static_cast<unsigned>(v);
}

std::string context_label(unsigned context) {
  return context == 0 ? std::string("supervisor") : fmt::format("worker {}", context);
}

// A qXfer reply: the part of `document` at offset,length.
std::string xfer_slice(const std::string& document, std::string_view range) {
  const size_t comma = range.find(',');
  if (comma == std::string_view::npos) return "E00";
  const uint64_t offset = parse_number(range.substr(0, comma));
  const uint64_t length = parse_number(range.substr(comma + 1));
  if (offset == kBad || length == kBad) return "E00";
  if (offset >= document.size()) return "l";
  const std::string part = document.substr(offset, length);
  return (offset + part.size() >= document.size() ? "l" : "m") + part;
}

}  // namespace

const std::string& GdbServer::target_xml() {
  static const std::string xml = [] {
    std::string out =
        "<?xml version=\"1.0\"?>\n<!DOCTYPE target SYSTEM \"gdb-target.dtd\">\n"
        "<target version=\"1.0\">\n<architecture>riscv:rv32</architecture>\n";
    const char* feature = nullptr;
    unsigned regnum = 0;
    for (const RegisterSpec& r : registers()) {
      if (feature == nullptr || std::strcmp(feature, r.feature) != 0) {
        if (feature != nullptr) out += "</feature>\n";
        feature = r.feature;
        out += fmt::format("<feature name=\"{}\">\n", feature);
      }
      out += fmt::format("  <reg name=\"{}\" bitsize=\"32\" type=\"{}\" regnum=\"{}\"/>\n", r.name,
                         r.type, regnum++);
    }
    out += "</feature>\n</target>\n";
    return out;
  }();
  return xml;
}

unsigned GdbServer::register_count() { return static_cast<unsigned>(registers().size()); }

GdbServer::GdbServer(uint16_t port, std::string program)
    : listener_(std::make_unique<Listener>(port)),
      program_(program.empty() ? std::string() : program + ": ") {
  kill_ = [prefix = program_] {
    std::fflush(stdout);
    fmt::print(stderr, "{}killed by the debugger\n", prefix);
    std::fflush(stderr);
    std::_Exit(kKilledExitStatus);
  };
  fmt::print(stderr,
             "{}waiting for GDB on localhost:{} (gdb-multiarch ELF -ex 'target remote :{}')\n",
             program_, this->port(), this->port());
  std::fflush(stderr);
}

// The cores may be gone by now (the embedder's platform can end first): touch none of them.
GdbServer::~GdbServer() = default;

uint16_t GdbServer::port() const { return listener_->port(); }

void GdbServer::add_core(iss::Core& core) {
  first_thread_[&core] = static_cast<unsigned>(threads_.size()) + 1;
  for (unsigned c = 0; c <= core.worker_contexts(); ++c) threads_.push_back({&core, c});
  core.set_debug(this);
}

unsigned GdbServer::thread_id(const iss::Core& core, unsigned context) const {
  return first_thread_.at(&core) + context;
}

const GdbServer::Thread* GdbServer::thread(unsigned id) const {
  return id >= 1 && id <= threads_.size() ? &threads_[id - 1] : nullptr;
}

iss::Context* GdbServer::context_of(unsigned id) const {
  const Thread* t = thread(id);
  return t != nullptr ? &t->core->context(t->context) : nullptr;
}

unsigned GdbServer::selected(unsigned id) const { return id == 0 ? last_stop_.thread : id; }

// ---- the hooks ----

void GdbServer::before_issue(iss::Core& core, iss::Context& c) {
  if (detached_) return;
  const unsigned id = thread_id(core, c.id);
  if (!attached_) {  // the platform starts stopped, at the first instruction
    connection_ = std::make_unique<RemoteConnection>(listener_->accept_client());
    // A second client is told at once (GDB shows the text of an E. reply) instead of waiting.
    listener_->turn_away_others(
        "+" + frame_packet("E.the simulator's GDB port is busy: another debugger is attached"));
    attached_ = true;
    last_stop_ = {id, kSigTrap, ""};
    serve();
    return;
  }
  if (step_) {
    const iss::Context* stepping = context_of(step_->thread);
    const bool done = id == step_->thread ? c.pc != step_->pc || c.instret != step_->instret
                                          // the stepped worker exited: stop on its tile
                                          : stepping->state != iss::ContextState::kRunning &&
                                                thread(step_->thread)->core == &core;
    if (done) {
      stop({id == step_->thread ? id : step_->thread, kSigTrap, ""});
      return;
    }
  }
  const auto bp = breakpoints_.find(c.pc);
  if (bp != breakpoints_.end()) {
    stop({id, kSigTrap, bp->second ? "hwbreak:;" : "swbreak:;"});
    return;
  }
  if (++interrupt_poll_ == kInterruptPollInterval) {
    interrupt_poll_ = 0;
    if (connection_->interrupted()) stop({id, kSigInt, ""});
  }
}

// The access has not happened yet (nor has anything else of its instruction): the stop is
// before the instruction, as RISC-V debug triggers fire and as GDB expects of this architecture
// (it steps the instruction with the watchpoint removed, then compares the values).
void GdbServer::on_access(iss::Core& core, const iss::Context& c, uint32_t address, uint32_t bytes,
                          bool write) {
  if (detached_ || (watch_tile_ && *watch_tile_ != core.machine_tile_id())) return;
  for (const Watchpoint& w : watchpoints_) {
    const bool kind_matches =
        w.kind == WatchKind::kAccess || (w.kind == WatchKind::kWrite) == write;
    if (!kind_matches || uint64_t{address} + bytes <= w.address ||
        uint64_t{w.address} + w.bytes <= address)
      continue;
    const char* name = w.kind == WatchKind::kWrite  ? "watch"
                       : w.kind == WatchKind::kRead ? "rwatch"
                                                    : "awatch";
    stop({thread_id(core, c.id), kSigTrap,
          fmt::format("{}:{:x};", name, std::max(address, w.address))});
    return;
  }
}

void GdbServer::on_fault(iss::Core& core, iss::Context& c) {
  if (detached_ || !attached_) return;
  int signal = kSigAbrt;  // an IPU program error (exchange or sync misuse)
  switch (core.fault().cause) {
    case iss::TrapCause::kIllegalInstruction: signal = kSigIll; break;
    case iss::TrapCause::kBreakpoint: signal = kSigTrap; break;
    case iss::TrapCause::kInstrMisaligned:
    case iss::TrapCause::kLoadMisaligned:
    case iss::TrapCause::kStoreMisaligned: signal = kSigBus; break;
    case iss::TrapCause::kInstrAccessFault:
    case iss::TrapCause::kLoadAccessFault:
    case iss::TrapCause::kStoreAccessFault: signal = kSigSegv; break;
    default: break;
  }
  if (waiting_) send_console(core.fault().message + "\n");
  fault_signal_ = signal;
  stop({thread_id(core, c.id), signal, ""});
}

void GdbServer::finish(const hw::ChipOutcome& outcome) {
  if (!attached_ || detached_ || !connection_ || connection_->closed()) return detach();
  if (waiting_) {
    using Result = hw::ChipOutcome::Result;
    if (!outcome.message.empty()) send_console(outcome.message + "\n");
    switch (outcome.result) {
      case Result::kExited:
        connection_->send(fmt::format("W{:02x}", outcome.exit_status & 0xff));
        break;
      case Result::kFault: connection_->send(fmt::format("X{:02x}", fault_signal_)); break;
      case Result::kCycleLimit: connection_->send(fmt::format("X{:02x}", kSigXcpu)); break;
      case Result::kDeadlock: connection_->send(fmt::format("X{:02x}", kSigAbrt)); break;
    }
  }
  detach();
}

void GdbServer::detach() {
  detached_ = true;
  breakpoints_.clear();
  watchpoints_.clear();
  step_.reset();
  connection_.reset();  // GDB sees the connection close, as after gdbserver's detach
  for (const Thread& t : threads_)
    if (t.core->debug() == this) t.core->set_debug(nullptr);
}

// ---- stopping and serving ----

void GdbServer::stop(const Stop& stop) {
  last_stop_ = stop;
  step_.reset();
  general_thread_ = continue_thread_ = 0;
  if (waiting_) {
    waiting_ = false;
    if (!connection_->send(stop_reply(stop))) {
      detach();  // GDB went away: the run goes on without it
      return;
    }
  }
  serve();
}

void GdbServer::serve() {
  for (;;) {
    const std::optional<std::string> packet = connection_->receive();
    if (!packet) {
      detach();
      return;
    }
    if (handle(*packet)) return;
    if (detached_) return;
  }
}

std::string GdbServer::stop_reply(const Stop& stop) const {
  return fmt::format("T{:02x}{}thread:{:x};", stop.signal, stop.reason, stop.thread);
}

void GdbServer::send_console(const std::string& text) { connection_->send("O" + to_hex(text)); }

bool GdbServer::handle(const std::string& packet) {
  auto reply = [this](std::string_view text) { connection_->send(text); };
  if (packet == "\x03") return false;  // already stopped
  const char kind = packet.empty() ? '\0' : packet[0];
  const std::string args = packet.empty() ? std::string() : packet.substr(1);
  switch (kind) {
    case '?': reply(stop_reply(last_stop_)); return false;
    case 'g': reply(read_registers(selected(general_thread_))); return false;
    case 'G': reply(write_registers(selected(general_thread_), args)); return false;
    case 'p': {
      const uint64_t n = parse_number(args);
      iss::Context* c = context_of(selected(general_thread_));
      const std::optional<uint32_t> v =
          c != nullptr && n < registers().size()
              ? read_register(*c, *thread(selected(general_thread_))->core,
                              static_cast<unsigned>(n))
              : std::nullopt;
      reply(v ? hex32(*v) : "E01");
      return false;
    }
    case 'P': {
      const size_t eq = args.find('=');
      const uint64_t n = eq == std::string::npos ? kBad : parse_number(args.substr(0, eq));
      const std::optional<uint32_t> v =
          eq == std::string::npos ? std::nullopt : parse_hex32_le(args.substr(eq + 1));
      iss::Context* c = context_of(selected(general_thread_));
      const bool ok = v && c != nullptr && n < registers().size() &&
                      write_register(*c, *thread(selected(general_thread_))->core,
                                     static_cast<unsigned>(n), *v);
      reply(ok ? "OK" : "E01");
      return false;
    }
    case 'm': reply(read_memory(args)); return false;
    case 'M': reply(write_memory(args)); return false;
    case 'H': {
      const std::optional<unsigned> id =
          args.size() >= 2 ? parse_thread(args.substr(1)) : std::nullopt;
      if (!id || (*id != 0 && thread(*id) == nullptr) || (args[0] != 'g' && args[0] != 'c')) {
        reply("E01");
        return false;
      }
      (args[0] == 'g' ? general_thread_ : continue_thread_) = *id;
      reply("OK");
      return false;
    }
    case 'T': {
      const std::optional<unsigned> id = parse_thread(args);
      reply(id && thread(*id) != nullptr ? "OK" : "E01");
      return false;
    }
    case 'Z':
    case 'z': reply(breakpoint(args, kind == 'Z')); return false;
    case 'c':
    case 's': return resume(packet);
    // Exactly "D" (or "D;PID") and "k": a packet that only starts with them is malformed, and
    // must not detach or kill.
    case 'D':
      if (packet != "D" && packet.rfind("D;", 0) != 0) {
        reply("E01");
        return false;
      }
      reply("OK");
      detach();
      return true;
    case 'k':
      if (packet != "k") {
        reply("E01");
        return false;
      }
      kill_();
      detach();
      return true;
    case 'v':
      if (packet == "vCont?") {
        reply("vCont;c;C;s;S");
        return false;
      }
      if (packet.rfind("vCont;", 0) == 0) return resume(packet);
      if (packet.rfind("vKill", 0) == 0) {
        reply("OK");
        kill_();
        detach();
        return true;
      }
      reply("");  // vMustReplyEmpty, vFile, vRun...: not supported
      return false;
    case 'q':
      if (packet.rfind("qSupported", 0) == 0) {
        reply(fmt::format(
            "PacketSize={:x};qXfer:features:read+;qXfer:threads:read+;swbreak+;hwbreak+;"
            "QStartNoAckMode+;vContSupported+",
            kMaxPacketBytes));
      } else if (packet.rfind("qXfer:features:read:target.xml:", 0) == 0) {
        reply(xfer_slice(target_xml(), std::string_view(packet).substr(31)));
      } else if (packet.rfind("qXfer:threads:read::", 0) == 0) {
        // A read from offset 0 starts a new listing: the names say which contexts are idle now.
        const std::string_view annex = std::string_view(packet).substr(20);
        if (annex.rfind("0,", 0) == 0) threads_xml_count_ = ~size_t{0};
        reply(xfer_slice(threads_xml(), annex));
      } else if (packet == "qfThreadInfo") {
        std::string list = "m";
        for (unsigned id = 1; id <= threads_.size(); ++id)
          list += fmt::format("{}{:x}", id == 1 ? "" : ",", id);
        reply(list);
      } else if (packet == "qsThreadInfo") {
        reply("l");
      } else if (packet == "qC") {
        reply(fmt::format("QC{:x}", last_stop_.thread));
      } else if (packet == "qAttached") {
        reply("1");  // GDB detaches on quit: the run goes on to its end
      } else if (packet.rfind("qThreadExtraInfo,", 0) == 0) {
        const std::optional<unsigned> id = parse_thread(std::string_view(packet).substr(17));
        const Thread* t = id ? thread(*id) : nullptr;
        if (t == nullptr) {
          reply("E01");
        } else {
          const iss::Context& c = t->core->context(t->context);
          reply(to_hex(fmt::format("{} {}{}", t->core->tile_label(), context_label(t->context),
                                   c.state == iss::ContextState::kRunning ? "" : ", idle")));
        }
      } else if (packet.rfind("qRcmd,", 0) == 0) {
        const std::optional<std::string> command = from_hex(std::string_view(packet).substr(6));
        if (!command) {
          reply("E01");
        } else {
          send_console(monitor(*command));
          reply("OK");
        }
      } else if (packet.rfind("qSymbol", 0) == 0) {
        reply("OK");
      } else {
        reply("");
      }
      return false;
    case 'Q':
      if (packet == "QStartNoAckMode") {
        reply("OK");
        connection_->set_no_ack();
      } else {
        reply("");
      }
      return false;
    default: reply(""); return false;  // unsupported: GDB falls back or says so
  }
}

bool GdbServer::resume(const std::string& packet) {
  std::optional<unsigned> step_thread;
  if (packet[0] == 's') {
    step_thread = selected(continue_thread_);
  } else if (packet[0] == 'v') {  // vCont;action[:thread];...
    // Every action is c, C sig, s or S sig: anything else is refused, not read as "continue".
    for (size_t at = 5; at < packet.size();) {
      const size_t end = std::min(packet.find(';', at + 1), packet.size());
      const std::string action = packet.substr(at + 1, end - at - 1);
      const std::string verb = action.substr(0, action.find(':'));
      const bool known = verb == "c" || verb == "s" ||
                         ((verb[0] == 'C' || verb[0] == 'S') && verb.size() == 3 &&
                          std::isxdigit(static_cast<unsigned char>(verb[1])) &&
                          std::isxdigit(static_cast<unsigned char>(verb[2])));
      if (packet[at] != ';' || action.empty() || !known) {
        connection_->send("E01");
        return false;
      }
      at = end;
    }
    size_t at = 5;
    while (at < packet.size() && packet[at] == ';') {
      const size_t end = std::min(packet.find(';', at + 1), packet.size());
      const std::string action = packet.substr(at + 1, end - at - 1);
      at = end;
      if (action.empty() || (action[0] != 's' && action[0] != 'S')) continue;
      const size_t colon = action.find(':');
      const std::optional<unsigned> id = colon == std::string::npos
                                             ? std::optional<unsigned>(0)
                                             : parse_thread(action.substr(colon + 1));
      if (!id || (*id != 0 && thread(*id) == nullptr)) {
        connection_->send("E01");
        return false;
      }
      step_thread = selected(*id);
    }
  } else if (packet.size() > 1) {  // c ADDR: continue from ADDR
    const uint64_t address = parse_number(std::string_view(packet).substr(1));
    iss::Context* c = context_of(selected(continue_thread_));
    if (address > 0xffffffffu || c == nullptr) {
      connection_->send("E01");
      return false;
    }
    c->pc = static_cast<uint32_t>(address);
  }
  if (step_thread) {
    const iss::Context* c = context_of(*step_thread);
    step_ = Step{*step_thread, c->pc, c->instret};
  }
  waiting_ = true;
  return true;
}

// ---- registers and memory ----

// An idle worker (never started, or exited) shows at the worker entry where its next run
// starts (CSR ipu.wentry, or before crt0 sets it the image's __ipu_worker_entry), so GDB names
// a function there instead of "0x00000000 in ?? ()"; its thread name says it is idle.
uint32_t GdbServer::shown_pc(const iss::Context& c, const iss::Core& core) const {
  if (c.id == 0 || c.state == iss::ContextState::kRunning) return c.pc;
  const uint32_t entry = core.worker_entry() != 0 ? core.worker_entry() : worker_entry_;
  return entry != 0 ? entry : c.pc;
}

std::optional<uint32_t> GdbServer::read_register(iss::Context& c, iss::Core& core,
                                                 unsigned index) const {
  const RegisterSpec& r = registers().at(index);
  switch (r.kind) {
    case RegisterSpec::Kind::kX: return c.x[r.index];
    case RegisterSpec::Kind::kPc: return shown_pc(c, core);
    case RegisterSpec::Kind::kF: return c.f[r.index];
    case RegisterSpec::Kind::kCsr: {
      uint32_t v = 0;
      if (!core.debug_csr(c, r.index, v)) return std::nullopt;
      return v;
    }
  }
  return std::nullopt;
}

bool GdbServer::write_register(iss::Context& c, iss::Core& core, unsigned index,
                               uint32_t value) const {
  const RegisterSpec& r = registers().at(index);
  switch (r.kind) {
    case RegisterSpec::Kind::kX:
      if (r.index != 0) c.x[r.index] = value;
      return true;
    case RegisterSpec::Kind::kPc: c.pc = value; return true;
    case RegisterSpec::Kind::kF: c.f[r.index] = value; return true;
    case RegisterSpec::Kind::kCsr: return core.debug_set_csr(c, r.index, value);
  }
  return false;
}

std::string GdbServer::read_registers(unsigned id) const {
  iss::Context* c = context_of(id);
  if (c == nullptr) return "E01";
  std::string out;
  for (unsigned i = 0; i < registers().size(); ++i) {
    const std::optional<uint32_t> v = read_register(*c, *thread(id)->core, i);
    out += v ? hex32(*v) : "xxxxxxxx";  // unavailable
  }
  return out;
}

// All or nothing: every value must parse and every register it changes must be writable before
// any is written.
std::string GdbServer::write_registers(unsigned id, std::string_view hex) const {
  iss::Context* c = context_of(id);
  if (c == nullptr || hex.size() != 8 * registers().size()) return "E01";
  iss::Core& core = *thread(id)->core;
  std::vector<std::pair<unsigned, uint32_t>> changes;
  for (unsigned i = 0; i < registers().size(); ++i) {
    const std::optional<uint32_t> v = parse_hex32_le(hex.substr(8 * i, 8));
    if (!v) return "E01";
    if (read_register(*c, core, i) == v) continue;  // unchanged, read-only ones included
    if (!registers()[i].writable) return "E01";
    changes.emplace_back(i, *v);
  }
  for (const auto& [i, v] : changes) write_register(*c, core, i, v);
  return "OK";
}

std::string GdbServer::read_memory(const std::string& args) const {
  const size_t comma = args.find(',');
  const uint64_t address = comma == std::string::npos ? kBad : parse_number(args.substr(0, comma));
  const uint64_t length = comma == std::string::npos ? kBad : parse_number(args.substr(comma + 1));
  const Thread* t = thread(selected(general_thread_));
  if (t == nullptr || address > 0xffffffffu || length > 0x10000) return "E01";
  // As much as lies in SRAM from `address` (GDB reads past the end of the stack, for one).
  const uint64_t end =
      std::min<uint64_t>(address + length, uint64_t{t->core->sram_base()} + t->core->sram_bytes());
  if (address < t->core->sram_base() || address >= end) return "E14";  // EFAULT
  std::string bytes(end - address, '\0');
  t->core->debug_read(static_cast<uint32_t>(address), reinterpret_cast<uint8_t*>(bytes.data()),
                      static_cast<uint32_t>(bytes.size()));
  return to_hex(bytes);
}

std::string GdbServer::write_memory(const std::string& args) {
  const size_t comma = args.find(','), colon = args.find(':');
  if (comma == std::string::npos || colon == std::string::npos || colon < comma) return "E01";
  const uint64_t address = parse_number(args.substr(0, comma));
  const uint64_t length = parse_number(args.substr(comma + 1, colon - comma - 1));
  const std::optional<std::string> bytes = from_hex(std::string_view(args).substr(colon + 1));
  const Thread* t = thread(selected(general_thread_));
  if (!bytes || bytes->size() != length || t == nullptr || address > 0xffffffffu) return "E01";
  return t->core->debug_write(static_cast<uint32_t>(address),
                              reinterpret_cast<const uint8_t*>(bytes->data()),
                              static_cast<uint32_t>(bytes->size()))
             ? "OK"
             : "E14";
}

std::string GdbServer::breakpoint(const std::string& args, bool insert) {
  // type,address,kind (kind: bytes of a breakpoint, or of a watched range)
  const size_t first = args.find(','), second = args.find(',', first + 1);
  if (first != 1 || second == std::string::npos) return "E01";
  const uint64_t address = parse_number(args.substr(2, second - 2));
  const uint64_t size = parse_number(args.substr(second + 1));
  if (address > 0xffffffffu || size == 0 || size > 0x10000) return "E01";
  const uint32_t a = static_cast<uint32_t>(address);
  switch (args[0]) {
    case '0':
    case '1':
      if (insert)
        breakpoints_[a] = args[0] == '1';
      else
        breakpoints_.erase(a);
      return "OK";
    case '2':
    case '3':
    case '4': {
      const WatchKind kind = static_cast<WatchKind>(args[0] - '0');
      const auto same = [&](const Watchpoint& w) {
        return w.address == a && w.bytes == size && w.kind == kind;
      };
      if (insert) {
        watchpoints_.push_back({a, static_cast<uint32_t>(size), kind});
      } else {
        const auto it = std::find_if(watchpoints_.begin(), watchpoints_.end(), same);
        if (it != watchpoints_.end()) watchpoints_.erase(it);
      }
      return "OK";
    }
    default: return "";  // unsupported type
  }
}

const std::string& GdbServer::threads_xml() const {
  if (threads_xml_count_ == threads_.size()) return threads_xml_;
  std::string out = "<?xml version=\"1.0\"?>\n<threads>\n";
  for (unsigned id = 1; id <= threads_.size(); ++id) {
    const Thread& t = threads_[id - 1];
    const bool idle =
        t.context != 0 && t.core->context(t.context).state != iss::ContextState::kRunning;
    out += fmt::format("<thread id=\"{:x}\" name=\"{} {}{}\"/>\n", id, t.core->tile_label(),
                       context_label(t.context), idle ? " (idle)" : "");
  }
  threads_xml_ = out + "</threads>\n";
  threads_xml_count_ = threads_.size();
  return threads_xml_;
}

// ---- monitor commands ----

std::string GdbServer::monitor(const std::string& command) {
  const Thread* t = thread(selected(general_thread_));
  const std::string cmd = command.substr(0, command.find(' '));
  const std::string arg = command.find(' ') == std::string::npos
                              ? std::string()
                              : command.substr(command.find(' ') + 1);
  if (cmd == "help" || cmd.empty()) {
    return "monitor commands of ipu-sim:\n"
           "  cycle         the selected thread's cycle, its tile's and the platform's latest\n"
           "  tile [N]      the contexts of the selected thread's tile (or machine tile N)\n"
           "  phase         where each tile is in its BSP superstep: compute, exchange, sync\n"
           "  watch-tile N  watchpoints watch machine tile N's memory only ('all': every tile's)\n"
           "  kill          end the run and the simulator\n";
  }
  if (cmd == "cycle") {
    // A tile mid-burst has issued past its last recorded cycle count.
    const auto now = [](const iss::Core& core) {
      uint64_t cycle = core.cycles();
      for (unsigned i = 0; i <= core.worker_contexts(); ++i)
        cycle = std::max(cycle, core.context(i).issue_cycle + 1);
      return cycle;
    };
    uint64_t low = ~uint64_t{0}, high = 0;
    for (const auto& [core, first] : first_thread_) {
      low = std::min(low, now(*core));
      high = std::max(high, now(*core));
    }
    const iss::Context& c = t->core->context(t->context);
    return fmt::format(
        "{} {}: issues in cycle {}\n{}: {} cycles simulated\nevery tile: {} to {} cycles "
        "simulated\n",
        t->core->tile_label(), context_label(t->context), c.issue_cycle, t->core->tile_label(),
        now(*t->core), low, high);
  }
  if (cmd == "tile") {
    const iss::Core* core = t->core;
    if (!arg.empty()) {
      const uint64_t n = parse_number(arg, 10);
      core = nullptr;
      for (const auto& [candidate, first] : first_thread_)
        if (candidate->machine_tile_id() == n) core = candidate;
      if (core == nullptr) return fmt::format("no tile {} has a program\n", arg);
    }
    std::string out = fmt::format("{}: {} cycles simulated\n", core->tile_label(), core->cycles());
    for (unsigned i = 0; i <= core->worker_contexts(); ++i) {
      const iss::Context& c = core->context(i);
      // An idle worker is in no function: say so, and how often it ran.
      const bool running = c.state == iss::ContextState::kRunning;
      out += fmt::format("  thread {:>5}  {:<10} {:<7} {} instructions  {}\n", thread_id(*core, i),
                         context_label(i), running ? "running" : "idle", c.instret,
                         running || i == 0 ? core->where(c.pc)
                         : c.runs == 0     ? std::string("never started")
                                           : fmt::format("not running (started {} times)", c.runs));
    }
    return out;
  }
  if (cmd == "phase") {
    std::string out;
    for (const Thread& th : threads_) {
      if (th.context != 0) continue;
      const iss::Core& core = *th.core;
      std::string phase;
      switch (core.stop_reason()) {
        case iss::StopReason::kSync:
          phase = fmt::format("waiting at a sync (group 0x{:x}) since cycle {}", core.sync_group(),
                              core.blocked_at());
          break;
        case iss::StopReason::kExchangeEnd:
          phase = fmt::format("at the end of its exchange phase (cycle {})", core.blocked_at());
          break;
        case iss::StopReason::kExited: phase = "exited"; break;
        case iss::StopReason::kFault: phase = "stopped by a fault"; break;
        default:
          phase = fmt::format("{} phase", core.in_exchange_phase() ? "exchange" : "compute");
          break;
      }
      out += fmt::format("{}: {}\n", core.tile_label(), phase);
    }
    return out;
  }
  if (cmd == "watch-tile") {
    if (arg == "all") {
      watch_tile_.reset();
      return "watchpoints watch every tile's memory\n";
    }
    const uint64_t n = parse_number(arg, 10);
    for (const auto& [core, first] : first_thread_) {
      if (core->machine_tile_id() != n) continue;
      watch_tile_ = core->machine_tile_id();
      return fmt::format("watchpoints watch {}'s memory only\n", core->tile_label());
    }
    return fmt::format("no tile '{}' has a program (monitor watch-tile N|all)\n", arg);
  }
  if (cmd == "kill") {
    kill_();
    return "the kill action returned: the run goes on\n";
  }
  return fmt::format("unknown monitor command '{}' (monitor help lists them)\n", cmd);
}

}  // namespace ipu::debug
