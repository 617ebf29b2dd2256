// Names each superstep of a device's runs for the program step that made it, as PopVision does:
// every tile runs the same control steps (firmware/include/ipu_program.h) with control flow
// fixed at compile time, so the host follows the steps through the runs (the dispatch, then the
// program's steps, repeats and calls) and pairs the syncs they make, in order, with each chip's
// barriers. No instruction is added to the tiles: the cycle counts stay what they were.
#pragma once

#include <vector>

#include "hw/sync/sync_network.h"
#include "report/run_statistics.h"
#include "sdk/compiler/compiler.h"

namespace ipu::sdk {

// `runs`: the programs the device ran (indices into exe.programs), in order. labels[i] names
// barriers[i]. A chip whose barriers stop following the steps (a sync of another group: the
// image's firmware and its control steps disagree) has the rest of its barriers unlabelled.
std::vector<report::SuperstepLabel> label_supersteps(
    const Executable& exe, const std::vector<unsigned>& runs,
    const std::vector<hw::BarrierRecord>& barriers);

}  // namespace ipu::sdk
