// A GDB remote-protocol server for the tiles of a platform (docs/debugging.md): every context of
// every tile with a program is a GDB thread ("tile 3 worker 2", "chip 1 tile 3 supervisor"),
// with the registers of RV32IMF and the machine CSRs, the tile's SRAM as its memory,
// breakpoints, watchpoints, single steps, Ctrl-C and `monitor` commands.
//
// It is a iss::DebugHook: attached to the cores, it runs on the simulation thread inside the
// interpreter and blocks there while GDB has the platform stopped, so nothing else moves. The
// platform must run every compute burst on that thread (PlatformOptions::debugger does this).
// Stopping, inspecting and continuing change no result and no cycle count.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "hw/common/run_report.h"
#include "iss/core.h"

namespace ipu::debug {

class Listener;
class RemoteConnection;

// The process's exit status after GDB's kill (ipu-sim and SDK programs alike).
inline constexpr int kKilledExitStatus = 8;

class GdbServer final : public iss::DebugHook {
 public:
  // Listens on localhost:port (0: any free port) and says so on stderr, after `program: ` when
  // `program` is given. Throws std::runtime_error naming the port when it cannot listen.
  explicit GdbServer(uint16_t port, std::string program = "");
  ~GdbServer() override;
  uint16_t port() const;

  // The tiles whose contexts are GDB's threads, in thread order (before the run). The server
  // installs itself as each core's debug hook.
  void add_core(iss::Core& core);
  // What GDB's kill and `monitor kill` do. By default: flush stdout, say so on stderr and end
  // the process with kKilledExitStatus (the simulation is mid-instruction: nothing to unwind).
  void set_kill(std::function<void()> kill) { kill_ = std::move(kill); }
  // The image's worker entry (crt0's __ipu_worker_entry): where idle workers show until the
  // program sets CSR ipu.wentry (0: none, they show their pc).
  void set_worker_entry(uint32_t pc) { worker_entry_ = pc; }
  // The same from an image's symbol table (name -> address), when it has the symbol.
  void set_worker_entry_from(const std::map<std::string, uint32_t>& symbols) {
    if (const auto entry = symbols.find("__ipu_worker_entry"); entry != symbols.end())
      worker_entry_ = entry->second;
  }

  // After the run: tells a waiting GDB how it ended (exited with its status, or terminated by
  // the signal of its fault, SIGXCPU at the cycle limit, SIGABRT in a deadlock), shows GDB the
  // outcome's report, and closes the connection.
  void finish(const hw::ChipOutcome& outcome);

  // iss::DebugHook: the first call waits for GDB to connect and stops there.
  void before_issue(iss::Core& core, iss::Context& c) override;
  void on_access(iss::Core& core, const iss::Context& c, uint32_t address, uint32_t bytes,
                 bool write) override;
  void on_fault(iss::Core& core, iss::Context& c) override;

  // The target description GDB reads (qXfer:features:read:target.xml), and the number of
  // registers in it, in `g` packet order.
  static const std::string& target_xml();
  static unsigned register_count();

 private:
  struct Thread {
    iss::Core* core;
    unsigned context;
  };
  struct Stop {
    unsigned thread = 1;  // GDB thread id (1-based)
    int signal = 5;       // GDB's signal numbers: 5 SIGTRAP, 2 SIGINT, 11 SIGSEGV, ...
    std::string reason;   // "swbreak:;", "watch:1000;", ... before "thread:"
  };
  enum class WatchKind { kWrite = 2, kRead = 3, kAccess = 4 };
  struct Watchpoint {
    uint32_t address, bytes;
    WatchKind kind;
  };

  unsigned thread_id(const iss::Core& core, unsigned context) const;
  const Thread* thread(unsigned id) const;
  iss::Context* context_of(unsigned id) const;
  unsigned selected(unsigned id) const;  // 0 / -1 (any, all) mean the last stopped thread
  // Reports `stop` to GDB (if it waits for one) and serves packets until GDB resumes the run.
  void stop(const Stop& stop);
  void serve();
  void detach();
  // One packet; true when it resumes the run.
  bool handle(const std::string& packet);
  std::string stop_reply(const Stop& stop) const;
  std::string read_registers(unsigned id) const;
  std::string write_registers(unsigned id, std::string_view hex) const;
  std::optional<uint32_t> read_register(iss::Context& c, iss::Core& core, unsigned index) const;
  // The pc GDB is shown: an idle worker's is the worker entry (its next run's start).
  uint32_t shown_pc(const iss::Context& c, const iss::Core& core) const;
  bool write_register(iss::Context& c, iss::Core& core, unsigned index, uint32_t value) const;
  std::string read_memory(const std::string& args) const;
  std::string write_memory(const std::string& args);
  std::string breakpoint(const std::string& args, bool insert);
  std::string monitor(const std::string& command);
  // The thread list GDB reads in chunks (qXfer:threads:read), built once for each set of
  // threads: a chunk at a time rebuilt it whole, quadratic on a big machine (an M2000's 41,216
  // threads took 4.4 s of server time to hand over).
  const std::string& threads_xml() const;
  bool resume(const std::string& packet);
  void send_console(const std::string& text);

  std::unique_ptr<Listener> listener_;
  std::unique_ptr<RemoteConnection> connection_;
  std::vector<Thread> threads_;
  mutable std::string threads_xml_;  // threads_xml() for threads_xml_count_ threads
  mutable size_t threads_xml_count_ = ~size_t{0};
  std::unordered_map<const iss::Core*, unsigned> first_thread_;  // core -> its supervisor's id
  std::string program_;  // prefixes the server's own messages on stderr
  uint32_t worker_entry_ = 0;
  std::function<void()> kill_;
  int fault_signal_ = 11;  // of the last fault (SIGSEGV until one comes)
  bool attached_ = false, detached_ = false;
  bool waiting_ = false;  // GDB resumed the run and waits for a stop reply
  Stop last_stop_;
  unsigned general_thread_ = 0, continue_thread_ = 0;  // Hg, Hc (0: the stopped one)
  std::map<uint32_t, bool> breakpoints_;               // address -> hardware (Z1)
  std::vector<Watchpoint> watchpoints_;
  // Each tile has its own memory at the same addresses, but GDB knows one address space and
  // keeps one old value per watchpoint: `monitor watch-tile N` scopes watchpoints to one tile.
  std::optional<unsigned> watch_tile_;
  struct Step {
    unsigned thread;
    uint32_t pc;
    uint64_t instret;
  };
  std::optional<Step> step_;
  unsigned interrupt_poll_ = 0;
};

}  // namespace ipu::debug
