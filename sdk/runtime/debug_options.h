// How a run is looked into, whoever starts it (ipu-sim, the SDK's Device, the examples): a GDB
// server, and blocks computed by their verilated RTL to check the C++ models against. Declared
// once, here, as the run options are (hw/machine/run_options.h): ipu-sim and the examples bind
// their options from this list and sdk::DeviceOptions embeds the struct.
#pragma once

#include <optional>
#include <stdexcept>
#include <string>

#include "base/parameters.h"
#include "tlm/rtl_selection.h"

namespace ipu::sdk {

struct DebugOptions {
  // A GDB server on localhost:gdb_port (0: any free port, Device::gdb_port() says which) that
  // stops the tiles before their first instruction until gdb-multiarch attaches
  // (docs/debugging.md); none by default.
  std::optional<unsigned> gdb_port;
  tlm_rtl::RtlSelection rtl;  // blocks computed by their verilated RTL (docs/rtl.md)
  std::string rtl_trace;      // FST waveforms of those blocks ("": none)
};

template <typename C, typename Visitor, base::if_config_t<C, DebugOptions> = 0>
void visit_parameters(C& o, Visitor&& v) {
  using base::Parameter;
  v(Parameter{"gdb", "port",
              "wait for GDB (gdb-multiarch) on localhost:PORT and start stopped; every context of "
              "every tile is a thread (0: any free port, printed on stderr)",
              0, 65535},
    o.gdb_port);
  v(Parameter{"rtl", "blocks",
              "compute these blocks with their verilated RTL instead of the C++ models: a list of "
              "prng, sr, amp, sync, xmux, or all (docs/rtl.md)"},
    o.rtl);
  v(Parameter{"rtl-trace", "file",
              "write an FST waveform per --rtl block: FILE.fst gives FILE.<block>.fst"},
    o.rtl_trace);
}

// Throws std::invalid_argument naming the option.
inline void validate(const DebugOptions& o) {
  base::check_ranges(o, "--");
  if (!o.rtl_trace.empty() && !o.rtl.any())
    throw std::invalid_argument("--rtl-trace needs --rtl: it traces the RTL blocks in use");
}

}  // namespace ipu::sdk
