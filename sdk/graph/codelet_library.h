// The SDK's codelet library (firmware/codelets): declares every library codelet, with its
// fields, in a graph. Fields are listed in each codelet's source file.
#pragma once

#include "sdk/graph/graph.h"

namespace ipu::sdk {

// add_f32, add_f32_workers (six-worker), scale_add_f32, sum_f32, sum_rows_f32, sgd_f32,
// record_f32, matmul_f16_amp.
void add_codelet_library(Graph& graph);

}  // namespace ipu::sdk
